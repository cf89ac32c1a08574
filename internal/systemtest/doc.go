// Package systemtest holds the system tests: the HTTP contract, recovery,
// the SQS path, storms and the stack's benchmarks, each against the local
// stack (internal/localapi, used as a library) on DynamoDB Local, the SQS
// emulator and the Lambda RIE. Its only code, yardstick (a handler and
// its bootstrap), is the floor the CPU benchmark measures the charge
// function against.
package systemtest
