package capture

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// Lapsed is an authorization whose expiry has passed while it was listed
// open: its charge, the authorization's amount and its expiry, as its
// ledger row states them.
type Lapsed struct {
	ChargeID   string
	Authorized int64
	ExpiresAt  time.Time
}

// Authorizations list the authorizations by expiry until their balance
// is seen closed: the charges' ledger's index of authorization rows
// (dynamo.Ledger on the table; chargetest.Ledger in memory). Listing is
// no part of what a row says: unlisting one changes nothing else.
type Authorizations interface {
	// Lapsed lists the listed authorizations whose expiry is at or before
	// before. An entry that cannot be read is yielded with its error and
	// the listing goes on; an error reading the listing ends it.
	Lapsed(ctx context.Context, before time.Time) iter.Seq2[Lapsed, error]
	// Unlist takes chargeID's authorization off the listing: its balance
	// is closed. A non-zero expired says it closed at its expiry
	// (ClosedExpired), seen at that time: the row is then marked so
	// (charge.Charge.Expired), once, which makes its charge.expired event.
	// Again, or for a row never listed, it changes nothing.
	Unlist(ctx context.Context, chargeID string, expired time.Time) error
}

// Expiry is the sweeper's closing of lapsed authorizations: each one's
// balance is closed ClosedExpired (Balances.Expire), which releases what
// remains capturable, and then unlisted, marked expired when its balance
// closed so, by this run or an earlier one that stopped before the unlist
// (Expire says how a balance found closed already closed); one with a capture or a void in
// flight is left listed, for that intent's outcome to decide first, and
// tried again on a later run. A capture refused at the door as expired
// (its row's expiry passed) never waits for this: the run only makes the
// balance say so.
type Expiry struct {
	Authorizations Authorizations
	Balances       Balances
	// StopMargin is kept back from ctx's deadline: the run stops when
	// less than it is left, incomplete (DefaultStopMargin when 0).
	StopMargin time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultStopMargin is the StopMargin of an Expiry that sets none.
const DefaultStopMargin = 2 * time.Second

// ExpiryReport is what one run of the Expiry did.
type ExpiryReport struct {
	// Closed counts the lapsed authorizations closed and unlisted (or
	// found closed already, by a void or a final capture, and unlisted).
	Closed int `json:"closed"`
	// Expired counts those of Closed that this run closed at their
	// expiry (the others a void, a final capture or an earlier run had
	// closed): authorizations that lapsed with something uncaptured, the
	// lost sales.
	Expired int `json:"expired"`
	// Waiting counts those left listed: an intent of theirs in flight.
	Waiting int `json:"waiting"`
	// Complete: the run listed every lapsed authorization; false when it
	// stopped at its deadline (StopMargin), leaving the rest to the next.
	Complete bool `json:"complete"`
}

// Run closes every authorization listed as lapsed now, until less than
// StopMargin is left before ctx's deadline: stopping there is no error,
// only an incomplete run. The errors of the entries it could not close
// are joined; it goes on past them.
func (x Expiry) Run(ctx context.Context) (ExpiryReport, error) {
	now, margin := time.Now, x.StopMargin
	if x.Now != nil {
		now = x.Now
	}
	if margin <= 0 {
		margin = DefaultStopMargin
	}
	deadline, bounded := ctx.Deadline()
	var r ExpiryReport
	var errs []error
	for l, err := range x.Authorizations.Lapsed(ctx, now()) {
		if bounded && time.Until(deadline) < margin || ctx.Err() != nil {
			return r, errors.Join(errs...)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var inFlight *InFlightError
		by, closed, err := x.Balances.Expire(ctx, l.ChargeID, l.Authorized)
		switch {
		case errors.As(err, &inFlight):
			r.Waiting++
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("expire %s: %w", l.ChargeID, err))
			continue
		}
		var expired time.Time
		if by == ClosedExpired {
			expired = now()
		}
		if err := x.Authorizations.Unlist(ctx, l.ChargeID, expired); err != nil {
			errs = append(errs, fmt.Errorf("unlist %s: %w", l.ChargeID, err))
			continue
		}
		r.Closed++
		if closed {
			r.Expired++
		}
	}
	r.Complete = ctx.Err() == nil
	return r, errors.Join(errs...)
}
