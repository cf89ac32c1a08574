package op

import "github.com/idempotent-payments/idempay/internal/obs"

// Reconciled is what a reconciliation did.
type Reconciled int

const (
	// NothingToDo: the record is gone, completed, or its lease is live or
	// ended too recently (someone else is on it, or may still be).
	NothingToDo Reconciled = iota
	// ReconciledCompleted: the acquirer had the authorization; it is stored.
	ReconciledCompleted
	// ReconciledReleased: the acquirer never saw the request; the key is
	// free and the client's next retry executes.
	ReconciledReleased
	// ReconciledHeld: the record was held for an operator. Nothing was
	// asked of the acquirer; only Settle settles it.
	ReconciledHeld
	// ReconciledMismatch: the acquirer's answer disagreed with the request
	// (acquirer.ErrMismatch) and the record is now held, as a charge's
	// Mismatch outcome holds it; if the hold could not be written, Reconcile
	// returns it with an error, the record still in flight.
	ReconciledMismatch
)

// Name is r's name in the observability vocabulary. A mismatch is named as
// a charge's or a refund's mismatch is (obs.OutcomeAcquirerMismatch), so one alarm counts
// both.
func (r Reconciled) Name() obs.Outcome {
	return [...]obs.Outcome{obs.OutcomeReconciledNothing, obs.OutcomeReconciledComplete, obs.OutcomeReconciledReleased,
		obs.OutcomeReconciledHeld, obs.OutcomeAcquirerMismatch}[r]
}

// String is Name, as text.
func (r Reconciled) String() string { return string(r.Name()) }
