package refund

import (
	"context"
	"log/slog"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Get finds account's refund id: Found with its row (succeeded or
// declined), NotFound for a refund that does not exist or is another
// account's (the two are indistinguishable), AccountInvalid, or
// Unavailable when the store failed. One read.
func (s *Service) Get(ctx context.Context, account, id string) Result {
	if err := idem.ValidateAccount(account); err != nil {
		return Result{Outcome: op.AccountInvalid, Reason: err.Error()}
	}
	if !ValidID(id) {
		return Result{Outcome: op.NotFound}
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(id)))
	r, err := s.ledger.Get(ctx, id)
	if early := s.frame.Answer(ctx, Operation, account, op.RowRead{Account: r.Account, Err: err, None: ErrNoRefund, Unreadable: ErrUnreadableRefund}); early != nil {
		return endedEarly(*early)
	}
	return Result{Outcome: op.Found, Row: r}
}

// completedRow is the row of rec, a completed record, when it reads.
func (s *Service) completedRow(ctx context.Context, rec *idem.Record) (Refund, bool) {
	res := s.Get(ctx, rec.Account, ID(rec.DownstreamKey))
	return res.Row, res.Outcome == op.Found
}

// ByKey finds account's refund by the client's idempotency key, as the
// charges' lookup does: the key's record, then the row its downstream key
// names. InFlight while the key is in flight, Held while its record is
// held, NotFound when the key has no live record or its answer has no
// refund (the bound refused it).
func (s *Service) ByKey(ctx context.Context, account, key string) Result {
	return op.ByKey(ctx, s.frame, Operation, account, key, endedEarly, func(ctx context.Context, rec *idem.Record) Result {
		res := s.Get(ctx, account, ID(rec.DownstreamKey))
		res.Record = idem.Ref(rec.PK)
		return res
	})
}

// Refunded is what charge id's succeeded refunds add up to: one read of
// its balance (0 for a charge never refunded). The caller has found the
// charge for its account.
func (s *Service) Refunded(ctx context.Context, chargeID string) (int64, error) {
	b, err := s.balances.Get(ctx, chargeID)
	return b.Refunded, err
}
