package op

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Early is how a call ends before its operation's own answer: the
// outcome, why (a refused key's or account's reason) and when to retry.
// Each operation copies it into its own result.
type Early struct {
	Outcome             Outcome
	Reason              string
	RetryAfter, WaitOut time.Duration
}

// Lookups are the lookups every operation answers the same way: by a
// row's id, and by the client's idempotency key. RetryAfter is the delay
// of an Unavailable, HeldRetryAfter a held record's; Logger says what
// failed.
type Lookups struct {
	Guard                      *idem.Guard
	RetryAfter, HeldRetryAfter time.Duration
	Logger                     *slog.Logger
}

// FindKey finds account's live record of key for the operation: the
// record when it completed, else how the lookup ends: AccountInvalid,
// KeyMissing or KeyInvalid as the door refuses them; NotFound when the
// key has no live record (none, expired, or another account's: keys are
// scoped per account); InFlight as a request would answer; Held for a
// record held for an operator; Unavailable when the read failed.
func (l Lookups) FindKey(ctx context.Context, operation, account, key string) (*idem.Record, *Early) {
	if err := idem.ValidateAccount(account); err != nil {
		return nil, &Early{Outcome: AccountInvalid, Reason: err.Error()}
	}
	rec, err := l.Guard.Find(ctx, idem.Scope{Operation: operation, Account: account, Key: key})
	var inFlight *idem.InFlightError
	switch {
	case err == nil:
		return rec, nil
	case errors.Is(err, idem.ErrKeyMissing):
		return nil, &Early{Outcome: KeyMissing}
	case errors.Is(err, idem.ErrKeyInvalid):
		return nil, &Early{Outcome: KeyInvalid, Reason: err.Error()}
	case errors.Is(err, idem.ErrNotFound):
		return nil, &Early{Outcome: NotFound}
	case errors.As(err, &inFlight):
		return nil, &Early{Outcome: InFlight, RetryAfter: inFlight.RetryAfter, WaitOut: max(inFlight.WaitOut, inFlight.RetryAfter)}
	case errors.Is(err, idem.ErrHeld):
		return nil, &Early{Outcome: Held, RetryAfter: l.HeldRetryAfter}
	}
	l.Logger.ErrorContext(ctx, operation+" lookup by key failed", "error", err)
	return nil, &Early{Outcome: Unavailable, RetryAfter: l.RetryAfter}
}

// RowRead is a read of one row of an operation, as a lookup by id finds
// it: the row's account, and the read's error (none: the operation's
// "no such row", unreadable its "row does not decode").
type RowRead struct {
	Account               string
	Err, None, Unreadable error
}

// Answer is how a lookup of account's row by id ends, nil when it is
// Found: NotFound for no row, an unreadable one (logged) or another
// account's (the three are indistinguishable to the caller); Unavailable
// when the store failed.
func (l Lookups) Answer(ctx context.Context, operation, account string, r RowRead) *Early {
	switch {
	case errors.Is(r.Err, r.None):
		return &Early{Outcome: NotFound}
	case errors.Is(r.Err, r.Unreadable):
		l.Logger.ErrorContext(ctx, "get "+operation+": unreadable row", "error", r.Err)
		return &Early{Outcome: NotFound}
	case r.Err != nil:
		l.Logger.ErrorContext(ctx, "get "+operation+" failed", "error", r.Err)
		return &Early{Outcome: Unavailable, RetryAfter: l.RetryAfter}
	case r.Account != account:
		return &Early{Outcome: NotFound}
	}
	return nil
}

// ByKey is the frame of a lookup by the client's idempotency key: the
// key's record (FindKey; a call that ends there is early's result), then
// what row answers of the completed record, with the record named in
// ctx's log lines.
func ByKey[Res any](ctx context.Context, l Lookups, operation, account, key string, early func(Early) Res,
	row func(ctx context.Context, rec *idem.Record) Res) Res {
	rec, e := l.FindKey(ctx, operation, account, key)
	if e != nil {
		return early(*e)
	}
	return row(obs.WithAttrs(ctx, slog.String("record", idem.Ref(rec.PK))), rec)
}
