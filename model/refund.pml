/*
 * The refund bound of DESIGN §7: a completed charge of CHARGED units, and
 * two refund intents under different keys whose amounts together exceed
 * it. Each intent has its own refund record, run by the engine of
 * model/idem.pml (claim, lease, take-over, fencing), and client attempts
 * (workers) that may crash at any step or stall past their lease.
 * The charge's balance item holds remaining, reserved and refunded, one
 * entry per refund in flight (its state, its fence and its amount), and
 * two watermarks. An entry is folded when its intent ends, by its success
 * or its release: removed, its amount moved into the figures, and
 * folded_at raised to the time of the fold. A reservation's
 * write carries the time it was issued (its stamp) and reserves only if
 * that is after folded_at, so a write of an ended intent that lands late is
 * refused. Every fold but a first attempt's success also raises
 * releasedThrough to the intent's claim time (released_through: an intent
 * claimed at or before it that holds no entry may never reserve), which
 * earlier versions' reservations check; the item holds in-flight intents
 * only, at constant size.
 * The sweeper's reconciler resolves stale records; the acquirer deduplicates
 * refunds by key, holds requests in transit, and refunds, declines, or
 * answers on terms nobody asked for (a mismatch: the record is held with
 * its reservation, and only the operator settles it: -DMISMATCHES adds
 * the Operator below).
 *
 * The steps are DESIGN §7's, as internal/refund runs them. Every step on
 * the balance is one conditional UpdateItem: an atomic step here. A
 * reservation's write may land late (a retry of the SDK whose first try
 * landed, or one whose answer was lost): once a run (see lateKey). A
 * worker issues a write only while its lease lives.
 *
 * Bounds: a charge of 5 units, 2 intents of 3 units each, each record
 * claimed at most twice (a released key may be claimed again, under a new
 * downstream key), the reconciler failing (a lookup or a crash) at most
 * once, no write conflicts (the multi-region mode is issue 33's). Two
 * shapes, since both at once exceed 2 GB:
 *   default        one worker an intent; both crash, stall or lose their
 *                  answer at every step, and the reconciler takes over;
 *   -DCOMPETITOR   intent 0 has a client's retry too (a take-over racing
 *                  the first attempt), and intent 1 is reduced to a
 *                  competing refund that reserves whenever there is room.
 * -DMISMATCHES adds the acquirer's answers on other terms, and the operator
 * who settles the records they hold (either shape); -DLATE_ACCEPT adds to
 * it one answer garbled although the refund agrees, and an accept of it
 * whose row may land long after its invocation ended. -DNO_LATE leaves
 * the late reservation write out, -DNO_LATE_DUP its landing again after a
 * success, and -DNO_REISSUE the reservation issued again after its stamp
 * was passed (model/check.sh says where, and why).
 * The largest runs, safety and mismatches with a competitor, store 51
 * million states in 3.4 GB.
 *
 * model/check.sh runs it. Compile-time switches break it; each must yield a
 * counterexample:
 *   -DUNCONDITIONED_RESERVE  a reservation that does not check remaining
 *   -DRELEASE_AMBIGUOUS      a taken-over attempt releases when its own
 *                            call sent nothing (DESIGN §4 rule 2 dropped)
 *   -DRELEASE_UNFENCED       an entry released without checking its fence
 *   -DNO_FOLD                a take-over that finds no entry does not fold
 *                            the intent, so an earlier attempt may still
 *                            reserve for a record that has ended
 *   -DNO_WATERMARK           a release removes the entry without raising
 *                            either watermark: the tombstone's work undone
 *   -DFOLD_NO_WATERMARK      a success folds its entry without raising
 *                            folded_at: a late reservation of the same
 *                            intent lands after the fold
 *   -DREFUSED_FOLD_RELEASES  a take-over's fold refused by a reservation
 *                            that landed after the re-fence, with the
 *                            watermark past the intent, is taken for a
 *                            fold: the reservation is never re-fenced
 *   -DNO_RECONCILER          no reconciler: the control of liveness
 *   -DNO_VOID_MARKER         void-confirmed checks for the refund's row but
 *                            puts no voided marker at its key (with
 *                            -DMISMATCHES -DLATE_ACCEPT: an accept's row,
 *                            on its way, lands after the void)
 *   -DVOID_EARLY             void-confirmed as soon as the held lease ended,
 *                            not T + skew later (with -DMISMATCHES
 *                            -DCOMPETITOR: an earlier attempt's request
 *                            lands after the void)
 */

#define CHARGED 5
#ifndef WANT
#define WANT 3		/* -DWANT=2: two refunds fit the charge, so a success leaves room */
#endif
#define INTENTS 2
#define SENDERS 3		/* workers in all: 2 of intent 0, 1 of intent 1 */
#define MAXGEN 2		/* claims of one intent's record */
#define KEYS 4			/* downstream keys: INTENTS * MAXGEN */
#define NONE 255
#define RECONCILER 9

mtype = { ABSENT, INPROG, COMPLETED };	/* the refund record */
mtype = { LIVE, ENDED, STALE };		/* its lease against the clock */
mtype = { NOENTRY, RESERVED, FOLDED };	/* an entry's state_K; FOLDED: refused or re-fenced as released */
mtype = { UNKNOWN, REFUNDED, DECLINED, MISMATCH };	/* the acquirer's refund, by key */

/* The refund records, by intent. owner: a worker (1, 2: intent 0's; 3:
 * intent 1's), RECONCILER, or 0. */
mtype rec[INTENTS] = ABSENT;
mtype lease[INTENTS] = LIVE;
byte owner[INTENTS];
byte attempt[INTENTS];
byte gen[INTENTS];
bool held[INTENTS];
bool leaseHasTransit[INTENTS];	/* a request sent under the current lease has not landed */
byte inTransitFor[INTENTS];	/* requests of the intent still in transit */

/* The balance item of the charge. An ended intent's entry is removed, and
 * the watermarks raised. */
byte remaining = CHARGED;
byte reserved = 0;
byte refunded = 0;
mtype state[KEYS] = NOENTRY;
byte fence[KEYS];		/* 0: absent */
byte amt[KEYS];
byte releasedThrough = 0;	/* released_through: 0 none */
byte releases[KEYS];		/* times the entry was given back (a ghost: asserted, never read) */
bool succeeded[KEYS];		/* ghost: the entry was folded by its success */

/* The clock: each claim of a record (and the competitor's) takes the next
 * tick, so a higher one was claimed later. A reservation's write carries
 * the time it was issued (its stamp), and folded_at is raised to the time
 * of each fold; all that matters of a stamp is whether a fold came after
 * it, so the model keeps that instead of the times: stamped[k], the
 * reservation of key k was issued (one per key: only a first attempt
 * reserves), and passed[k], a fold was made after it (folded_at >= its
 * stamp). A clock that runs behind, and the floor that makes it safe, are
 * model/capture.pml's to check (its -DNO_FLOOR). */
byte claimAt[KEYS];
byte tick = 0;
bool stamped[KEYS];
bool passed[KEYS];

/* The late reservation write: its key and fence, once in a run. It lands
 * at any moment before a fold passes its stamp (the Acquirer process), or
 * right after that fold (landLate), or never. While its key holds an
 * entry it would be refused and change nothing, and after the fold every
 * condition that refuses it only grows stronger, so later moments add
 * nothing. */
byte lateKey = NONE;
byte lateFence;
bool lateUsed = false;
byte lateGot;

/* The acquirer, by downstream key. */
mtype acq[KEYS] = UNKNOWN;
byte acqTotal = 0;		/* units the acquirer has refunded */
byte acqKeys[INTENTS];		/* keys of the intent the acquirer has acted on */
byte transit[SENDERS + 1] = NONE;	/* the key a worker's request carries in transit */
byte reconcileFailures = 0;
bool garbled = false;		/* -DLATE_ACCEPT: the one garbled answer */
byte lateRow = 255;		/* -DLATE_ACCEPT: the key of an accept's row on its way (NONE) */

#define KEY(i) (i * MAXGEN + gen[i] - 1)	/* idem.downstreamKey: one per record */
#define INTENT(w) (w / 3)		/* a worker's intent */

/* Whether intent i's workers may crash, stall or lose an answer. */
#ifdef CALM1
#define MAYCRASH(i) (i == 0)
#else
#define MAYCRASH(i) true
#endif

/* A crash between two writes. The reconciler's (bounded) may happen
 * once in all, shared with its failed lookups, so it cannot fail
 * forever (liveness); a worker runs once and may crash anywhere. */
inline crash(i, bounded) {
	atomic {
		(bounded && reconcileFailures < 1) || (!bounded && MAYCRASH(i));
		if
		:: bounded -> reconcileFailures++
		:: else -> skip
		fi
	}
}

/* The invariants of the balance, after every step on it. */
#define BALANCED (remaining + reserved + refunded == CHARGED)

/* reserve (§7): no entry, the intent not folded, room (ROOM;
 * -DUNCONDITIONED_RESERVE drops it, and remaining floors at 0). FOLDED:
 * refused, the intent is released (refund.ErrReleased). */
#ifdef UNCONDITIONED_RESERVE
#define ROOM true
#else
#define ROOM (remaining >= WANT)
#endif
#define UNFOLDED(k) (claimAt[k] > releasedThrough && !passed[k])
inline reserve(k, a, result) {
	atomic {
		if
		:: state[k] == NOENTRY && UNFOLDED(k) && ROOM ->
			if
			:: remaining >= WANT -> remaining = remaining - WANT
			:: else -> remaining = 0
			fi;
			reserved = reserved + WANT; state[k] = RESERVED; fence[k] = a; amt[k] = WANT; result = RESERVED
		:: state[k] == NOENTRY && UNFOLDED(k) && !ROOM -> result = NOENTRY	/* 422 REFUND_EXCEEDS_CHARGE */
		:: state[k] == NOENTRY && !UNFOLDED(k) -> result = FOLDED
		:: state[k] == RESERVED && fence[k] == a -> result = RESERVED	/* this attempt's own write, answered late */
		:: else -> result = NONE	/* fenced out */
		fi
	}
}

/* forget: once a key's last reservation write has been decided, its
 * stamp matters no more (only a first attempt reserves, once): cleared,
 * so that states that differ only there are one. */
inline forget(k) {
	stamped[k] = false; passed[k] = false
}

/* landLate: the late write, if it is on its way, may land right after a
 * fold (the moment after which it can only be refused). */
inline landLate() {
	if
	:: lateKey != NONE && state[lateKey] == NOENTRY -> reserve(lateKey, lateFence, lateGot); forget(lateKey); lateKey = NONE; lateGot = 0
	:: true -> skip
	fi
}

/* fold: folded_at raised to the folder's clock, past every stamp issued
 * so far, and releasedThrough raised to the intent's claim time unless
 * byClaim is false (a first attempt's success: no earlier attempt of the
 * intent exists). Neither is ever lowered. */
inline fold(k, byClaim) {
	passed[0] = passed[0] || stamped[0];
	passed[1] = passed[1] || stamped[1];
	passed[2] = passed[2] || stamped[2];
	passed[3] = passed[3] || stamped[3];
	if
	:: byClaim && releasedThrough < claimAt[k] -> releasedThrough = claimAt[k]
	:: else -> skip
	fi;
	landLate()
}

/* Whether the item shows a fold of k already made: releasedThrough at its
 * claim, and folded_at past every stamp issued (a fold now would raise
 * neither, and dynamo.Balances.Refence writes nothing more). */
#define FOLDED_ALREADY(k) (claimAt[k] <= releasedThrough && (!stamped[0] || passed[0]) && (!stamped[1] || passed[1]) && \
	(!stamped[2] || passed[2]) && (!stamped[3] || passed[3]))

/* re-fence (§7), by a take-over: fence_K = a if below; no entry: the
 * intent is folded (no attempt reserved; after the fold none can). Two
 * writes, as dynamo.Balances.Refence makes them, anything between them:
 * the re-fence of an entry (or its refusal, which shows none), then the
 * fold conditioned on there being none; an entry that landed in between
 * (an earlier attempt's reservation) is re-fenced on the next round.
 * result is NOENTRY until decided. */
#ifdef NO_FOLD
#define FOLD(k) skip
#else
#define FOLD(k) fold(k, true)
#endif
inline refence(k, a, result) {
	result = NOENTRY;
	do
	:: atomic {
		if
		:: state[k] != NOENTRY && fence[k] < a -> fence[k] = a; result = state[k]
		:: state[k] != NOENTRY && fence[k] == a -> result = state[k]	/* its own write, answered again */
		:: state[k] != NOENTRY && fence[k] > a -> result = NONE	/* a later attempt took it */
		:: state[k] == NOENTRY && FOLDED_ALREADY(k) -> result = FOLDED	/* the refusal shows both watermarks past it */
		:: state[k] == NOENTRY && !FOLDED_ALREADY(k) -> skip	/* no entry: fold it (the fold writes) */
		fi
	   };
	   if
	   :: result != NOENTRY -> break
	   :: else -> skip
	   fi;
	   atomic {
		if
		:: state[k] == NOENTRY -> FOLD(k); result = FOLDED
#ifdef REFUSED_FOLD_RELEASES
		:: state[k] != NOENTRY && claimAt[k] <= releasedThrough -> result = FOLDED
		:: state[k] != NOENTRY && claimAt[k] > releasedThrough -> skip
#else
		:: else -> skip	/* an entry landed meanwhile: re-fence it */
#endif
		fi
	   };
	   if
	   :: result != NOENTRY -> break
	   :: else -> skip
	   fi
	od
}

/* succeed (§7): a reserved entry of this fence moves into the figures
 * and is folded (byClaim: raising releasedThrough too, unless a first
 * attempt). An intent with no entry has ended: the success is taken as
 * done already (the caller holds its row, written before the entry moves
 * and only from the acquirer's answer), and the ghost says that is true.
 * -DFOLD_NO_WATERMARK: the entry removed, no watermark raised. */
inline succeed(k, a, ok, byClaim) {
	atomic {
		if
		:: state[k] == RESERVED && fence[k] == a ->
			reserved = reserved - amt[k]; refunded = refunded + amt[k];
			state[k] = NOENTRY; fence[k] = 0; amt[k] = 0; succeeded[k] = true;
#ifndef FOLD_NO_WATERMARK
			fold(k, byClaim);
#endif
			ok = true
		:: state[k] == NOENTRY -> assert(succeeded[k]); ok = true	/* folded: done already */
		:: else -> ok = false
		fi;
		assert(BALANCED)
	}
}

/* release (§7): a reserved entry of this fence given back, removed and
 * folded; no entry (nothing reserved, or released already): folded.
 * -DNO_WATERMARK: a release that keeps nothing of the intent. */
#ifdef NO_WATERMARK
#define RELEASE_FOLD(k) skip
#else
#define RELEASE_FOLD(k) fold(k, true)
#endif
inline release(k, a, ok) {
	atomic {
		if
#ifdef RELEASE_UNFENCED
		:: state[k] == RESERVED ->
#else
		:: state[k] == RESERVED && fence[k] == a ->
#endif
			reserved = reserved - amt[k]; remaining = remaining + amt[k]; releases[k]++;
			state[k] = NOENTRY; fence[k] = 0; amt[k] = 0;
			RELEASE_FOLD(k);
			ok = true
		:: state[k] == NOENTRY -> RELEASE_FOLD(k); ok = true	/* nothing reserved, or folded already (a stale attempt's release after a success: its record's delete is fenced) */
		:: else -> ok = false	/* another attempt's */
		fi;
		assert(releases[k] <= 1);	/* an entry is given back at most once */
		assert(BALANCED)
	}
}

/* idem.Lease.Complete, fenced on the owner; COMPLETED is final for the key. */
inline completeRecord(i, me) {
	atomic {
		if
		:: rec[i] == INPROG && owner[i] == me ->
			assert(!held[i]);
			assert(state[KEY(i)] != RESERVED);	/* no reservation outlives its record */
			rec[i] = COMPLETED; owner[i] = 0
		:: else -> skip	/* idem.ErrLeaseLost */
		fi
	}
}

/* idem.Lease.Release and ReleaseReconciled: the record's delete, fenced. */
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

/* The refund rows, by key (with -DMISMATCHES, where the operator's void
 * can meet them): none, the row, or the voided marker that void-confirmed
 * puts at the row's key before it releases anything (refund.Ledger.Void).
 * A row's write (refund.Ledger.Write) takes a row already there, and
 * fails on the marker (refund.ErrVoided: it moves nothing); confirmed[k]
 * says a void-confirmed of k took effect, after which no row may land.
 * -DNO_VOID_MARKER: the void checks for a row and puts no marker. */
#ifdef MISMATCHES
#define ROWS
#endif
#define NOROW 0
#define ROW 1
#define VOIDM 2
byte row[KEYS];
bool confirmed[KEYS];
inline rowWrite(k, ok) {
#ifdef ROWS
	atomic {
		if
		:: row[k] == VOIDM -> ok = false
		:: else -> assert(!confirmed[k]); row[k] = ROW; ok = true	/* no row of a voided refund */
		fi
	}
#else
	ok = true
#endif
}

/* finish (§7, step 6; op.Store with the refund's Kept, Close and
 * Complete): the acquirer's answer under k, known. Refunded:
 * the refund row, then succeed, then complete. Declined: the row, then
 * release, then complete. A mismatch: hold, reservation kept. The row is
 * written once, from the acquirer's answer (rowWrite: refused by the
 * voided marker). It may crash before each write (a worker at will, the
 * reconciler bounded: crash) and then goes to out. With -DLATE_ACCEPT an
 * answer that disagreed although the acquirer's refund agrees (a garbled
 * answer) holds the record once, so that the operator's accept can find
 * agreeing terms. byClaim: the folds raise releasedThrough too (all but
 * a first attempt's success). */
inline finish(i, me, k, a, byClaim, bounded, out) {
	if
	:: atomic { acq[k] == MISMATCH && rec[i] == INPROG && owner[i] == me -> held[i] = true; lease[i] = ENDED }
	:: atomic { acq[k] == MISMATCH && !(rec[i] == INPROG && owner[i] == me) }	/* fenced out */
	:: crash(i, bounded); goto out
#ifdef LATE_ACCEPT
	:: atomic { acq[k] == REFUNDED && !garbled && rec[i] == INPROG && owner[i] == me -> garbled = true; held[i] = true; lease[i] = ENDED }; goto out
#endif
	:: acq[k] == REFUNDED -> rowWrite(k, ok);
		if
		:: ok -> succeed(k, a, ok, byClaim)
		:: else -> skip	/* the voided marker: nothing moves */
		fi
	:: acq[k] == DECLINED -> rowWrite(k, ok);
		if
		:: ok -> release(k, a, ok)
		:: else -> skip
		fi
	fi;
	if
	:: acq[k] == MISMATCH -> goto out
	:: !ok -> goto out	/* fenced out: another attempt finishes */
	:: ok -> skip
	fi;
	if
	:: crash(i, bounded); goto out
	:: completeRecord(i, me)
	fi
}

/* REISSUE_OK: a reservation refused only by its stamp may be issued
 * again (-DNO_REISSUE: never, for the largest runs). */
#ifdef NO_REISSUE
#define REISSUE_OK false
#else
#define REISSUE_OK !reissued
#endif

/* LATE_OK: the late write may still be scheduled (-DNO_LATE: never, for
 * the liveness runs, where a late write refused changes nothing). */
#ifdef NO_LATE
#define LATE_OK false
#else
#define LATE_OK !lateUsed
#endif

/* Whether a worker may still issue a write: it owns the record under a
 * live lease. */
#define ISSUABLE(i, me) (owner[i] == me && lease[i] == LIVE)

proctype Worker(byte i; byte me) {
	byte k, a, got;
	bool takenOver = false, ok, again = false, reissued = false;
	/* op.Frame.Claim (idem.Guard.Begin): the claim, or the fenced take-over. */
	atomic {
		if
		:: rec[i] == ABSENT && gen[i] < MAXGEN -> rec[i] = INPROG; owner[i] = me; attempt[i] = 1; gen[i]++;
			lease[i] = LIVE; leaseHasTransit[i] = false; a = 1; k = KEY(i); tick++; claimAt[k] = tick
		:: rec[i] == INPROG && !held[i] && lease[i] != LIVE -> owner[i] = me; attempt[i]++;
			lease[i] = LIVE; leaseHasTransit[i] = false; a = attempt[i]; takenOver = true; k = KEY(i)
		:: else -> goto done	/* a replay, 409 in flight, 503 held, or no more claims */
		fi
	}
	/* op.Run, with the refund's Attempt and Bound: a take-over re-fences
	 * the entry (Bound.Refence), then looks the refund up by key (Ask);
	 * it sends only a reservation an earlier attempt made (Bound.Unsent).
	 * A first attempt reserves (Bound.Reserve). */
	if
	:: takenOver ->
		if
		:: MAYCRASH(i) -> goto done	/* crash after the take-over */
		:: refence(k, a, got)
		fi;
		if
		:: got == NONE -> goto done
		:: acq[k] != UNKNOWN -> finish(i, me, k, a, true, false, done); goto done
		:: acq[k] == UNKNOWN && got == FOLDED -> deleteRecord(i, me); goto done	/* released: nothing sent */
		:: acq[k] == UNKNOWN && got == RESERVED -> skip
		fi
	:: else ->
		/* The reservation's write is issued while the lease lives (the
		 * invocation's deadline comes before its end, and the SDK issues
		 * no try after it), and carries the time it was issued at. A write
		 * refused only because a fold passed its stamp (refund.
		 * ErrStampPassed: another intent ended while it was on its way) is
		 * issued again with a new stamp, once here (refund.Service: up to
		 * MaxReservationTries); a stray try of the refused write would be
		 * refused for ever, and the model leaves it out. */
stamp:	if
		:: MAYCRASH(i) -> goto done	/* crash before reserving */
		:: atomic { ISSUABLE(i, me) -> stamped[k] = true }
		:: atomic { !ISSUABLE(i, me) } -> goto done	/* the invocation is over */
		fi;
		if
		:: MAYCRASH(i) ->	/* the store fails the reservation, its write perhaps still on its way (503) */
			atomic {
				if
				:: LATE_OK -> lateUsed = true; lateKey = k; lateFence = a
				:: else -> forget(k)	/* it never lands */
				fi
			};
			release(k, a, ok);
			if
			:: ok -> deleteRecord(i, me)
			:: else -> skip
			fi;
			goto done
		:: atomic {
			reserve(k, a, got);
			again = (got == FOLDED && claimAt[k] > releasedThrough && REISSUE_OK);
			if
#ifndef NO_LATE_DUP
			:: got == RESERVED && MAYCRASH(i) && LATE_OK -> lateUsed = true; lateKey = k; lateFence = a	/* retried by the SDK, its first try landed: the retry lands later (or never) */
#endif
			:: else -> forget(k)
			fi
		   }
		fi;
		if
		:: again -> atomic { again = false; reissued = true; got = 0 }; goto stamp
		:: else -> skip
		fi;
		/* The store fails at the reservation, its write perhaps landed (503
		 * SERVICE_UNAVAILABLE): nothing was sent, so the first attempt
		 * releases the entry (its reservation, or a fold), then the record. */
		if
		:: MAYCRASH(i) && got != NONE && got != FOLDED ->
			release(k, a, ok);
			if
			:: ok -> deleteRecord(i, me)
			:: else -> skip
			fi;
			goto done
		:: true -> skip
		fi;
		if
		:: got == NONE -> goto done
		:: got == FOLDED -> deleteRecord(i, me); goto done	/* refused: released; nothing reserved or sent (503) */
		:: got == NOENTRY -> completeRecord(i, me); goto done	/* 422 REFUND_EXCEEDS_CHARGE, final */
		:: got == RESERVED -> skip
		fi
	fi;
	/* Rule 3: send only with T + skew left on the lease (op.Send). */
	if
	:: atomic { owner[i] == me && lease[i] == LIVE && state[k] == RESERVED ->
		transit[me] = k; inTransitFor[i]++; leaseHasTransit[i] = true }
	:: atomic { owner[i] == me && lease[i] == LIVE };	/* acquirer.ErrNotSent: nothing sent */
#ifdef RELEASE_AMBIGUOUS
		release(k, a, ok);
#else
		if
		:: !takenOver -> release(k, a, ok)	/* rule 2: the first attempt, its own call sent nothing (op.Run's notSent: Bound.Release, then the key) */
		:: else -> goto done	/* after a take-over: 503 pending, for the reconciler */
		fi;
#endif
		if
		:: ok -> skip
		:: else -> goto done
		fi;
		if
		:: MAYCRASH(i) -> goto done	/* crash between the entry and the record */
		:: deleteRecord(i, me); goto done
		fi
	:: atomic { !(owner[i] == me && lease[i] == LIVE) } -> goto done	/* less than T + skew left: 503 pending */
	:: MAYCRASH(i) -> goto done	/* crash before sending */
	fi;
	if
	:: transit[me] == NONE -> finish(i, me, k, a, takenOver, false, done)	/* answered */
	:: atomic { MAYCRASH(i) && rec[i] == INPROG && owner[i] == me -> lease[i] = ENDED }	/* unknown: idem.Lease.Abandon, 503 pending */
	:: MAYCRASH(i) -> goto done	/* crash while waiting */
	fi;
done:	atomic { k = 0; a = 0; got = 0; ok = false; takenOver = false; again = false; reissued = false }	/* nothing more of it */
}

/* With -DCOMPETITOR, intent 1 is reduced to what matters to intent 0's
 * bound: a refund under its own key that reserves whenever there is room,
 * sends, and then succeeds or is declined (and released); or whose
 * reservation fails, so that it is folded having reserved nothing (the
 * watermark passing intent 0's claim while intent 0 still holds room). It has no
 * record to crash, so intent 0 can have a client's retry as well. */
proctype Competitor() {
	byte got;
	bool ok;
	atomic { tick++; claimAt[2] = tick };
	if
	:: true -> atomic { stamped[2] = true; reserve(2, 1, got); forget(2) }	/* issued and landed at once: only intent 0's writes land late */
	:: true -> atomic { stamped[2] = true; release(2, 1, ok); forget(2) }; goto out	/* its reservation failed without landing: folded */
	fi;
	if
	:: got == RESERVED ->
		atomic { transit[3] = 2; inTransitFor[1]++ };
		transit[3] == NONE;	/* answered */
		if
		:: acq[2] == REFUNDED -> succeed(2, 1, ok, false)
		:: acq[2] == DECLINED -> release(2, 1, ok)
		fi
	:: else -> skip	/* no room: 422, or released by a fold: 503 */
	fi;
out:	atomic { got = 0; ok = false }
}

/* The competitor's refund (key 2) is never answered on other terms: it
 * has no record to hold. */
#ifdef COMPETITOR
#define MISMATCHABLE(k) (k != 2)
#else
#define MISMATCHABLE(k) true
#endif

/* The acquirer: a request in transit lands; one refund per key, its
 * outcome fixed when it lands. Nothing lands under a key whose refund
 * the operator voided: the model assumes nothing of the acquirer's
 * memory of a voided key, so the void must wait until nothing is in
 * transit. */
bool voided[KEYS];
inline land(w) {
	k = transit[w]; i = INTENT(w);
	assert(!voided[k]);
	if
	:: acq[k] == UNKNOWN ->
		acqKeys[i]++;
		assert(acqKeys[i] <= 1);	/* an intent reaches the acquirer under one key */
		if
		:: acq[k] = REFUNDED; acqTotal = acqTotal + amt[k]
#ifndef NO_DECLINES
		:: acq[k] = DECLINED
#endif
#ifdef MISMATCHES
		:: MISMATCHABLE(k) -> acq[k] = MISMATCH; acqTotal = acqTotal + amt[k]	/* refunded, on terms nobody asked for */
#endif
		fi;
		assert(acqTotal <= CHARGED)	/* the acquirer's refunds never exceed the charge */
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
	bool landed;
end:	do
	:: atomic { transit[1] != NONE -> land(1) }
	:: atomic { transit[2] != NONE -> land(2) }
	:: atomic { transit[3] != NONE -> land(3) }
	:: atomic { lateKey != NONE && state[lateKey] == NOENTRY && !passed[lateKey] -> reserve(lateKey, lateFence, got); forget(lateKey); lateKey = NONE; got = 0 }	/* the late write lands before a fold passed its stamp (see landLate) */
#ifdef LATE_ACCEPT
	:: atomic { lateRow != NONE -> rowWrite(lateRow, landed); lateRow = NONE; landed = false }	/* an accept's row, landing late */
#endif
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

/* sweep.Sweeper flags, the reconciler (refund.Service.Reconcile) resolves:
 * take over (op.Settler.Stale), re-fence, look
 * up; found: finish; absent: release the entry, then the record. It may
 * crash between its writes (its lease ends; it comes back once stale). */
#ifndef NO_RECONCILER
active proctype Reconciler() {
	byte i, k, a, got;
	bool ok;
end:	do
	:: atomic {
		if
		:: rec[0] == INPROG && !held[0] && lease[0] == STALE -> i = 0
		:: rec[1] == INPROG && !held[1] && lease[1] == STALE -> i = 1
		fi;
		owner[i] = RECONCILER; attempt[i]++; lease[i] = LIVE; leaseHasTransit[i] = false; a = attempt[i]; k = KEY(i)
	   };
	   refence(k, a, got);
	   if
	   :: got == NONE -> goto next
	   :: else -> skip
	   fi;
	   if
	   :: acq[k] != UNKNOWN -> finish(i, RECONCILER, k, a, true, true, next)
	   :: atomic { acq[k] == UNKNOWN && reconcileFailures < 1 && owner[i] == RECONCILER -> reconcileFailures++; lease[i] = ENDED }	/* the lookup failed */
	   :: acq[k] == UNKNOWN ->
		release(k, a, ok);
		if
		:: ok ->
			if
			:: crash(i, true)	/* between the entry and the record */
			:: deleteRecord(i, RECONCILER)
			fi
		:: else -> skip
		fi
	   fi;
next:	   atomic { i = 0; k = 0; a = 0; got = 0; ok = false }
	od;
done:	skip
}
#endif

#ifdef MISMATCHES
#define OPERATOR 8
/* idemctl void-confirmed and accept, refund.Service.Settle in the frame
 * every operation settles in (op.Settler.Settle): the operator
 * settles a held record, and nothing else does. Both take the held lease
 * over (op.Settler.TakeOver) and re-fence the entry first. Accept
 * books only a lookup that agrees with the reservation; a key's answer is
 * fixed here, so a mismatch's never does, and the accept gives the lease
 * back, the record held (one whose lookup agrees runs finish, as the
 * reconciler's take-over does). Void-confirmed: the operator voided the
 * refund at the acquirer, once the lease ended more than T + skew ago
 * (STALE: nothing in transit; -DVOID_EARLY: as soon as it ended); the
 * entry is released, then the record removed. */
#ifdef VOID_EARLY
#define VOIDABLE(i) (lease[i] != LIVE)
#else
#define VOIDABLE(i) (lease[i] == STALE)
#endif
active proctype Operator() {
	byte i, k, a, got;
	bool ok, refused = false;	/* one refused accept in all bounds the attempts */
#ifdef LATE_ACCEPT
	bool accepted = false;		/* one agreeing accept in all */
#endif
end:	do
	:: atomic {
		if
		:: !refused && rec[0] == INPROG && held[0] && lease[0] != LIVE -> i = 0
		:: !refused && rec[1] == INPROG && held[1] && lease[1] != LIVE -> i = 1
		fi;
		refused = true;
		owner[i] = OPERATOR; attempt[i]++; lease[i] = LIVE; a = attempt[i]; k = KEY(i);
		refence(k, a, got);
		lease[i] = ENDED	/* accept refused: the lookup disagrees; the record stays held */
	   }
#ifdef LATE_ACCEPT
	/* An accept whose lookup agrees with the reservation: the row, then
	 * succeed, then the completion, which keeps the hold with the
	 * settlement; or its row's write is slow, and its invocation ends
	 * while the write is on its way (lateRow: it lands when it lands). */
	:: atomic {
		if
		:: !accepted && rec[0] == INPROG && held[0] && lease[0] != LIVE && acq[KEY(0)] == REFUNDED && !voided[KEY(0)] && row[KEY(0)] != VOIDM -> i = 0
		:: !accepted && rec[1] == INPROG && held[1] && lease[1] != LIVE && acq[KEY(1)] == REFUNDED && !voided[KEY(1)] && row[KEY(1)] != VOIDM -> i = 1
		fi;
		accepted = true;
		owner[i] = OPERATOR; attempt[i]++; lease[i] = LIVE; a = attempt[i]; k = KEY(i);
		refence(k, a, got)
	   };
	   if
	   :: got != RESERVED -> atomic { lease[i] = ENDED }	/* the entry does not hold it: refused */
	   :: got == RESERVED ->
		if
		:: atomic { lateRow = k; lease[i] = ENDED }	/* the row on its way; the invocation ends */
		:: rowWrite(k, ok);
		   if
		   :: ok -> succeed(k, a, ok, true)
		   :: else -> skip
		   fi;
		   atomic {
			if
			:: ok && rec[i] == INPROG && owner[i] == OPERATOR -> held[i] = false; rec[i] = COMPLETED; owner[i] = 0
			:: else -> lease[i] = ENDED	/* refused or fenced: the record stays held */
			fi
		   }
		fi
	   fi
#endif
	:: atomic {
		if
		:: rec[0] == INPROG && held[0] && VOIDABLE(0) && !voided[KEY(0)] -> i = 0
		:: rec[1] == INPROG && held[1] && VOIDABLE(1) && !voided[KEY(1)] -> i = 1
		fi;
		owner[i] = OPERATOR; attempt[i]++; lease[i] = LIVE; a = attempt[i]; k = KEY(i);
		if
		:: acq[k] == MISMATCH || acq[k] == REFUNDED -> acqTotal = acqTotal - amt[k]	/* voided at the acquirer */
		:: else -> skip
		fi;
		if
		:: acq[k] != UNKNOWN -> acqKeys[i]--	/* the intent's refund stands no more: a retry may refund anew */
		:: else -> skip
		fi;
		voided[k] = true
	   };
	   /* The voided marker first, refused by a row (a person reconciles
	    * that one: the record stays held); then the entry, then the record. */
	   atomic {
		if
		:: row[k] == ROW -> lease[i] = ENDED; ok = false
		:: else ->
#ifndef NO_VOID_MARKER
			row[k] = VOIDM;
#endif
			confirmed[k] = true; ok = true
		fi
	   };
	   if
	   :: ok ->
		refence(k, a, got);
		release(k, a, ok);
		assert(ok);	/* nobody else moves a held record's entry */
		atomic { held[i] = false; deleteRecord(i, OPERATOR) }
	   :: else -> skip
	   fi
	od
}
#endif

/* When everything has stopped: every refund ended succeeded, declined,
 * released or held; the balance adds up; what is reserved belongs to held
 * records; the acquirer refunded no more than the balance says. */
active proctype Settled() {
	byte k;
	timeout ->
	assert(rec[0] != INPROG || held[0]);
	assert(rec[1] != INPROG || held[1]);
	assert(BALANCED);
	for (k : 0 .. KEYS - 1) {
		assert(state[k] != RESERVED || held[k / MAXGEN] && k == KEY(k / MAXGEN))	/* no reservation outlives its record */
	}
	assert(acqTotal <= refunded + reserved)
}

init {
	byte i;
	atomic {
		run Worker(0, 1);
#ifdef COMPETITOR
		run Worker(0, 2);
		gen[1] = 1; run Competitor()
#else
		run Worker(1, 3)
#endif
	}
}

ltl ends { [] ((rec[0] == INPROG && !held[0] -> <> (rec[0] != INPROG || held[0])) &&
               (rec[1] == INPROG && !held[1] -> <> (rec[1] != INPROG || held[1]))) }
