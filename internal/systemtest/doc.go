// Package systemtest holds the system tests: the HTTP contract, recovery,
// the SQS path, storms and the stack's benchmarks, each against the local
// stack (internal/localapi, used as a library) on DynamoDB Local, the SQS
// emulator and the Lambda RIE. It has no code of its own.
package systemtest
