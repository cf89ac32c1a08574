// Package charge is the charge domain above the idempotency engine: the one
// door both entry points call (Service.Charge, with what they received),
// request parsing (ParseRequest, strict), the typed outcomes each entry
// point maps in its own table, the acquirer protocol of DESIGN §4
// (claim, authorize within the lease, complete or release; after a
// take-over, look up first), the reconciler's path (Service.Reconcile) and
// the ledger row a completion writes. It knows nothing of HTTP or SQS: the
// stored answer is rendered by the Answer it is given.
package charge
