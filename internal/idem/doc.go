// Package idem is the idempotency engine: it makes every retry of one intent
// execute at most once and answer the same.
//
// The engine knows nothing about charges or HTTP. A caller describes an
// operation by a [Scope] (operation, account, client key) and a [Canonical]
// request, and asks a [Guard] to [Guard.Begin] it. The guard claims the key
// with one conditional write and the caller learns, in the same round trip,
// one of:
//
//   - it owns the key ([Claim.Lease] is set): do the work, then
//     [Lease.Complete] with the response to store, or [Lease.Release] if
//     provably nothing was sent, or [Lease.Abandon] if the outcome is unknown;
//   - the key completed before ([Claim.Replay] is set): answer with it;
//   - [ErrInFlight]: another attempt owns the key; retry after [InFlightError.RetryAfter];
//   - [ErrKeyReused]: the key belongs to a different request.
//
// Every write after the claim is fenced on the lease token, so a worker whose
// lease expired and was taken over (a zombie) can neither complete nor release.
// The three rules of the design (one downstream key per intent, release only
// what provably never left, respect the in-transit bound) are enforced here
// where they can be: [Lease.DownstreamKey] is fixed per record,
// [Lease.Release] refuses after a take-over, and [Lease.TimeLeft] tells the
// caller whether it may still send.
//
// Storage is behind the small [Store] interface. Package dynamo
// implements it on DynamoDB; package idemtest has an in-memory Store and the
// conformance suite both must pass.
package idem
