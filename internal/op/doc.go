// Package op is the layer every call that moves money runs through, above
// the idempotency engine (idem) and below the operations (charge, refund):
// what a reconciliation did (Reconciled), the frame of an operator's
// settlement (RunSettlement) and what its record reads back as
// (Settlement), and the registry of the operations (Registry), through
// which the triggers reach an operation's service by its records' key
// and never by a branch on its name. It knows no HTTP, no SQS and no AWS.
package op
