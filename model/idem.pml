/*
 * The idempotency protocol of DESIGN §4 for one intent: three client
 * attempts (workers) that may crash at any step or stall past their lease,
 * the sweeper with the reconciler, and an acquirer that deduplicates by key
 * and holds requests in transit. Time is abstract: a lease is LIVE, ENDED
 * (less than T + skew ago) or STALE (longer ago).
 *
 * Each step names the Go function it stands for.
 *
 * model/check.sh runs it (make model, and make test). Compile-time switches
 * drop one rule each; each yields a counterexample:
 *   -DDROP_RULE1  every take-over sends a downstream key of its own
 *   -DDROP_RULE2  a taken-over attempt releases when its own call sent nothing
 *   -DDROP_RULE3  workers send without T + skew left on their lease, and the
 *                 reconciler acts on a lease that just ended
 *   -DLOOKUP_FIRST the reconciler asks the acquirer before its take-over and
 *                 acts on that answer after it (idemctl release's old order,
 *                 with a person confirming in between)
 *   -DCOMPLETE_FIRST a completion updates the record before it writes the
 *                 ledger row, so a crash between the two leaves a COMPLETED
 *                 record with no row (the property ledgerFirst)
 *   -DNO_HOLD     a worker stores an answer that disagrees with the request
 *                 as the charge's outcome
 *   -DVOID_EARLY  the operator's void-confirmed releases a held record as
 *                 soon as its lease ended, not T + skew later: a request of
 *                 an earlier attempt, still in transit, lands after the void
 *   -DVOID_WITH_ROW void-confirmed releases a held record that already has
 *                 its ledger row (an earlier attempt's answer agreed): the
 *                 retry writes a second row for the same intent
 *   -DNO_VOID_MARKER void-confirmed releases without first putting the
 *                 voided marker at the row's key: a row write still on its
 *                 way (a zombie worker's, with -DLYING_LOOKUPS; an
 *                 accept's, with -DLATE_ACCEPT) lands after the void, a row
 *                 for a charge the operator voided
 *
 * A write may conflict (a strongly consistent global table's
 * ReplicatedWriteConflictException, idem.ErrWriteConflict): it fails with
 * no effect. CONFLICTS of them (1 unless defined) may happen, anywhere:
 * the claim and a take-over answer in flight, every other write is given
 * up after its retries (idem.RetryConflicts) with the record as it was.
 *
 * The acquirer's answer is evidence: an authorization may disagree with
 * the request (other terms, or a body that contradicts its status), fixed
 * per key when it is made (mismatch[k]). With -DLYING_LOOKUPS (checked with
 * two workers, to keep the state space small) a lookup may also disagree
 * on its own after an earlier attempt's answer agreed and its ledger row
 * was written: a record held with a row, which void-confirmed must refuse,
 * and a zombie's row write that lands after a void. A worker or the
 * reconciler that reads such an answer holds the record
 * (idem.Lease.HoldForOperator): it stays in flight, is never taken over
 * or reconciled, and only the operator settles it, by accept (complete
 * with the acquirer's terms) or void-confirmed (the operator voided it at
 * the acquirer; release). The model assumes nothing of the acquirer's memory of a voided key: a
 * request that lands under it afterwards may charge again, which is why
 * void-confirmed waits out the in-transit bound.
 *
 * A row write is fenced by no lease, and may land at any time after its
 * writer had the acquirer's answer: a worker's, however long after its
 * lease ended (a delay ahead of the table outlives the invocation that
 * sent it), and with -DLATE_ACCEPT (checked with two workers and lying
 * lookups) an operator's accept whose row lands after its invocation
 * ended, once. Markers at the row's key order it against the operator:
 * the hold puts a held marker there (if the key holds nothing), which a
 * row write deletes and replaces; void-confirmed first puts the voided
 * marker (refused when a row is there) and only then releases, and a row
 * write that meets it fails and leaves the record as it is.
 */

#ifndef WORKERS
#define WORKERS 3
#endif
#ifndef CONFLICTS
#define CONFLICTS 1
#endif
#define NONE 255
#define RECONCILER 4
#define OPERATOR 5

mtype = { ABSENT, INPROG, COMPLETED };	/* idem.Record.Status (ABSENT: no live record) */
mtype = { LIVE, ENDED, STALE };		/* the lease against the clock */
#define AGREES 1
#define DISAGREES 2
#define NOTFOUND 3
#define FAILED 4

mtype rec = ABSENT;
mtype lease = LIVE;
byte owner = 0;		/* lease_token: 0 none, 1..3 a worker, 4 the reconciler, 5 the operator */
byte attempt = 0;	/* idem.Record.Attempt */
byte gen = 0;		/* records claimed so far */

/* The acquirer, by downstream key: key = 2 * record + (a take-over's own key
 * when rule 1 is dropped). */
bool authorized[8];
byte authorizations = 0;
byte inTransit = 0;
byte transit[WORKERS + 1];	/* the key each worker's request carries while in transit */
bool leaseHasTransit = false;	/* a request sent under the current lease has not landed */

bool ledger[8];		/* the ledger rows, by downstream key (the charge id is derived from it) */
#define NOMARK 0
#define HELDM 1		/* the held marker (charge.Ledger.Hold) */
#define VOIDM 2		/* the voided marker (charge.Ledger.Void) */
byte mark[8];		/* the marker at the row's key, by downstream key */
bool mismatch[8];	/* the authorization under the key disagrees with the request */
byte rows = 0;		/* ledger rows written, over every key */
bool voided[8];		/* the operator voided the authorization under the key */
bool held = false;	/* idem.Record.Held: the record is held for the operator */
byte heldKey = NONE;
bool stored = false;
byte storedKey = NONE;
byte reconcileFailures = 0;
byte conflicts = 0;	/* writes refused with idem.ErrWriteConflict so far */
byte delays = 0;	/* accepts whose row write outlived their invocation so far */

/* The guard of a conflict: a write that fails with no effect. */
#define CONFLICT	(conflicts < CONFLICTS) -> conflicts++

inline keyOf(k) {
#ifdef DROP_RULE1
	k = 2 * gen + (attempt > 1)
#else
	k = 2 * gen	/* idem.downstreamKey: one per record, every attempt */
#endif
}

/* A row lands under key k. */
inline ledgerRow(k) {
	atomic {
		assert(!voided[k]);	/* no row for a charge the operator voided */
		assert(authorized[k]);	/* no ledger row without an authorization behind it */
		if
		:: !ledger[k] -> ledger[k] = true; rows++
		:: else -> skip
		fi;
		assert(rows <= 1)	/* one intent, one ledger row */
	}
}

/* charge.Ledger.Write: a PutItem if the key holds nothing. An existing
 * row is this intent's, written by an earlier attempt from the same
 * authorization: it is taken as it is. A held marker gives way: it is
 * deleted (if still one), then the row put. A voided marker refuses the
 * row (charge.ErrVoided), and the writer leaves the record as it is. No
 * lease fence: the write may land at any time after the answer. ok: the
 * row is there. The delete and the put are one step here: what may come
 * between them (a void's marker, a hold's) makes the put fail as the
 * voided marker does, and the writer then leaves the record as it is. */
inline rowWrite(k, ok) {
	atomic {
		if
		:: ledger[k] -> ok = true
		:: !ledger[k] && mark[k] != VOIDM -> mark[k] = NOMARK; ledgerRow(k); ok = true
		:: !ledger[k] && mark[k] == VOIDM -> ok = false
		fi
	}
}

/* idem.Lease.Complete: one UpdateItem fenced on the lease token. */
inline completeRecord(me, k) {
	atomic {
		if
		:: rec == INPROG && owner == me ->
			assert(!stored);	/* a stored response never changes */
			assert(authorized[k]);	/* it is the acquirer's outcome */
			assert(!mismatch[k] || me == OPERATOR);	/* a mismatch is reported as a charge only on the operator's accept */
			assert(!held || me == OPERATOR);	/* a held record is settled only by the operator */
#ifndef COMPLETE_FIRST
			assert(ledger[k]);	/* the ledger row was written first */
#endif
			rec = COMPLETED; stored = true; storedKey = k; owner = 0; held = false
		:: rec == INPROG && owner == me && CONFLICT	/* refused after its retries: in flight as it was */
		:: else -> skip	/* idem.ErrLeaseLost: the worker re-reads; answers from the record */
		fi
	}
}

/* charge.Service.hold: the answer disagrees. charge.Ledger.Hold puts the
 * held marker at the row's key if it holds nothing (a row there is
 * fine), then op.Frame.Hold (idem.Lease.HoldForOperator): the lease ends now, the record
 * stays in flight, held. */
inline hold(me, k) {
	atomic {
		if
		:: rec == INPROG && owner == me ->	/* the marker and the hold, one step here: no step reads a held marker but to replace it */
			if
			:: !ledger[k] && mark[k] == NOMARK -> mark[k] = HELDM
			:: else -> skip
			fi;
			held = true; heldKey = k; lease = ENDED
		:: rec == INPROG && owner == me && CONFLICT	/* not held: in flight; a retry or the reconciler meets the answer again */
		:: else -> skip	/* idem.ErrLeaseLost */
		fi
	}
}

/* op.Store for a charge's worker: the ledger row (op.WriteRow), then the record; it
 * may crash between the two (the record stays in flight for a retry or the
 * reconciler, which find the row and reuse it). */
inline finish(me, k) {
#ifndef NO_HOLD
	if
	:: mismatch[k] -> hold(me, k); goto done	/* acquirer.CheckTerms, acquirer.ErrMismatch: no ledger row */
	:: !mismatch[k] -> skip
	fi;
#endif
#ifdef COMPLETE_FIRST
	atomic {	/* with no crash, no state between the two writes is seen */
		completeRecord(me, k);
		if
		:: goto done	/* crash between the writes: the only way to lose the row */
		:: rowWrite(k, wrote)
		fi
	}
#else
	if
	:: rowWrite(k, wrote);	/* whenever it lands: a worker may stall here past its lease */
	   if
	   :: !wrote -> goto done	/* charge.ErrVoided: the record left as it is */
	   :: else -> wrote = false
	   fi
	:: atomic { CONFLICT };	/* the row refused after its retries: pending, idem.Lease.Abandon (or its own conflict) */
	   if
	   :: atomic { rec == INPROG && owner == me -> lease = ENDED }
	   :: skip
	   fi;
	   goto done
	fi;
	if
	:: goto done	/* crash between the writes */
	:: skip
	fi;
	completeRecord(me, k)
#endif
}

proctype Worker(byte me) {
	byte k;
	bool takenOver = false;
	bool wrote;
	/* op.Frame.Claim (idem.Guard.Begin): the conditional PutItem, or the fenced take-over. */
	atomic {
		if
		:: rec == ABSENT -> rec = INPROG; owner = me; attempt = 1; gen++; lease = LIVE; leaseHasTransit = false
		:: rec == INPROG && !held && lease != LIVE -> owner = me; attempt++; lease = LIVE; leaseHasTransit = false; takenOver = true
		:: rec == COMPLETED -> goto done	/* replay of the stored response */
		:: rec == INPROG && !held && lease == LIVE -> goto done	/* 409 in flight: retryable */
		:: (rec == ABSENT || (rec == INPROG && !held && lease != LIVE)) && CONFLICT -> goto done	/* the claim or take-over conflicted: 409 in flight */
		:: rec == INPROG && held -> goto done	/* idem.ErrHeld: 503 pending, nothing sent */
		fi
	}
	keyOf(k);
	if
	:: goto done	/* crash after the claim */
	:: skip
	fi;
	/* op.Run, every operation's attempt: after a take-over, Ask (the lookup by downstream key) first. */
	if
	:: takenOver && authorized[k] -> finish(me, k); goto done
	:: else -> skip
	fi;
	/* op.Send (idem.Lease.SendContext, rule 3), then acquirerhttp.Client.Authorize. */
	if
	:: atomic { owner == me && lease == LIVE -> transit[me] = k; inTransit++; leaseHasTransit = true }
#ifdef DROP_RULE3
	:: atomic { transit[me] = k; inTransit++ }	/* stalled past its lease, sends anyway */
#endif
	:: atomic {	/* acquirer.ErrNotSent (also a 401 that stands, resent once through the same lease check) → op.Run's notSent → op.Frame.Release (idem.Lease.Release) */
		if
#ifdef DROP_RULE2
		:: rec == INPROG && owner == me -> assert(!held); rec = ABSENT; owner = 0
#else
		:: rec == INPROG && owner == me && !takenOver -> assert(!held); rec = ABSENT; owner = 0
#endif
		:: rec == INPROG && owner == me && CONFLICT	/* the release refused: in flight until its lease ends */
		:: else -> skip	/* after a take-over the record stays in flight */
		fi
	   }; goto done
	:: goto done	/* crash before sending */
	fi;
	if
	:: transit[me] == NONE -> finish(me, k)	/* answered */
	:: atomic { rec == INPROG && owner == me -> lease = ENDED }	/* unknown: idem.Lease.Abandon */
	:: goto done	/* crash while waiting */
	fi;
done:	skip
}

/* sandbox.Server.record: a request in transit lands; one authorization per key. */
active proctype Acquirer() {
	byte i;
end:	do
	:: atomic {
		inTransit > 0 ->
		for (i : 1 .. WORKERS) {
			if
			:: transit[i] != NONE ->
				assert(!voided[transit[i]]);	/* nothing lands under a key the operator voided */
				if
				:: !authorized[transit[i]] -> authorized[transit[i]] = true; authorizations++;
					if
					:: mismatch[transit[i]] = true	/* on terms nobody asked for */
					:: skip
					fi
				:: else -> skip
				fi;
				transit[i] = NONE; inTransit--; break
			:: else -> skip
			fi
		}
		if
		:: inTransit == 0 -> leaseHasTransit = false
		:: else -> skip
		fi
	   }
	od
}

/* The clock. Under rule 3 a request sent with T + skew left lands before its
 * lease ends, and a lease turns STALE T + skew after its end, when nothing
 * can be in transit any more. */
active proctype Clock() {
end:	do
#ifdef DROP_RULE3
	:: atomic { rec == INPROG && lease == LIVE -> lease = ENDED }
#else
	:: atomic { rec == INPROG && lease == LIVE && !leaseHasTransit -> lease = ENDED }
#endif
	:: atomic { rec == INPROG && lease == ENDED && inTransit == 0 -> lease = STALE }
	od
}

/* sweep.Sweeper.Run flags, charge.Service.Reconcile resolves:
 * op.Settler.Stale (idem.Guard.TakeOverStale), acquirer Lookup, complete or
 * ReleaseReconciled.
 * idemctl reconcile and release run the same charge.Service.Reconcile.
 * -DNO_RECONCILER removes it: the control of the liveness property. */
#ifndef NO_RECONCILER
active proctype Reconciler() {
	byte k;
	byte answer = NONE;
	bool wrote;
#ifdef LOOKUP_FIRST
	bool seen;
end:	do
	:: atomic { rec == INPROG && !held -> keyOf(k); seen = authorized[k] };	/* the acquirer says, then a person reads */
	   if
	   :: atomic { rec == INPROG && !held && lease == STALE -> owner = RECONCILER; attempt++; lease = LIVE; leaseHasTransit = false };
	      if
	      :: seen && mismatch[k] -> hold(RECONCILER, k)
	      :: seen && !mismatch[k] -> rowWrite(k, wrote); completeRecord(RECONCILER, k)
	      :: atomic { !seen && rec == INPROG && owner == RECONCILER -> rec = ABSENT; owner = 0 }	/* released on the old answer */
	      :: else -> skip
	      fi
	   :: else -> skip
	   fi
	od
#else
end:	do
	:: atomic {
#ifdef DROP_RULE3
		rec == INPROG && !held && lease != LIVE ->
#else
		rec == INPROG && !held && lease == STALE ->
#endif
		owner = RECONCILER; attempt++; lease = LIVE; leaseHasTransit = false; keyOf(k);
		if	/* the lookup's answer, and the row of one that agrees */
		:: authorized[k] && !mismatch[k] -> rowWrite(k, wrote); answer = AGREES	/* one step: nothing here can hold or void its record meanwhile */
		:: authorized[k] && mismatch[k] -> answer = DISAGREES
#ifdef LYING_LOOKUPS
		:: authorized[k] && !mismatch[k] -> answer = DISAGREES	/* this lookup alone disagrees; a worker's take-over lookup that does is not modelled (chargetest's AHeldRecordWithALedgerRow plays it) */
#endif
		:: !authorized[k] -> answer = NOTFOUND
		:: reconcileFailures < 2 -> answer = FAILED
		fi
	   };
	   if
	   :: answer == AGREES ->
	      if
	      :: completeRecord(RECONCILER, k)
	      :: atomic { reconcileFailures < 2 && rec == INPROG && owner == RECONCILER -> reconcileFailures++; lease = ENDED }	/* the completion failed after the row */
	      fi
	   :: answer == DISAGREES -> hold(RECONCILER, k)
	   :: atomic { answer == NOTFOUND && rec == INPROG && owner == RECONCILER -> assert(!held); rec = ABSENT; owner = 0 }
	   :: atomic { answer == NOTFOUND && rec == INPROG && owner == RECONCILER && CONFLICT }	/* ReleaseReconciled refused: in flight again once its lease ends */
	   :: atomic { answer == FAILED && rec == INPROG && owner == RECONCILER -> reconcileFailures++; lease = ENDED }	/* lookup failed */
	   :: else -> skip
	   fi;
	   answer = NONE
	od
#endif
}
#endif

/* idemctl void-confirmed and accept, charge.Service.Settle in the frame
 * every operation settles in (op.Settler.Settle): the operator
 * settles a held record, and nothing else does. Accept takes the held
 * lease over (op.Settler.TakeOver, idem.Guard.TakeOverHeld), asks the acquirer (the
 * authorization the hold was about), writes the row and completes with
 * the acquirer's own terms; with -DLATE_ACCEPT its row write may outlive
 * the accept's invocation and land later (once, DELAY). Void-confirmed
 * voids the authorization at the acquirer, once the lease ended more than
 * T + skew ago (STALE: nothing in transit; -DVOID_EARLY: as soon as it
 * ended), puts the voided marker at the row's key (charge.Ledger.Void:
 * refused when a row is there), and then releases the record. The code
 * writes the decision with the take-over (Hold.Settling) and a release
 * marker before the delete: both record who decided, and neither is read
 * by any step that charges, so the release below stays one atomic step. */
#define DELAY	(delays < 1) -> delays++

inline voidRelease(k) {
	if
	:: authorized[k] -> authorized[k] = false; authorizations--
	:: else -> skip
	fi;
	voided[k] = true; rec = ABSENT; held = false; owner = 0
}

active proctype Operator() {
	byte k;
	byte late = NONE;	/* an accept's row write still on its way */
	bool wrote;
end:	do
	:: atomic { held && rec == INPROG && lease != LIVE && late == NONE && mark[heldKey] != VOIDM ->	/* charge.ErrVoided: a voided intent is not accepted */
		owner = OPERATOR; attempt++; lease = LIVE; leaseHasTransit = false; k = heldKey };
	   if	/* accept: the lookup in the take-over's step, then the row, then the record */
	   :: rowWrite(k, wrote);
	      if
	      :: wrote -> completeRecord(OPERATOR, k)
	      :: else -> skip	/* charge.ErrVoided */
	      fi
	   :: atomic { CONFLICT }	/* the row refused: the accept fails, the record held as it was */
#ifdef LATE_ACCEPT
	   :: atomic { DELAY; late = k }	/* the invocation ends with its row write on its way */
#endif
	   fi
	:: late != NONE -> rowWrite(late, wrote); late = NONE	/* the late row lands */
	:: atomic {
#ifdef VOID_EARLY
		held && rec == INPROG && lease != LIVE ->
#elif defined(VOID_WITH_ROW)
		held && rec == INPROG && lease == STALE ->
#else
		held && rec == INPROG && lease == STALE && !ledger[heldKey] ->	/* charge.ErrLedgerRowExists */
#endif
		k = heldKey;
#ifdef NO_VOID_MARKER
		voidRelease(k)
	   }
#else
		mark[k] = VOIDM	/* over nothing, the held marker, or its own */
	   };
	   if
	   :: atomic { held && rec == INPROG && heldKey == k -> voidRelease(k) }	/* idem.Lease.VoidConfirmed */
	   :: atomic { CONFLICT }	/* the release refused: held with its marker; a void again releases it */
	   fi
#endif
	od
}

/* When everything has stopped: nothing in flight, and no charge lost — an
 * authorization exists only as the stored response. */
active proctype Settled() {
	timeout ->
	assert(rec != INPROG);
	assert(authorizations == 0 || (stored && authorized[storedKey]));
	assert(!stored || ledger[storedKey])	/* every completed record has its ledger row */
}

init {
	byte i;
	atomic {
		for (i : 1 .. WORKERS) { transit[i] = NONE }
		for (i : 1 .. WORKERS) { run Worker(i) }
	}
}

ltl atMostOne { [] (authorizations <= 1) }
ltl settles { [] (rec == INPROG -> <> (rec != INPROG)) }
ltl ledgerFirst { [] (rec == COMPLETED -> ledger[storedKey]) }
