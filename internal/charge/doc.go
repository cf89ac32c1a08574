// Package charge is the charge domain above the idempotency engine: the one
// door both entry points call (Service.Charge, with what they received),
// request parsing (ParseRequest, strict), the typed outcomes each entry
// point maps in its own table, the acquirer protocol of DESIGN §4
// (claim, authorize within the lease, complete or release; after a
// take-over, look up first), the reconciler's path (Service.Reconcile) and
// the Ledger it keeps the charges in (a row written before each
// completion, read by Service.Get). It knows nothing of HTTP, SQS or DynamoDB: the
// stored answer is rendered by the Renderer it is given, and the ledger's
// rows are laid out by its implementation (dynamo on DynamoDB,
// chargetest in memory).
package charge
