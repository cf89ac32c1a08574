package capture

import (
	"context"
	"log/slog"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// GetCapture finds account's capture id (GET /v1/captures/{id}): Found
// with its row (succeeded or declined), NotFound for a capture that does
// not exist or is another account's (the two are indistinguishable),
// AccountInvalid, or Unavailable when the store failed. One read.
func (s *Service) GetCapture(ctx context.Context, account, id string) Result {
	return s.captures.get(ctx, account, id)
}

// GetVoid finds account's void id (GET /v1/voids/{id}), as GetCapture.
func (s *Service) GetVoid(ctx context.Context, account, id string) Result {
	return s.voids.get(ctx, account, id)
}

// CaptureByKey finds account's capture by the client's idempotency key,
// as the refunds' lookup does: the key's record, then the row its
// downstream key names. InFlight while the key is in flight, Held while
// its record is held, NotFound when the key has no live record or its
// answer has no row (the bound refused it).
func (s *Service) CaptureByKey(ctx context.Context, account, key string) Result {
	return s.captures.byKey(ctx, account, key)
}

// VoidByKey finds account's void by the client's idempotency key, as
// CaptureByKey.
func (s *Service) VoidByKey(ctx context.Context, account, key string) Result {
	return s.voids.byKey(ctx, account, key)
}

func (o *operation[A]) get(ctx context.Context, account, id string) Result {
	if err := idem.ValidateAccount(account); err != nil {
		return Result{Outcome: op.AccountInvalid, Reason: err.Error()}
	}
	if !o.validID(id) {
		return Result{Outcome: op.NotFound}
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(id)))
	r, err := o.rows.Get(ctx, id)
	if early := o.s.frame.Answer(ctx, o.name, account, op.RowRead{Account: r.Account, Err: err, None: ErrNoRow, Unreadable: ErrUnreadableRow}); early != nil {
		return endedEarly(*early)
	}
	return Result{Outcome: op.Found, Row: r}
}

func (o *operation[A]) byKey(ctx context.Context, account, key string) Result {
	return op.ByKey(ctx, o.s.frame, o.name, account, key, endedEarly, func(ctx context.Context, rec *idem.Record) Result {
		res := o.get(ctx, account, o.id(rec.DownstreamKey))
		res.Record = idem.Ref(rec.PK)
		return res
	})
}

// completedRow is the row of rec, a completed record, when it reads.
func (o *operation[A]) completedRow(ctx context.Context, rec *idem.Record) (Row, bool) {
	res := o.get(ctx, rec.Account, o.id(rec.DownstreamKey))
	return res.Row, res.Outcome == op.Found
}

// Balance is charge id's balance as its GETs read it (charge.FiguresOf):
// one strongly consistent read of the item both sides share. The caller
// has found the charge for its account.
func (s *Service) Balance(ctx context.Context, chargeID string) (charge.Balance, error) {
	b, err := s.balances.Get(ctx, chargeID)
	return charge.Balance{Opened: b.Authorized > 0, Captured: b.Captured, Capturable: b.Capturable, Closed: string(b.Closed), Refunded: b.Refunded}, err
}
