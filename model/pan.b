	switch (t->back) {
	default: Uerror("bad return move");
	case  0: goto R999; /* nothing to undo */

		 /* CLAIM settles */
;
		;
		;
		;
		
	case 5: // STATE 13
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* CLAIM atMostOne */
;
		
	case 6: // STATE 1
		goto R999;

	case 7: // STATE 10
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC :init: */

	case 8: // STATE 1
		;
		((P5 *)_this)->i = trpt->bup.oval;
		;
		goto R999;

	case 9: // STATE 4
		;
		((P5 *)_this)->i = trpt->bup.ovals[1];
		now.transit[ Index(((P5 *)_this)->i, 4) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 10: // STATE 10
		;
		((P5 *)_this)->i = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 12: // STATE 12
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 13: // STATE 13
		;
		((P5 *)_this)->i = trpt->bup.oval;
		;
		goto R999;

	case 14: // STATE 20
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Settled */
;
		;
		;
		;
		;
		;
		
	case 18: // STATE 4
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Reconciler */

	case 19: // STATE 5
		;
		now.leaseHasTransit = trpt->bup.ovals[3];
		now.lease = trpt->bup.ovals[2];
		attempt = trpt->bup.ovals[1];
		now.owner = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 20: // STATE 6
		;
		((P3 *)_this)->k = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 22: // STATE 16
		;
		now.owner = trpt->bup.ovals[3];
		now.storedKey = trpt->bup.ovals[2];
		now.stored = trpt->bup.ovals[1];
		now.rec = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;
;
		
	case 23: // STATE 20
		goto R999;
;
		
	case 24: // STATE 18
		goto R999;

	case 25: // STATE 25
		;
		now.owner = trpt->bup.ovals[2];
		now.rec = trpt->bup.ovals[1];
	/* 0 */	((P3 *)_this)->k = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 26: // STATE 29
		;
		now.lease = trpt->bup.ovals[1];
		now.reconcileFailures = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 27: // STATE 38
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Clock */

	case 28: // STATE 2
		;
		now.lease = trpt->bup.oval;
		;
		goto R999;

	case 29: // STATE 5
		;
		now.lease = trpt->bup.oval;
		;
		goto R999;

	case 30: // STATE 10
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Acquirer */

	case 31: // STATE 2
		;
		((P1 *)_this)->i = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		
	case 34: // STATE 13
		;
		now.inTransit = trpt->bup.ovals[3];
		now.transit[ Index(((P1 *)_this)->i, 4) ] = trpt->bup.ovals[2];
		now.authorizations = trpt->bup.ovals[1];
		now.authorized[ Index(now.transit[ Index(((P1 *)_this)->i, 4) ], 8) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 35: // STATE 13
		;
		now.inTransit = trpt->bup.ovals[1];
		now.transit[ Index(((P1 *)_this)->i, 4) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 36: // STATE 13
		;
		now.inTransit = trpt->bup.ovals[1];
		now.transit[ Index(((P1 *)_this)->i, 4) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 37: // STATE 19
		;
		((P1 *)_this)->i = trpt->bup.oval;
		;
		goto R999;

	case 38: // STATE 19
		;
		((P1 *)_this)->i = trpt->bup.oval;
		;
		goto R999;

	case 39: // STATE 26
		;
		now.leaseHasTransit = trpt->bup.oval;
		;
		goto R999;
;
		
	case 40: // STATE 30
		goto R999;
;
		
	case 41: // STATE 28
		goto R999;

	case 42: // STATE 35
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Worker */

	case 43: // STATE 7
		;
		now.leaseHasTransit = trpt->bup.ovals[5];
		now.lease = trpt->bup.ovals[4];
		now.gen = trpt->bup.ovals[3];
		attempt = trpt->bup.ovals[2];
		now.owner = trpt->bup.ovals[1];
		now.rec = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 6);
		goto R999;
;
		
	case 44: // STATE 19
		goto R999;

	case 45: // STATE 13
		;
		((P0 *)_this)->takenOver = trpt->bup.ovals[4];
		now.leaseHasTransit = trpt->bup.ovals[3];
		now.lease = trpt->bup.ovals[2];
		attempt = trpt->bup.ovals[1];
		now.owner = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;
;
		
	case 46: // STATE 14
		goto R999;
;
		
	case 47: // STATE 16
		goto R999;

	case 48: // STATE 21
		;
		((P0 *)_this)->k = trpt->bup.oval;
		;
		goto R999;

	case 49: // STATE 27
		;
	/* 0 */	((P0 *)_this)->takenOver = trpt->bup.oval;
		;
		;
		goto R999;

	case 50: // STATE 34
		;
		now.owner = trpt->bup.ovals[4];
		now.storedKey = trpt->bup.ovals[3];
		now.stored = trpt->bup.ovals[2];
		now.rec = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->me = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;
;
		
	case 51: // STATE 38
		goto R999;
;
		
	case 52: // STATE 36
		goto R999;

	case 53: // STATE 49
		;
		now.leaseHasTransit = trpt->bup.ovals[2];
		now.inTransit = trpt->bup.ovals[1];
		now.transit[ Index(((P0 *)_this)->me, 4) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 54: // STATE 53
		;
		now.owner = trpt->bup.ovals[3];
		now.rec = trpt->bup.ovals[2];
	/* 1 */	((P0 *)_this)->takenOver = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->me = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;
;
		
	case 55: // STATE 57
		goto R999;
;
		
	case 56: // STATE 55
		goto R999;
;
		;
		
	case 58: // STATE 70
		;
		now.owner = trpt->bup.ovals[4];
		now.storedKey = trpt->bup.ovals[3];
		now.stored = trpt->bup.ovals[2];
		now.rec = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->me = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;
;
		
	case 59: // STATE 74
		goto R999;
;
		
	case 60: // STATE 72
		goto R999;

	case 61: // STATE 78
		;
		now.lease = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->me = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 62: // STATE 84
		;
		p_restor(II);
		;
		;
		goto R999;
	}

