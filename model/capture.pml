/*
 * One balance per charge (docs/design.md, "Captures and voids"): an
 * authorization of AUTH units, and two intents under different keys that
 * act on it. Intent 0 is a non-final capture of 2; intent 1 is, by switch,
 *   -DVERSUS_CAPTURE  another non-final capture, of 3 (multicapture: both
 *                     together exceed the authorization)
 *   -DVERSUS_FINAL    a final capture of 2 (it releases the rest)
 *   -DVERSUS_VOID     a void (it releases all that remains capturable)
 *   -DVERSUS_REFUND   a refund of 2 (bounded by what was captured)
 * and -DEXPIRY adds the authorization's expiry with the sweeper that
 * closes an expired balance (either pair). -DRETRY runs intent 0 alone
 * with a client's retry racing its first attempt, and -DFORGETFUL adds an
 * acquirer whose lookup, once, does not find an action whose row is
 * written.
 *
 * Each intent has its own record, run by the engine of model/idem.pml
 * (claim, lease, take-over, fencing), and a worker that may crash, stall
 * or lose its answer at any step; the reconciler resolves stale records.
 * The acquirer deduplicates by key, holds requests in transit, and
 * succeeds or declines; it has no bounds of its own (the sandbox's are
 * switched off), so ours are the only ones checked.
 *
 * An answer that disagrees holds the record for an operator, which this
 * model leaves out: the held intent keeps its entry reserved, as a stalled
 * worker does, until the operator's settlement takes it over on the path
 * modelled here. The held mark the hold writes on the entry first (its
 * fence's, removed by the fold) moves nothing and no step's condition
 * reads it; it only names what a refusal behind the entry waits for.
 *
 * The balance: the capture side (capturable, reserved for captures,
 * captured, released, and the closing intent that a void or a final
 * capture sets while in flight), the refund side (refundable, reserved,
 * refunded), one entry per intent in flight (state, fence, amount) and
 * the watermark. An entry is folded when its intent ends: removed, its
 * amount moved into the figures, and the watermark raised to the time of
 * the fold. A reservation's write carries the time it was issued (its
 * stamp) and reserves only if that is after the watermark. A success
 * folds as a release does: the item holds in-flight intents only, at
 * constant size.
 *
 * Every step on the balance is one conditional UpdateItem: an atomic step
 * here. A write may also land late (a retry of the SDK, its first try
 * having landed, or a write whose answer was lost): one reservation write
 * per run lands at any later moment (the Acquirer process lands it). A
 * worker issues a write only while its invocation lives, which ends
 * before its lease does. A folder's clock may run a tick behind (a wall
 * clock stepped back, or behind another instance's); the fold's floor,
 * the intent's own stamp, keeps it safe.
 *
 * Bounds: AUTH 4; each record claimed at most twice (a released key may
 * be claimed again under a new downstream key); the reconciler fails (a
 * lookup or a crash) at most once.
 *
 * model/check.sh runs it. Compile-time switches break it; each must yield a
 * counterexample:
 *   -DVOID_IGNORES_CAPTURES  a void reserves while a capture is reserved
 *                            (no 409 CAPTURE_IN_FLIGHT): the capture lands
 *                            after the void
 *   -DFOLD_NO_WATERMARK      a success folds its entry without raising the
 *                            watermark: a late reservation of the same
 *                            intent lands after the fold
 *   -DZOMBIE_WRITES          a worker whose lease was taken over still
 *                            issues its reservation: stamped after the
 *                            fold, it reserves for an ended intent
 *   -DNO_FLOOR               a fold raises the watermark to the folder's
 *                            clock alone, which may be behind: a late
 *                            reservation of the intent lands after it
 *   -DABSENT_IGNORES_ROW     (with -DFORGETFUL) a lookup that does not
 *                            find an action whose row is written releases
 *                            the entry: the stalled attempt's success then
 *                            finds nothing, and the books lose a capture
 *   -DCAPTURE_TRUSTS_READ    a capture reads what is capturable, then
 *                            writes its reservation unconditioned
 *   -DEXPIRY_IGNORES_CAPTURES the sweeper closes an expired balance while
 *                            a capture is reserved
 */

#define AUTH 4
#define INTENTS 2
#define MAXGEN 2
#define KEYS 4			/* downstream keys: INTENTS * MAXGEN */
#define NONE 255
#define RECONCILER 9

mtype = { ABSENT, INPROG, COMPLETED };	/* a record */
mtype = { LIVE, ENDED, STALE };		/* its lease against the clock */
mtype = { NOENTRY, RESERVED, FOLDED, INFLIGHT, REFUSED, EXCEEDS };	/* an entry; a reservation's answer */
mtype = { UNKNOWN, DONE, DECLINED };	/* the acquirer's action, by key */
mtype = { CAPTURE, FINAL, VOIDING, REFUND };	/* an intent's operation */
mtype = { OPEN, VOIDED, FINALED, EXPIRED };	/* the authorization */

mtype kind[INTENTS];
byte want[INTENTS];	/* what a capture or a refund asks for */

/* The records, by intent. owner: a worker (1, 3: intent 0's; 2: intent 1's),
 * RECONCILER, or 0. */
mtype rec[INTENTS] = ABSENT;
mtype lease[INTENTS] = LIVE;
byte owner[INTENTS];
byte attempt[INTENTS];
byte gen[INTENTS];
bool leaseHasTransit[INTENTS];	/* a request sent under the current lease has not landed */
byte inTransitFor[INTENTS];	/* requests of the intent still in transit */

/* The balance item of the charge. */
byte capturable = AUTH;
byte capReserved = 0;
byte captured = 0;
byte released = 0;
byte closing = NONE;		/* the key of the void or final capture in flight */
mtype auth = OPEN;
byte refundable = 0;
byte refReserved = 0;
byte refunded = 0;
mtype state[KEYS] = NOENTRY;
byte fence[KEYS];		/* 0: absent */
byte amt[KEYS];
byte watermark = 0;		/* released_through: 0 none */
bool succeeded[KEYS];		/* ghost: the entry was folded by its success */

/* The clock: a reservation's write carries the time it was issued at
 * (its stamp: each issue takes the next tick), and a fold raises the
 * watermark to the time it is made at (the current tick). */
byte tick = 0;
byte floor[KEYS];		/* an intent's reservation stamp: the fold's floor */

/* The authorization window: it passes once, at any moment. */
bool expired = false;

/* The acquirer, by downstream key. */
mtype acq[KEYS] = UNKNOWN;
byte acqCaptured = 0;
byte acqRefunded = 0;
bool acqVoided = false;
bool acqFinal = false;
byte acqKeys[INTENTS];		/* keys of the intent the acquirer has acted on */
bool refusedFor[INTENTS];	/* ghost: the intent's record stores a refusal */
byte transit[4] = NONE;	/* the key a worker's request carries in transit */
byte reconcileFailures = 0;

/* The late reservation write: its key and fence, once in a run. */
byte lateKey = NONE;
byte lateFence;
byte lateStamp;
bool lateUsed = false;

#define KEY(i) (i * MAXGEN + gen[i] - 1)	/* idem.downstreamKey: one per record */
#define OF(k) (k / MAXGEN)			/* a key's intent */
#define WANT(k) want[OF(k)]
#define CAPTURES(k) (kind[OF(k)] == CAPTURE || kind[OF(k)] == FINAL)

/* The invariants of the balance, after every step on it. */
#define BALANCED (capturable + capReserved + captured + released == AUTH && \
		  refundable + refReserved + refunded == captured)

/* Whether intent i's workers may crash, stall or lose an answer: with
 * -DRETRY, intent 0's only (its two workers make the state space large
 * enough). */
#ifdef RETRY
#define MAYCRASH(i) (i == 0)
#else
#define MAYCRASH(i) true
#endif

/* A crash between two writes. The reconciler's (bounded) may happen once
 * in all, shared with its failed lookups, so it cannot fail forever
 * (liveness); a worker runs once and may crash anywhere. */
inline crash(i, bounded) {
	atomic {
		(bounded && reconcileFailures < 1) || (!bounded && MAYCRASH(i));
		if
		:: bounded -> reconcileFailures++
		:: else -> skip
		fi
	}
}

/* fold: the watermark raised to the intent's claim time, never lowered. */
/* fold: the watermark raised to the folder's clock, which may run one
 * tick behind (a wall clock stepped back, or behind another instance's),
 * and to the floor: the intent's own stamp (for a take-over, the lease end
 * it took over, which comes after every stamp of the earlier attempts).
 * -DNO_FLOOR: the folder's clock alone. */
inline fold(k) {
	if
	:: watermark < tick -> watermark = tick
	:: tick > 0 && watermark <= tick - 1 -> watermark = tick - 1	/* the folder's clock is behind: perhaps no raise */
	:: watermark >= tick -> skip
	fi;
#ifndef NO_FLOOR
	if
	:: watermark < floor[k] -> watermark = floor[k]
	:: else -> skip
	fi
#endif
}

/* The reservation's condition beyond the entry's own: what its kind
 * requires of the balance (one conditional write decides it). OPENED: the
 * authorization not closed (its expiry is read before, at the door, from
 * the charge's row: a capture may reserve after the window passed and
 * before the sweeper closes the balance); and no void or final capture in
 * flight. A void and a final capture also require that no capture is
 * reserved (409 CAPTURE_IN_FLIGHT), and take closing. */
#define OPENED (auth == OPEN)
#ifdef VOID_IGNORES_CAPTURES
#define NO_CAPTURE_IN_FLIGHT true
#else
#define NO_CAPTURE_IN_FLIGHT (capReserved == 0)
#endif

/* reserve: no entry, the intent not folded, and the kind's condition.
 * The answers: RESERVED; FOLDED (refused: the intent is released);
 * INFLIGHT (409: a void or final capture in flight, or a capture in
 * flight for a void or a final capture); REFUSED (422: closed or
 * expired, or nothing left: stored); EXCEEDS (422: too little remains);
 * NONE (fenced out). */
inline reserve(k, a, st, result) {
	atomic {
		if
		:: state[k] == RESERVED && fence[k] == a -> result = RESERVED	/* its own write, answered late */
		:: state[k] != NOENTRY && !(state[k] == RESERVED && fence[k] == a) -> result = NONE
		:: state[k] == NOENTRY && st <= watermark -> result = FOLDED
		:: state[k] == NOENTRY && st > watermark ->
			if
			:: kind[OF(k)] == REFUND ->
				if
				:: refundable >= WANT(k) -> refundable = refundable - WANT(k); refReserved = refReserved + WANT(k); amt[k] = WANT(k); result = RESERVED
				:: else -> result = EXCEEDS
				fi
			:: kind[OF(k)] == CAPTURE ->
				if
				:: !OPENED -> result = REFUSED
				:: OPENED && closing != NONE -> result = INFLIGHT
				:: OPENED && closing == NONE && capturable >= WANT(k) ->
					capturable = capturable - WANT(k); capReserved = capReserved + WANT(k); amt[k] = WANT(k); result = RESERVED
				:: OPENED && closing == NONE && capturable < WANT(k) -> result = EXCEEDS
				fi
			:: kind[OF(k)] == FINAL ->
				if
				:: !OPENED -> result = REFUSED
				:: OPENED && (closing != NONE || !NO_CAPTURE_IN_FLIGHT) -> result = INFLIGHT
				:: OPENED && closing == NONE && NO_CAPTURE_IN_FLIGHT && capturable >= WANT(k) ->
					capturable = capturable - WANT(k); capReserved = capReserved + WANT(k); amt[k] = WANT(k);
					closing = k; result = RESERVED
				:: OPENED && closing == NONE && NO_CAPTURE_IN_FLIGHT && capturable < WANT(k) -> result = EXCEEDS
				fi
			:: kind[OF(k)] == VOIDING ->
				if
				:: !OPENED -> result = REFUSED
				:: OPENED && (closing != NONE || !NO_CAPTURE_IN_FLIGHT) -> result = INFLIGHT	/* before "nothing left": what is in flight may give it back */
				:: OPENED && closing == NONE && NO_CAPTURE_IN_FLIGHT && capturable == 0 -> result = REFUSED
				:: OPENED && capturable > 0 && closing == NONE && NO_CAPTURE_IN_FLIGHT ->
					amt[k] = capturable; capReserved = capReserved + capturable; capturable = 0;
					closing = k; result = RESERVED
				fi
			fi;
			if
			:: result == RESERVED -> state[k] = RESERVED; fence[k] = a
			:: else -> skip
			fi
		fi;
		assert(BALANCED)
	}
}

/* A capture that trusts a read (-DCAPTURE_TRUSTS_READ): it reads the
 * balance, and writes later with no condition but the entry's. */
inline reserveRead(k, a, st, result) {
	atomic { room = (OPENED && closing == NONE && capturable >= WANT(k)) };
	atomic {
		if
		:: state[k] == NOENTRY && st <= watermark -> result = FOLDED
		:: state[k] == NOENTRY && st > watermark && room ->
			if
			:: capturable >= WANT(k) -> capturable = capturable - WANT(k)
			:: else -> capturable = 0
			fi;
			capReserved = capReserved + WANT(k); amt[k] = WANT(k); state[k] = RESERVED; fence[k] = a; result = RESERVED
		:: state[k] == NOENTRY && st > watermark && !room -> result = EXCEEDS
		:: state[k] == RESERVED && fence[k] == a -> result = RESERVED
		:: else -> result = NONE
		fi
	}
}

/* re-fence, by a take-over: fence_K = a if below; no entry: the intent is
 * folded (no attempt reserved; after the fold none can). Two writes, as
 * dynamo.Balances.Refence makes them, anything between them. */
inline refence(k, a, result) {
	result = NOENTRY;
	do
	:: atomic {
		if
		:: state[k] != NOENTRY && fence[k] < a -> fence[k] = a; result = state[k]
		:: state[k] != NOENTRY && fence[k] == a -> result = state[k]
		:: state[k] != NOENTRY && fence[k] > a -> result = NONE
		:: state[k] == NOENTRY -> skip	/* no entry: fold */
		fi
	   };
	   if
	   :: result != NOENTRY -> break
	   :: else -> skip
	   fi;
	   atomic {
		if
		:: state[k] == NOENTRY -> fold(k); result = FOLDED
		:: else -> skip	/* an entry landed meanwhile: re-fence it */
		fi
	   };
	   if
	   :: result != NOENTRY -> break
	   :: else -> skip
	   fi
	od
}

/* The entry's removal when its intent ends: the watermark raised. */
#ifdef FOLD_NO_WATERMARK
#define SUCCEED_FOLD(k) skip
#else
#define SUCCEED_FOLD(k) fold(k)
#endif
inline remove(k) {
	state[k] = NOENTRY; fence[k] = 0; amt[k] = 0
}

/* succeed: a reserved entry of this fence moves into the figures and is
 * folded. An intent with no entry that the watermark folds has ended:
 * the success is taken as done already (its row exists: the row is
 * written before the entry moves, and only a success folds an intent
 * whose acquirer acted), and the ghost says that is true. */
inline succeed(k, a, ok) {
	atomic {
		if
		:: state[k] == RESERVED && fence[k] == a ->
			if
			:: kind[OF(k)] == REFUND -> refReserved = refReserved - amt[k]; refunded = refunded + amt[k]
			:: kind[OF(k)] == CAPTURE ->
				assert(auth == OPEN);
				capReserved = capReserved - amt[k]; captured = captured + amt[k]; refundable = refundable + amt[k]
			:: kind[OF(k)] == FINAL ->
				assert(auth == OPEN && closing == k);
				capReserved = capReserved - amt[k]; captured = captured + amt[k]; refundable = refundable + amt[k];
				released = released + capturable; capturable = 0; closing = NONE; auth = FINALED
			:: kind[OF(k)] == VOIDING ->
				assert(auth == OPEN && closing == k && capReserved == amt[k]);	/* no capture in flight */
				capReserved = capReserved - amt[k]; released = released + amt[k]; closing = NONE; auth = VOIDED
			fi;
			remove(k); SUCCEED_FOLD(k); succeeded[k] = true; ok = true
		:: state[k] == NOENTRY -> assert(succeeded[k]); ok = true	/* folded: done already */
		:: else -> ok = false
		fi;
		assert(BALANCED)
	}
}

/* release: a reserved entry of this fence given back, removed and
 * folded; no entry: folded. A void or final capture gives closing back. */
inline release(k, a, ok) {
	atomic {
		if
		:: state[k] == RESERVED && fence[k] == a ->
			if
			:: kind[OF(k)] == REFUND -> refReserved = refReserved - amt[k]; refundable = refundable + amt[k]
			:: else ->
				capReserved = capReserved - amt[k]; capturable = capturable + amt[k];
				if
				:: closing == k -> closing = NONE
				:: else -> skip
				fi
			fi;
			remove(k); fold(k); ok = true
		:: state[k] == NOENTRY -> fold(k); ok = true	/* nothing reserved, or folded already (by a release, or a success: a stale attempt's release, whose record's delete is fenced) */
		:: else -> ok = false
		fi;
		assert(BALANCED)
	}
}

/* The sweeper's expiry: one conditional write that closes an expired
 * balance, never while a capture (or a void) is reserved. */
#ifdef EXPIRY_IGNORES_CAPTURES
#define EXPIRABLE (auth == OPEN && expired)
#else
#define EXPIRABLE (auth == OPEN && expired && capReserved == 0 && closing == NONE)
#endif
#ifdef EXPIRY
active proctype Expiry() {
	atomic { expired = true };	/* the window passes, at any moment */
end:	atomic { EXPIRABLE -> released = released + capturable; capturable = 0; auth = EXPIRED }
}
#endif

/* idem.Lease.Complete, fenced; COMPLETED is final for the key. */
inline completeRecord(i, me) {
	atomic {
		if
		:: rec[i] == INPROG && owner[i] == me ->
			assert(state[KEY(i)] != RESERVED);	/* no reservation outlives its record */
			rec[i] = COMPLETED; owner[i] = 0
		:: else -> skip
		fi
	}
}

/* A refusal the balance or the charge decided (closed, expired, nothing
 * left: 422 CHARGE_NOT_CAPTURABLE or AUTHORIZATION_EXPIRED), stored as the
 * key's answer: every copy of the key answers alike, and the intent never
 * reaches the acquirer afterwards (land). */
inline completeRefused(i, me) {
	atomic {
		if
		:: rec[i] == INPROG && owner[i] == me -> refusedFor[i] = true
		:: else -> skip
		fi;
		completeRecord(i, me)
	}
}

/* idem.Lease.Release: the record's delete, fenced. */
inline deleteRecord(i, me) {
	atomic {
		if
		:: rec[i] == INPROG && owner[i] == me ->
			assert(state[KEY(i)] != RESERVED && !succeeded[KEY(i)]);	/* the entry first */
			rec[i] = ABSENT; owner[i] = 0
		:: else -> skip
		fi
	}
}

/* finish (op.Store): the row, then the entry (succeed, or release for a
 * decline), then the completion; a crash may come before each write. */
inline finish(i, me, k, a, bounded, out) {
#ifdef FORGETFUL
	if
	:: crash(i, bounded); goto out
	:: row[k] = true	/* the row, from the acquirer's answer */
	fi;
#endif
	if
	:: crash(i, bounded); goto out
	:: acq[k] == DONE -> succeed(k, a, ok)
	:: acq[k] == DECLINED -> release(k, a, ok)
	fi;
	if
	:: !ok -> goto out	/* fenced out: another attempt finishes */
	:: ok -> skip
	fi;
	if
	:: crash(i, bounded); goto out
	:: completeRecord(i, me)
	fi
}

/* The take-over's lookup by key. With -DFORGETFUL the acquirer, once,
 * does not find an action it made whose row is written (a lookup that
 * lies; one with no row is the daily match's to find, beyond any
 * protocol). An answer of "absent" then reads the intent's row before it
 * releases anything, and finishes from it when it is there
 * (-DABSENT_IGNORES_ROW drops that read). */
#ifdef FORGETFUL
bool row[KEYS];
bool forgot = false;
#ifdef ABSENT_IGNORES_ROW
#define ROWREAD(k) false
#else
#define ROWREAD(k) row[k]
#endif
#else
#define ROWREAD(k) false
#endif
inline lookup(k, found) {
	atomic {
		if
		:: acq[k] != UNKNOWN -> found = true
#ifdef FORGETFUL
		:: acq[k] != UNKNOWN && row[k] && !forgot -> forgot = true; found = false
#endif
		:: acq[k] == UNKNOWN -> found = false
		fi
	}
}

/* What may be sent: a capture never under a closed or closing balance
 * but its own, a void only its own closing. */
#define SENDABLE(k) (state[k] == RESERVED && (kind[OF(k)] == REFUND || \
	(CAPTURES(k) && auth == OPEN && (closing == NONE || closing == k)) || \
	(kind[OF(k)] == VOIDING && auth == OPEN && closing == k)))

/* Whether a worker may still issue a write: its invocation lives, so its
 * lease has not ended (-DZOMBIE_WRITES: a worker whose lease was taken
 * over issues one). */
#ifdef ZOMBIE_WRITES
#define ISSUABLE(i, me) true
#else
#define ISSUABLE(i, me) (owner[i] == me && lease[i] == LIVE)
#endif

proctype Worker(byte i; byte me) {
	byte k, a, got, st;
	bool takenOver = false, ok, room, found;
	atomic {
		if
		:: rec[i] == ABSENT && gen[i] < MAXGEN -> rec[i] = INPROG; owner[i] = me; attempt[i] = 1; gen[i]++;
			lease[i] = LIVE; leaseHasTransit[i] = false; a = 1; k = KEY(i)
		:: rec[i] == INPROG && lease[i] != LIVE -> owner[i] = me; attempt[i]++;
			lease[i] = LIVE; leaseHasTransit[i] = false; a = attempt[i]; takenOver = true; k = KEY(i)
		:: else -> goto done
		fi
	}
	if
	:: takenOver ->
		if
		:: MAYCRASH(i) -> goto done	/* crash after the take-over */
		:: refence(k, a, got)
		fi;
		if
		:: got == NONE -> goto done
		:: else -> lookup(k, found)
		fi;
		if
		:: found || ROWREAD(k) -> finish(i, me, k, a, false, done); goto done
		:: !found && !ROWREAD(k) && got == FOLDED -> deleteRecord(i, me); goto done
		:: !found && !ROWREAD(k) && got == RESERVED -> skip
		fi
	:: else ->
		/* The reservation's write is issued while the invocation lives: its
		 * deadline comes before the lease's end, and the SDK issues no try
		 * after it. It carries the time it was issued at. */
		if
		:: CAPTURES(k) && expired -> completeRefused(i, me); goto done	/* the door: 422 AUTHORIZATION_EXPIRED, stored */
		:: else -> skip	/* read before the window passed, or not a capture */
		fi;
		if
		:: MAYCRASH(i) -> goto done	/* crash before reserving */
		:: atomic { ISSUABLE(i, me) -> tick++; st = tick; floor[k] = st }
		:: atomic { !ISSUABLE(i, me) } -> goto done	/* the invocation is over */
		fi;
		if
		:: atomic { MAYCRASH(i) && !lateUsed -> lateUsed = true; lateKey = k; lateFence = a; lateStamp = st };	/* the store fails the reservation, its write still on its way (503) */
			release(k, a, ok);
			if
			:: ok -> deleteRecord(i, me)
			:: else -> skip
			fi;
			goto done
#ifdef CAPTURE_TRUSTS_READ
		:: CAPTURES(k) -> reserveRead(k, a, st, got)
		:: !CAPTURES(k) -> reserve(k, a, st, got)
#else
		:: reserve(k, a, st, got)
#endif
		fi;
		if
		:: got == RESERVED && MAYCRASH(i) && !lateUsed -> atomic { lateUsed = true; lateKey = k; lateFence = a; lateStamp = st }	/* retried by the SDK, its first try landed: the retry lands later */
		:: else -> skip
		fi;
		if
		:: got == NONE -> goto done
		:: got == FOLDED || got == INFLIGHT -> deleteRecord(i, me); goto done	/* 503, 409: nothing stored, the key released */
		:: got == REFUSED -> completeRefused(i, me); goto done	/* 422: closed, expired or nothing left, stored */
		:: got == EXCEEDS -> completeRecord(i, me); goto done	/* 422, stored */
		:: got == RESERVED -> skip
		fi
	fi;
	/* Rule 3: send only with T + skew left on the lease (op.Send). */
	if
	:: atomic { owner[i] == me && lease[i] == LIVE && state[k] == RESERVED ->
		assert(SENDABLE(k));	/* no acquirer call under a closed balance */
		transit[me] = k; inTransitFor[i]++; leaseHasTransit[i] = true }
	:: atomic { owner[i] == me && lease[i] == LIVE };	/* nothing sent */
		if
		:: !takenOver -> release(k, a, ok)	/* rule 2 */
		:: else -> goto done
		fi;
		if
		:: ok -> skip
		:: else -> goto done
		fi;
		if
		:: MAYCRASH(i) -> goto done	/* crash between the entry and the record */
		:: deleteRecord(i, me); goto done
		fi
	:: atomic { !(owner[i] == me && lease[i] == LIVE) } -> goto done
	:: MAYCRASH(i) -> goto done	/* crash before sending */
	fi;
	if
	:: transit[me] == NONE -> finish(i, me, k, a, false, done)	/* answered */
	:: atomic { MAYCRASH(i) && rec[i] == INPROG && owner[i] == me -> lease[i] = ENDED }	/* unknown: 503 pending */
	:: MAYCRASH(i) -> goto done	/* crash while waiting */
	fi;
done:	atomic { k = 0; a = 0; got = 0; st = 0; ok = false; takenOver = false; found = false }
}

/* The acquirer, without bounds of its own: one action per key, its
 * outcome fixed when it lands. */
inline land(w) {
	k = transit[w]; i = OF(k);
	if
	:: acq[k] == UNKNOWN ->
		acqKeys[i]++;
		assert(acqKeys[i] <= 1);	/* an intent reaches the acquirer under one key */
		assert(!refusedFor[i]);	/* never an intent its key's stored answer refused */
		if
		:: acq[k] = DONE;
			if
			:: CAPTURES(k) ->
				assert(!acqVoided && !acqFinal && auth != EXPIRED);	/* no capture after a void, a final capture or an expiry */
				acqCaptured = acqCaptured + amt[k];
				assert(acqCaptured <= AUTH);	/* never beyond the authorization */
				acqFinal = (kind[i] == FINAL)
			:: kind[i] == VOIDING -> acqVoided = true
			:: kind[i] == REFUND ->
				acqRefunded = acqRefunded + amt[k];
				assert(acqRefunded <= acqCaptured)	/* never beyond the capture */
			fi
		:: acq[k] = DECLINED
		fi
	:: else -> skip	/* deduplicated by key */
	fi;
	transit[w] = NONE; inTransitFor[i]--;
	if
	:: inTransitFor[i] == 0 -> leaseHasTransit[i] = false
	:: else -> skip
	fi;
	k = 0; i = 0
}

active proctype Acquirer() {
	byte k, i, got;
end:	do
	:: atomic { transit[1] != NONE -> land(1) }
	:: atomic { transit[2] != NONE -> land(2) }
	:: atomic { transit[3] != NONE -> land(3) }
	:: atomic { lateKey != NONE -> reserve(lateKey, lateFence, lateStamp, got); lateKey = NONE; got = 0 }	/* the late write lands */
	od
}

/* The clock: a lease ends once nothing it sent is in transit (rule 3),
 * and turns STALE T + skew later, when nothing of its intent is. */
active proctype Clock() {
end:	do
	:: atomic { rec[0] == INPROG && lease[0] == LIVE && !leaseHasTransit[0] -> lease[0] = ENDED }
	:: atomic { rec[1] == INPROG && lease[1] == LIVE && !leaseHasTransit[1] -> lease[1] = ENDED }
	:: atomic { rec[0] == INPROG && lease[0] == ENDED && inTransitFor[0] == 0 -> lease[0] = STALE }
	:: atomic { rec[1] == INPROG && lease[1] == ENDED && inTransitFor[1] == 0 -> lease[1] = STALE }
	od
}

/* The reconciler (op.Reconcile, op.Resolve): take over, re-fence, look
 * up; found: finish; absent: release the entry, then the record. */
active proctype Reconciler() {
	byte i, k, a, got;
	bool ok, found;
end:	do
	:: atomic {
		if
		:: rec[0] == INPROG && lease[0] == STALE -> i = 0
		:: rec[1] == INPROG && lease[1] == STALE -> i = 1
		fi;
		owner[i] = RECONCILER; attempt[i]++; lease[i] = LIVE; leaseHasTransit[i] = false; a = attempt[i]; k = KEY(i)
	   };
	   refence(k, a, got);
	   if
	   :: got == NONE -> goto next
	   :: else -> skip
	   fi;
	   lookup(k, found);
	   if
	   :: found || ROWREAD(k) -> finish(i, RECONCILER, k, a, true, next)
	   :: atomic { !found && reconcileFailures < 1 && owner[i] == RECONCILER -> reconcileFailures++; lease[i] = ENDED }	/* the lookup failed */
	   :: !found && !ROWREAD(k) ->
		release(k, a, ok);
		if
		:: ok ->
			if
			:: crash(i, true)
			:: deleteRecord(i, RECONCILER)
			fi
		:: else -> skip
		fi
	   fi;
next:	   atomic { i = 0; k = 0; a = 0; got = 0; ok = false; found = false }
	od
}

/* When everything has stopped: every record ended; the balance adds up;
 * nothing is left reserved; the books are what the acquirer did. */
active proctype Settled() {
	byte k;
	timeout ->
	assert(rec[0] != INPROG && rec[1] != INPROG);
	assert(BALANCED);
	assert(capReserved == 0 && refReserved == 0 && closing == NONE);
	for (k : 0 .. KEYS - 1) {
		assert(state[k] == NOENTRY)	/* no reservation outlives its record */
	}
	assert(acqCaptured == captured && acqRefunded == refunded);
	assert(acqVoided == (auth == VOIDED))
}

init {
	atomic {
		kind[0] = CAPTURE; want[0] = 2;
#if defined(VERSUS_FINAL)
		kind[1] = FINAL; want[1] = 2;
#elif defined(VERSUS_VOID)
		kind[1] = VOIDING;
#elif defined(VERSUS_REFUND)
		kind[1] = REFUND; want[1] = 2;
#else
		kind[1] = CAPTURE; want[1] = 3;
#endif
		run Worker(0, 1);
#ifdef RETRY
		run Worker(0, 3)	/* a client's retry of intent 0: a take-over racing its first attempt */
#else
		run Worker(1, 2)
#endif
	}
}

ltl bounded { [] (acqCaptured <= AUTH && acqRefunded <= acqCaptured && captured + capReserved <= AUTH) }
ltl ends { [] ((rec[0] == INPROG -> <> (rec[0] != INPROG)) && (rec[1] == INPROG -> <> (rec[1] != INPROG))) }
