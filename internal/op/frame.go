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

// Frame is what every operation's calls run in alike: its door's claim
// (Open, Claim); an owner's attempt (Run) with its release (Release), the
// hold for an operator (Hold), an unknown outcome's abandon (Abandon) and
// the completion (Complete); and its lookups by a row's id and by the
// client's idempotency key (Answer, FindKey, ByKey). RetryAfter is the
// delay of an Unavailable or a Pending, HeldRetryAfter a held record's;
// AcquirerTimeout caps one acquirer call, and StoreReserve is kept back
// from the invocation's deadline to store what it answered (Send).
// Logger says what failed; Tracer makes the completion's span (none when
// nil).
type Frame struct {
	Guard                         *idem.Guard
	RetryAfter, HeldRetryAfter    time.Duration
	AcquirerTimeout, StoreReserve time.Duration
	Logger                        *slog.Logger
	Tracer                        Tracer
}

// FindKey finds account's live record of key for the operation: the
// record when it completed, else how the lookup ends: AccountInvalid,
// KeyMissing or KeyInvalid as the door refuses them; NotFound when the
// key has no live record (none, expired, or another account's: keys are
// scoped per account); InFlight as a request would answer; Held for a
// record held for an operator; Unavailable when the read failed.
func (f Frame) FindKey(ctx context.Context, operation, account, key string) (*idem.Record, *Early) {
	if err := idem.ValidateAccount(account); err != nil {
		return nil, &Early{Outcome: AccountInvalid, Reason: err.Error()}
	}
	rec, err := f.Guard.Find(ctx, idem.Scope{Operation: operation, Account: account, Key: key})
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
		return nil, &Early{Outcome: Held, RetryAfter: f.HeldRetryAfter}
	}
	f.Logger.ErrorContext(ctx, operation+" lookup by key failed", "error", err)
	return nil, &Early{Outcome: Unavailable, RetryAfter: f.RetryAfter}
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
func (f Frame) Answer(ctx context.Context, operation, account string, r RowRead) *Early {
	switch {
	case errors.Is(r.Err, r.None):
		return &Early{Outcome: NotFound}
	case errors.Is(r.Err, r.Unreadable):
		f.Logger.ErrorContext(ctx, "get "+operation+": unreadable row", "error", r.Err)
		return &Early{Outcome: NotFound}
	case r.Err != nil:
		f.Logger.ErrorContext(ctx, "get "+operation+" failed", "error", r.Err)
		return &Early{Outcome: Unavailable, RetryAfter: f.RetryAfter}
	case r.Account != account:
		return &Early{Outcome: NotFound}
	}
	return nil
}

// ByKey is the frame of a lookup by the client's idempotency key: the
// key's record (FindKey; a call that ends there is early's result), then
// what row answers of the completed record, with the record named in
// ctx's log lines.
func ByKey[Res any](ctx context.Context, f Frame, operation, account, key string, early func(Early) Res,
	row func(ctx context.Context, rec *idem.Record) Res) Res {
	rec, e := f.FindKey(ctx, operation, account, key)
	if e != nil {
		return early(*e)
	}
	return row(obs.WithAttrs(ctx, slog.String("record", idem.Ref(rec.PK))), rec)
}

// Open is the start of every operation's door, in the API's order: the
// account, then the idempotency key (bare, or the quoted form): the key
// as parsed, or how the call ends (AccountInvalid, KeyMissing,
// KeyInvalid), nothing stored. The operation's own strict parser reads
// the request next.
func Open(account string, keys []string) (string, *Early) {
	if err := idem.ValidateAccount(account); err != nil {
		return "", &Early{Outcome: AccountInvalid, Reason: err.Error()}
	}
	key, err := idem.ParseKeyHeader(keys)
	switch {
	case errors.Is(err, idem.ErrKeyMissing):
		return "", &Early{Outcome: KeyMissing}
	case err != nil:
		return "", &Early{Outcome: KeyInvalid, Reason: err.Error()}
	}
	return key, nil
}

// Claim claims scope's record for the request req (idem.Guard.Begin):
// the claim (a replay, or the lease to act under), or how the call ends
// with nothing sent: InFlight; KeyReused; Held; Pending for a record
// claimed for another acquirer than this deployment's (configuration,
// not chance: this deployment cannot ask that one what it received, and
// an operator resolves the record with a tool configured for it); or
// Unavailable when the claim failed (written or not, nothing was sent,
// and a retry with the same key is safe: a written claim's lease expires
// and is taken over).
func (f Frame) Claim(ctx context.Context, scope idem.Scope, req idem.Canonical) (idem.Claim, *Early) {
	claim, err := f.Guard.Begin(ctx, scope, req)
	var inFlight *idem.InFlightError
	switch {
	case err == nil:
		return claim, nil
	case errors.As(err, &inFlight):
		return claim, &Early{Outcome: InFlight, RetryAfter: inFlight.RetryAfter, WaitOut: max(inFlight.WaitOut, inFlight.RetryAfter)}
	case errors.Is(err, idem.ErrKeyReused):
		return claim, &Early{Outcome: KeyReused}
	case errors.Is(err, idem.ErrHeld):
		return claim, &Early{Outcome: Held, RetryAfter: f.HeldRetryAfter}
	case errors.Is(err, idem.ErrOtherDownstream):
		f.Logger.ErrorContext(ctx, "the "+scope.Operation+"'s record was claimed for another acquirer; nothing sent", "error", err)
		return claim, &Early{Outcome: Pending, RetryAfter: f.RetryAfter}
	}
	f.Logger.ErrorContext(ctx, "claim failed", "error", err)
	return claim, &Early{Outcome: Unavailable, RetryAfter: f.RetryAfter}
}

// Send makes one acquirer call under the lease's deadline
// (idem.Lease.SendContext: the acquirer's timeout, the invocation's
// deadline less what storing the outcome needs, and the lease). sent is
// false when the lease has too little left to send (DESIGN §4 rule 3):
// then call was not made and nothing left.
func Send[T any](ctx context.Context, lease *idem.Lease, timeout, storeReserve time.Duration, call func(context.Context) (T, error)) (answer T, sent bool, err error) {
	callCtx, cancel, ok := lease.SendContext(ctx, timeout, storeReserve)
	if !ok {
		return answer, false, nil
	}
	defer cancel()
	answer, err = call(callCtx)
	return answer, true, err
}

// Abandon ends the lease of an attempt whose outcome is unknown, so a
// retry can take over and ask the acquirer; the record stays in flight
// (and whatever the operation reserved stays reserved). It ends as
// Pending.
func (f Frame) Abandon(ctx context.Context, lease *idem.Lease) Early {
	if err := lease.Abandon(ctx); err != nil && !errors.Is(err, idem.ErrLeaseLost) {
		f.Logger.ErrorContext(ctx, "abandon failed; the lease will expire by itself", "error", err)
	}
	return Early{Outcome: Pending, RetryAfter: f.RetryAfter}
}

// Hold holds the record for an operator (idem.Lease.HoldForOperator): the
// acquirer's answer disagreed with what was asked, or with itself, for
// reason, shown by evidence. Money may have moved on terms nobody asked
// for, so nothing is stored as an outcome. held is false when the hold
// was not written: the record stays in flight until its lease ends, and
// the next attempt asks the acquirer again. It ends as Mismatch, retried
// after a held record's delay.
func (f Frame) Hold(ctx context.Context, lease *idem.Lease, reason string, evidence []byte) (e Early, held bool) {
	err := lease.HoldForOperator(ctx, reason, evidence)
	if err != nil {
		f.Logger.ErrorContext(ctx, "hold failed; the record stays in flight until its lease ends", "error", err)
	}
	return Early{Outcome: Mismatch, RetryAfter: f.HeldRetryAfter}, err == nil
}

// Release deletes the record of a first attempt that provably sent
// nothing (idem.Lease.Release; DESIGN §4 rule 2), so the client's retry
// is a new intent. released is false when the delete failed: the lease is
// then ended (Abandon), and the call ends as Unavailable: nothing was
// sent, and a retry takes the record over and asks the acquirer.
func (f Frame) Release(ctx context.Context, lease *idem.Lease) (e Early, released bool) {
	if err := lease.Release(ctx); err != nil {
		f.Logger.ErrorContext(ctx, "release failed; nothing was sent", "error", err)
		f.Abandon(ctx, lease)
		return Early{Outcome: Unavailable, RetryAfter: f.RetryAfter}, false
	}
	return Early{}, true
}

// Complete stores resp as the answer of the lease's record, after its
// row (DESIGN §4): idem.Lease.Complete, or Lease.Accept for a record held
// for an operator, whose accept keeps the hold beside the settlement.
// stored is false when the write failed: replay is then the completed
// record of the attempt that resolved the key meanwhile, or nil, and the
// call ends as pending (Unstored).
func (f Frame) Complete(ctx context.Context, lease *idem.Lease, resp idem.Response) (stored bool, replay *idem.Record, pending Early) {
	complete := lease.Complete
	if rec := lease.Record(); rec.Held() {
		complete = lease.Accept
	}
	completeCtx, end := f.tracer().Start(ctx, Step{Name: "idem.complete"})
	err := complete(completeCtx, resp)
	end(err)
	if err == nil {
		return true, nil, Early{}
	}
	replay, pending = f.Unstored(ctx, lease, err)
	return false, replay, pending
}

// Unstored is how an attempt ends when storing its answer failed with err
// (idem.Lease.Complete or Accept): a lost lease means another attempt
// resolved the key, so its completed record answers (rec, a replay); any
// other failure, or a record not completed, leaves the record in flight
// (rec nil: Pending).
func (f Frame) Unstored(ctx context.Context, lease *idem.Lease, err error) (rec *idem.Record, pending Early) {
	pending = Early{Outcome: Pending, RetryAfter: f.RetryAfter}
	if !errors.Is(err, idem.ErrLeaseLost) {
		f.Logger.ErrorContext(ctx, "complete failed; the record stays in flight", "error", err)
		return nil, pending
	}
	rec, lookupErr := f.Guard.Lookup(ctx, lease.PK())
	if lookupErr == nil && rec.Status == idem.StatusCompleted {
		return rec, pending
	}
	return nil, pending
}

// WriteRow writes the attempt's row with rows (Rows.Write, retried on
// write conflicts), the first of the two writes that store an answer
// (DESIGN §4: the row, then the record): the row as stored (row, or the
// one an earlier attempt of the intent wrote, which wins), or how the
// attempt ends without it: Pending with the record left as it is when an
// operator confirmed the intent void (voided: no row is ever written,
// and the record is the void's to release); Pending with the record in
// flight and its lease ended when the write failed (the acquirer has
// answered and nothing is in transit, so a retry takes over, finds the
// answer by the downstream key and writes the row).
func WriteRow[R any](ctx context.Context, f Frame, lease *idem.Lease, rows Rows[R], row R, voided error) (R, *Early) {
	writeCtx, end := f.tracer().Start(ctx, Step{Name: "ledger.write"})
	var stored R
	err := idem.RetryConflicts(writeCtx, func() (err error) {
		stored, err = rows.Write(writeCtx, row)
		return err
	})
	end(err)
	switch {
	case errors.Is(err, voided):
		f.Logger.ErrorContext(ctx, "an operator confirmed this intent void; its row is refused and the record left as it is", "error", err)
		return stored, &Early{Outcome: Pending, RetryAfter: f.RetryAfter}
	case err != nil:
		f.Logger.ErrorContext(ctx, "row write failed; the record stays in flight", "error", err)
		e := f.Abandon(ctx, lease)
		return stored, &e
	}
	return stored, nil
}

// tracer is f's Tracer, NoTracer when none is given.
func (f Frame) tracer() Tracer {
	if f.Tracer == nil {
		return NoTracer
	}
	return f.Tracer
}
