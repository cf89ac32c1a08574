#define rand	pan_rand
#define pthread_equal(a,b)	((a)==(b))
#if defined(HAS_CODE) && defined(VERBOSE)
	#ifdef BFS_PAR
		bfs_printf("Pr: %d Tr: %d\n", II, t->forw);
	#else
		cpu_printf("Pr: %d Tr: %d\n", II, t->forw);
	#endif
#endif
	switch (t->forw) {
	default: Uerror("bad forward move");
	case 0:	/* if without executable clauses */
		continue;
	case 1: /* generic 'goto' or 'skip' */
		IfNotBlocked
		_m = 3; goto P999;
	case 2: /* generic 'else' */
		IfNotBlocked
		if (trpt->o_pm&1) continue;
		_m = 3; goto P999;

		 /* CLAIM settles */
	case 3: // STATE 1 - _spin_nvr.tmp:12 - [((!(!((rec==INPROG)))&&!((rec!=INPROG))))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[7][1] = 1;
		if (!(( !( !((now.rec==2)))&& !((now.rec!=2)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 4: // STATE 8 - _spin_nvr.tmp:17 - [(!((rec!=INPROG)))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported8 = 0;
			if (verbose && !reported8)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported8 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported8 = 0;
			if (verbose && !reported8)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported8 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[7][8] = 1;
		if (!( !((now.rec!=2))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 5: // STATE 13 - _spin_nvr.tmp:19 - [-end-] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported13 = 0;
			if (verbose && !reported13)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported13 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported13 = 0;
			if (verbose && !reported13)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported13 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[7][13] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* CLAIM atMostOne */
	case 6: // STATE 1 - _spin_nvr.tmp:3 - [(!((authorizations<=1)))] (6:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[6][1] = 1;
		if (!( !((((int)now.authorizations)<=1))))
			continue;
		/* merge: assert(!(!((authorizations<=1))))(0, 2, 6) */
		reached[6][2] = 1;
		spin_assert( !( !((((int)now.authorizations)<=1))), " !( !((authorizations<=1)))", II, tt, t);
		/* merge: .(goto)(0, 7, 6) */
		reached[6][7] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 7: // STATE 10 - _spin_nvr.tmp:8 - [-end-] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported10 = 0;
			if (verbose && !reported10)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported10 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported10 = 0;
			if (verbose && !reported10)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported10 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[6][10] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC :init: */
	case 8: // STATE 1 - idem.pml:182 - [i = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[5][1] = 1;
		(trpt+1)->bup.oval = ((int)((P5 *)_this)->i);
		((P5 *)_this)->i = 1;
#ifdef VAR_RANGES
		logval(":init::i", ((int)((P5 *)_this)->i));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 9: // STATE 2 - idem.pml:182 - [((i<=3))] (7:0:2 - 1)
		IfNotBlocked
		reached[5][2] = 1;
		if (!((((int)((P5 *)_this)->i)<=3)))
			continue;
		/* merge: transit[i] = 255(7, 3, 7) */
		reached[5][3] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.transit[ Index(((int)((P5 *)_this)->i), 4) ]);
		now.transit[ Index(((P5 *)_this)->i, 4) ] = 255;
#ifdef VAR_RANGES
		logval("transit[:init::i]", ((int)now.transit[ Index(((int)((P5 *)_this)->i), 4) ]));
#endif
		;
		/* merge: i = (i+1)(7, 4, 7) */
		reached[5][4] = 1;
		(trpt+1)->bup.ovals[1] = ((int)((P5 *)_this)->i);
		((P5 *)_this)->i = (((int)((P5 *)_this)->i)+1);
#ifdef VAR_RANGES
		logval(":init::i", ((int)((P5 *)_this)->i));
#endif
		;
		/* merge: .(goto)(0, 8, 7) */
		reached[5][8] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 10: // STATE 10 - idem.pml:183 - [i = 1] (0:16:1 - 3)
		IfNotBlocked
		reached[5][10] = 1;
		(trpt+1)->bup.oval = ((int)((P5 *)_this)->i);
		((P5 *)_this)->i = 1;
#ifdef VAR_RANGES
		logval(":init::i", ((int)((P5 *)_this)->i));
#endif
		;
		/* merge: .(goto)(0, 17, 16) */
		reached[5][17] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 11: // STATE 11 - idem.pml:183 - [((i<=3))] (0:0:0 - 1)
		IfNotBlocked
		reached[5][11] = 1;
		if (!((((int)((P5 *)_this)->i)<=3)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 12: // STATE 12 - idem.pml:183 - [(run Worker(i))] (0:0:0 - 1)
		IfNotBlocked
		reached[5][12] = 1;
		if (!(addproc(II, 1, 0, ((int)((P5 *)_this)->i))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 13: // STATE 13 - idem.pml:183 - [i = (i+1)] (0:0:1 - 1)
		IfNotBlocked
		reached[5][13] = 1;
		(trpt+1)->bup.oval = ((int)((P5 *)_this)->i);
		((P5 *)_this)->i = (((int)((P5 *)_this)->i)+1);
#ifdef VAR_RANGES
		logval(":init::i", ((int)((P5 *)_this)->i));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 14: // STATE 20 - idem.pml:185 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[5][20] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Settled */
	case 15: // STATE 1 - idem.pml:174 - [(timeout)] (0:0:0 - 1)
		IfNotBlocked
		reached[4][1] = 1;
		if (!(((trpt->tau)&1)))
			continue;
		_m = 1; goto P999; /* 0 */
	case 16: // STATE 2 - idem.pml:175 - [assert((rec!=INPROG))] (0:0:0 - 1)
		IfNotBlocked
		reached[4][2] = 1;
		spin_assert((now.rec!=2), "(rec!=2)", II, tt, t);
		_m = 3; goto P999; /* 0 */
	case 17: // STATE 3 - idem.pml:176 - [assert(((authorizations==0)||(stored&&authorized[storedKey])))] (0:0:0 - 1)
		IfNotBlocked
		reached[4][3] = 1;
		spin_assert(((((int)now.authorizations)==0)||(((int)now.stored)&&((int)now.authorized[ Index(((int)now.storedKey), 8) ]))), "((authorizations==0)||(stored&&authorized[storedKey]))", II, tt, t);
		_m = 3; goto P999; /* 0 */
	case 18: // STATE 4 - idem.pml:177 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[4][4] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Reconciler */
	case 19: // STATE 1 - idem.pml:158 - [(((rec==INPROG)&&(lease==STALE)))] (7:0:4 - 1)
		IfNotBlocked
		reached[3][1] = 1;
		if (!(((now.rec==2)&&(now.lease==4))))
			continue;
		/* merge: owner = 4(7, 2, 7) */
		reached[3][2] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)now.owner);
		now.owner = 4;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: attempt = (attempt+1)(7, 3, 7) */
		reached[3][3] = 1;
		(trpt+1)->bup.ovals[1] = ((int)attempt);
		attempt = (((int)attempt)+1);
#ifdef VAR_RANGES
		logval("attempt", ((int)attempt));
#endif
		;
		/* merge: lease = LIVE(7, 4, 7) */
		reached[3][4] = 1;
		(trpt+1)->bup.ovals[2] = now.lease;
		now.lease = 6;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: leaseHasTransit = 0(7, 5, 7) */
		reached[3][5] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.leaseHasTransit);
		now.leaseHasTransit = 0;
#ifdef VAR_RANGES
		logval("leaseHasTransit", ((int)now.leaseHasTransit));
#endif
		;
		_m = 3; goto P999; /* 4 */
	case 20: // STATE 6 - idem.pml:45 - [k = (2*gen)] (0:0:1 - 1)
		IfNotBlocked
		reached[3][6] = 1;
		(trpt+1)->bup.oval = ((int)((P3 *)_this)->k);
		((P3 *)_this)->k = (2*((int)now.gen));
#ifdef VAR_RANGES
		logval("Reconciler:k", ((int)((P3 *)_this)->k));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 21: // STATE 9 - idem.pml:163 - [(authorized[k])] (0:0:0 - 1)
		IfNotBlocked
		reached[3][9] = 1;
		if (!(((int)now.authorized[ Index(((int)((P3 *)_this)->k), 8) ])))
			continue;
		_m = 3; goto P999; /* 0 */
	case 22: // STATE 10 - idem.pml:53 - [(((rec==INPROG)&&(owner==4)))] (35:0:4 - 1)
		IfNotBlocked
		reached[3][10] = 1;
		if (!(((now.rec==2)&&(((int)now.owner)==4))))
			continue;
		/* merge: assert(!(stored))(35, 11, 35) */
		reached[3][11] = 1;
		spin_assert( !(((int)now.stored)), " !(stored)", II, tt, t);
		/* merge: assert(authorized[k])(35, 12, 35) */
		reached[3][12] = 1;
		spin_assert(((int)now.authorized[ Index(((int)((P3 *)_this)->k), 8) ]), "authorized[k]", II, tt, t);
		/* merge: rec = COMPLETED(35, 13, 35) */
		reached[3][13] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = now.rec;
		now.rec = 1;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: stored = 1(35, 14, 35) */
		reached[3][14] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.stored);
		now.stored = 1;
#ifdef VAR_RANGES
		logval("stored", ((int)now.stored));
#endif
		;
		/* merge: storedKey = k(35, 15, 35) */
		reached[3][15] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.storedKey);
		now.storedKey = ((int)((P3 *)_this)->k);
#ifdef VAR_RANGES
		logval("storedKey", ((int)now.storedKey));
#endif
		;
		/* merge: owner = 0(35, 16, 35) */
		reached[3][16] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.owner);
		now.owner = 0;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: .(goto)(35, 20, 35) */
		reached[3][20] = 1;
		;
		/* merge: .(goto)(0, 34, 35) */
		reached[3][34] = 1;
		;
		/* merge: .(goto)(0, 36, 35) */
		reached[3][36] = 1;
		;
		_m = 3; goto P999; /* 9 */
	case 23: // STATE 20 - idem.pml:59 - [.(goto)] (0:35:0 - 2)
		IfNotBlocked
		reached[3][20] = 1;
		;
		/* merge: .(goto)(0, 34, 35) */
		reached[3][34] = 1;
		;
		/* merge: .(goto)(0, 36, 35) */
		reached[3][36] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 24: // STATE 18 - idem.pml:57 - [(1)] (35:0:0 - 1)
		IfNotBlocked
		reached[3][18] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(35, 20, 35) */
		reached[3][20] = 1;
		;
		/* merge: .(goto)(0, 34, 35) */
		reached[3][34] = 1;
		;
		/* merge: .(goto)(0, 36, 35) */
		reached[3][36] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 25: // STATE 23 - idem.pml:164 - [(((!(authorized[k])&&(rec==INPROG))&&(owner==4)))] (35:0:3 - 1)
		IfNotBlocked
		reached[3][23] = 1;
		if (!((( !(((int)now.authorized[ Index(((int)((P3 *)_this)->k), 8) ]))&&(now.rec==2))&&(((int)now.owner)==4))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: k */  (trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((P3 *)_this)->k;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P3 *)_this)->k = 0;
		/* merge: rec = ABSENT(35, 24, 35) */
		reached[3][24] = 1;
		(trpt+1)->bup.ovals[1] = now.rec;
		now.rec = 3;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: owner = 0(35, 25, 35) */
		reached[3][25] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.owner);
		now.owner = 0;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: .(goto)(0, 34, 35) */
		reached[3][34] = 1;
		;
		/* merge: .(goto)(0, 36, 35) */
		reached[3][36] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 26: // STATE 27 - idem.pml:165 - [((((reconcileFailures<2)&&(rec==INPROG))&&(owner==4)))] (35:0:2 - 1)
		IfNotBlocked
		reached[3][27] = 1;
		if (!((((((int)now.reconcileFailures)<2)&&(now.rec==2))&&(((int)now.owner)==4))))
			continue;
		/* merge: reconcileFailures = (reconcileFailures+1)(35, 28, 35) */
		reached[3][28] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.reconcileFailures);
		now.reconcileFailures = (((int)now.reconcileFailures)+1);
#ifdef VAR_RANGES
		logval("reconcileFailures", ((int)now.reconcileFailures));
#endif
		;
		/* merge: lease = ENDED(35, 29, 35) */
		reached[3][29] = 1;
		(trpt+1)->bup.ovals[1] = now.lease;
		now.lease = 5;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: .(goto)(0, 34, 35) */
		reached[3][34] = 1;
		;
		/* merge: .(goto)(0, 36, 35) */
		reached[3][36] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 27: // STATE 38 - idem.pml:169 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[3][38] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Clock */
	case 28: // STATE 1 - idem.pml:143 - [((((rec==INPROG)&&(lease==LIVE))&&!(leaseHasTransit)))] (7:0:1 - 1)
		IfNotBlocked
		reached[2][1] = 1;
		if (!((((now.rec==2)&&(now.lease==6))&& !(((int)now.leaseHasTransit)))))
			continue;
		/* merge: lease = ENDED(0, 2, 7) */
		reached[2][2] = 1;
		(trpt+1)->bup.oval = now.lease;
		now.lease = 5;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: .(goto)(0, 8, 7) */
		reached[2][8] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 29: // STATE 4 - idem.pml:145 - [((((rec==INPROG)&&(lease==ENDED))&&(inTransit==0)))] (7:0:1 - 1)
		IfNotBlocked
		reached[2][4] = 1;
		if (!((((now.rec==2)&&(now.lease==5))&&(((int)now.inTransit)==0))))
			continue;
		/* merge: lease = STALE(0, 5, 7) */
		reached[2][5] = 1;
		(trpt+1)->bup.oval = now.lease;
		now.lease = 4;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: .(goto)(0, 8, 7) */
		reached[2][8] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 30: // STATE 10 - idem.pml:147 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[2][10] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Acquirer */
	case 31: // STATE 1 - idem.pml:115 - [((inTransit>0))] (22:0:1 - 1)
		IfNotBlocked
		reached[1][1] = 1;
		if (!((((int)now.inTransit)>0)))
			continue;
		/* merge: i = 1(0, 2, 22) */
		reached[1][2] = 1;
		(trpt+1)->bup.oval = ((int)((P1 *)_this)->i);
		((P1 *)_this)->i = 1;
#ifdef VAR_RANGES
		logval("Acquirer:i", ((int)((P1 *)_this)->i));
#endif
		;
		/* merge: .(goto)(0, 23, 22) */
		reached[1][23] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 32: // STATE 3 - idem.pml:116 - [((i<=3))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][3] = 1;
		if (!((((int)((P1 *)_this)->i)<=3)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 33: // STATE 4 - idem.pml:118 - [((transit[i]!=255))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][4] = 1;
		if (!((((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ])!=255)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 34: // STATE 5 - idem.pml:120 - [(!(authorized[transit[i]]))] (29:0:4 - 1)
		IfNotBlocked
		reached[1][5] = 1;
		if (!( !(((int)now.authorized[ Index(((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]), 8) ]))))
			continue;
		/* merge: authorized[transit[i]] = 1(29, 6, 29) */
		reached[1][6] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)now.authorized[ Index(((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]), 8) ]);
		now.authorized[ Index(now.transit[ Index(((P1 *)_this)->i, 4) ], 8) ] = 1;
#ifdef VAR_RANGES
		logval("authorized[transit[Acquirer:i]]", ((int)now.authorized[ Index(((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]), 8) ]));
#endif
		;
		/* merge: authorizations = (authorizations+1)(29, 7, 29) */
		reached[1][7] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.authorizations);
		now.authorizations = (((int)now.authorizations)+1);
#ifdef VAR_RANGES
		logval("authorizations", ((int)now.authorizations));
#endif
		;
		/* merge: .(goto)(29, 11, 29) */
		reached[1][11] = 1;
		;
		/* merge: transit[i] = 255(29, 12, 29) */
		reached[1][12] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]);
		now.transit[ Index(((P1 *)_this)->i, 4) ] = 255;
#ifdef VAR_RANGES
		logval("transit[Acquirer:i]", ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]));
#endif
		;
		/* merge: inTransit = (inTransit-1)(29, 13, 29) */
		reached[1][13] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.inTransit);
		now.inTransit = (((int)now.inTransit)-1);
#ifdef VAR_RANGES
		logval("inTransit", ((int)now.inTransit));
#endif
		;
		/* merge: goto :b1(0, 14, 29) */
		reached[1][14] = 1;
		;
		_m = 3; goto P999; /* 6 */
	case 35: // STATE 9 - idem.pml:121 - [(1)] (29:0:2 - 1)
		IfNotBlocked
		reached[1][9] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(29, 11, 29) */
		reached[1][11] = 1;
		;
		/* merge: transit[i] = 255(29, 12, 29) */
		reached[1][12] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]);
		now.transit[ Index(((P1 *)_this)->i, 4) ] = 255;
#ifdef VAR_RANGES
		logval("transit[Acquirer:i]", ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]));
#endif
		;
		/* merge: inTransit = (inTransit-1)(29, 13, 29) */
		reached[1][13] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.inTransit);
		now.inTransit = (((int)now.inTransit)-1);
#ifdef VAR_RANGES
		logval("inTransit", ((int)now.inTransit));
#endif
		;
		/* merge: goto :b1(0, 14, 29) */
		reached[1][14] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 36: // STATE 12 - idem.pml:123 - [transit[i] = 255] (0:29:2 - 3)
		IfNotBlocked
		reached[1][12] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]);
		now.transit[ Index(((P1 *)_this)->i, 4) ] = 255;
#ifdef VAR_RANGES
		logval("transit[Acquirer:i]", ((int)now.transit[ Index(((int)((P1 *)_this)->i), 4) ]));
#endif
		;
		/* merge: inTransit = (inTransit-1)(29, 13, 29) */
		reached[1][13] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.inTransit);
		now.inTransit = (((int)now.inTransit)-1);
#ifdef VAR_RANGES
		logval("inTransit", ((int)now.inTransit));
#endif
		;
		/* merge: goto :b1(0, 14, 29) */
		reached[1][14] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 37: // STATE 16 - idem.pml:124 - [(1)] (22:0:1 - 1)
		IfNotBlocked
		reached[1][16] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(22, 18, 22) */
		reached[1][18] = 1;
		;
		/* merge: i = (i+1)(22, 19, 22) */
		reached[1][19] = 1;
		(trpt+1)->bup.oval = ((int)((P1 *)_this)->i);
		((P1 *)_this)->i = (((int)((P1 *)_this)->i)+1);
#ifdef VAR_RANGES
		logval("Acquirer:i", ((int)((P1 *)_this)->i));
#endif
		;
		/* merge: .(goto)(0, 23, 22) */
		reached[1][23] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 38: // STATE 19 - idem.pml:116 - [i = (i+1)] (0:22:1 - 2)
		IfNotBlocked
		reached[1][19] = 1;
		(trpt+1)->bup.oval = ((int)((P1 *)_this)->i);
		((P1 *)_this)->i = (((int)((P1 *)_this)->i)+1);
#ifdef VAR_RANGES
		logval("Acquirer:i", ((int)((P1 *)_this)->i));
#endif
		;
		/* merge: .(goto)(0, 23, 22) */
		reached[1][23] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 39: // STATE 25 - idem.pml:128 - [((inTransit==0))] (32:0:1 - 1)
		IfNotBlocked
		reached[1][25] = 1;
		if (!((((int)now.inTransit)==0)))
			continue;
		/* merge: leaseHasTransit = 0(32, 26, 32) */
		reached[1][26] = 1;
		(trpt+1)->bup.oval = ((int)now.leaseHasTransit);
		now.leaseHasTransit = 0;
#ifdef VAR_RANGES
		logval("leaseHasTransit", ((int)now.leaseHasTransit));
#endif
		;
		/* merge: .(goto)(32, 30, 32) */
		reached[1][30] = 1;
		;
		/* merge: .(goto)(0, 33, 32) */
		reached[1][33] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 40: // STATE 30 - idem.pml:131 - [.(goto)] (0:32:0 - 2)
		IfNotBlocked
		reached[1][30] = 1;
		;
		/* merge: .(goto)(0, 33, 32) */
		reached[1][33] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 41: // STATE 28 - idem.pml:129 - [(1)] (32:0:0 - 1)
		IfNotBlocked
		reached[1][28] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(32, 30, 32) */
		reached[1][30] = 1;
		;
		/* merge: .(goto)(0, 33, 32) */
		reached[1][33] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 42: // STATE 35 - idem.pml:133 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[1][35] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Worker */
	case 43: // STATE 1 - idem.pml:68 - [((rec==ABSENT))] (22:0:6 - 1)
		IfNotBlocked
		reached[0][1] = 1;
		if (!((now.rec==3)))
			continue;
		/* merge: rec = INPROG(22, 2, 22) */
		reached[0][2] = 1;
		(trpt+1)->bup.ovals = grab_ints(6);
		(trpt+1)->bup.ovals[0] = now.rec;
		now.rec = 2;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: owner = me(22, 3, 22) */
		reached[0][3] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.owner);
		now.owner = ((int)((P0 *)_this)->me);
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: attempt = 1(22, 4, 22) */
		reached[0][4] = 1;
		(trpt+1)->bup.ovals[2] = ((int)attempt);
		attempt = 1;
#ifdef VAR_RANGES
		logval("attempt", ((int)attempt));
#endif
		;
		/* merge: gen = (gen+1)(22, 5, 22) */
		reached[0][5] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.gen);
		now.gen = (((int)now.gen)+1);
#ifdef VAR_RANGES
		logval("gen", ((int)now.gen));
#endif
		;
		/* merge: lease = LIVE(22, 6, 22) */
		reached[0][6] = 1;
		(trpt+1)->bup.ovals[4] = now.lease;
		now.lease = 6;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: leaseHasTransit = 0(22, 7, 22) */
		reached[0][7] = 1;
		(trpt+1)->bup.ovals[5] = ((int)now.leaseHasTransit);
		now.leaseHasTransit = 0;
#ifdef VAR_RANGES
		logval("leaseHasTransit", ((int)now.leaseHasTransit));
#endif
		;
		/* merge: .(goto)(22, 19, 22) */
		reached[0][19] = 1;
		;
		_m = 3; goto P999; /* 7 */
	case 44: // STATE 19 - idem.pml:73 - [.(goto)] (0:22:0 - 2)
		IfNotBlocked
		reached[0][19] = 1;
		;
		_m = 3; goto P999; /* 0 */
	case 45: // STATE 8 - idem.pml:69 - [(((rec==INPROG)&&(lease!=LIVE)))] (22:0:5 - 1)
		IfNotBlocked
		reached[0][8] = 1;
		if (!(((now.rec==2)&&(now.lease!=6))))
			continue;
		/* merge: owner = me(22, 9, 22) */
		reached[0][9] = 1;
		(trpt+1)->bup.ovals = grab_ints(5);
		(trpt+1)->bup.ovals[0] = ((int)now.owner);
		now.owner = ((int)((P0 *)_this)->me);
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: attempt = (attempt+1)(22, 10, 22) */
		reached[0][10] = 1;
		(trpt+1)->bup.ovals[1] = ((int)attempt);
		attempt = (((int)attempt)+1);
#ifdef VAR_RANGES
		logval("attempt", ((int)attempt));
#endif
		;
		/* merge: lease = LIVE(22, 11, 22) */
		reached[0][11] = 1;
		(trpt+1)->bup.ovals[2] = now.lease;
		now.lease = 6;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: leaseHasTransit = 0(22, 12, 22) */
		reached[0][12] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.leaseHasTransit);
		now.leaseHasTransit = 0;
#ifdef VAR_RANGES
		logval("leaseHasTransit", ((int)now.leaseHasTransit));
#endif
		;
		/* merge: takenOver = 1(22, 13, 22) */
		reached[0][13] = 1;
		(trpt+1)->bup.ovals[4] = ((int)((P0 *)_this)->takenOver);
		((P0 *)_this)->takenOver = 1;
#ifdef VAR_RANGES
		logval("Worker:takenOver", ((int)((P0 *)_this)->takenOver));
#endif
		;
		/* merge: .(goto)(22, 19, 22) */
		reached[0][19] = 1;
		;
		_m = 3; goto P999; /* 6 */
	case 46: // STATE 14 - idem.pml:70 - [((rec==COMPLETED))] (83:0:0 - 1)
		IfNotBlocked
		reached[0][14] = 1;
		if (!((now.rec==1)))
			continue;
		/* merge: goto done(0, 15, 83) */
		reached[0][15] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 47: // STATE 16 - idem.pml:71 - [(((rec==INPROG)&&(lease==LIVE)))] (83:0:0 - 1)
		IfNotBlocked
		reached[0][16] = 1;
		if (!(((now.rec==2)&&(now.lease==6))))
			continue;
		/* merge: goto done(0, 17, 83) */
		reached[0][17] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 48: // STATE 21 - idem.pml:45 - [k = (2*gen)] (0:0:1 - 1)
		IfNotBlocked
		reached[0][21] = 1;
		(trpt+1)->bup.oval = ((int)((P0 *)_this)->k);
		((P0 *)_this)->k = (2*((int)now.gen));
#ifdef VAR_RANGES
		logval("Worker:k", ((int)((P0 *)_this)->k));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 49: // STATE 27 - idem.pml:81 - [((takenOver&&authorized[k]))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][27] = 1;
		if (!((((int)((P0 *)_this)->takenOver)&&((int)now.authorized[ Index(((int)((P0 *)_this)->k), 8) ]))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: takenOver */  (trpt+1)->bup.oval = ((P0 *)_this)->takenOver;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->takenOver = 0;
		_m = 3; goto P999; /* 0 */
	case 50: // STATE 28 - idem.pml:53 - [(((rec==INPROG)&&(owner==me)))] (83:0:5 - 1)
		IfNotBlocked
		reached[0][28] = 1;
		if (!(((now.rec==2)&&(((int)now.owner)==((int)((P0 *)_this)->me)))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: me */  (trpt+1)->bup.ovals = grab_ints(5);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->me;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->me = 0;
		/* merge: assert(!(stored))(83, 29, 83) */
		reached[0][29] = 1;
		spin_assert( !(((int)now.stored)), " !(stored)", II, tt, t);
		/* merge: assert(authorized[k])(83, 30, 83) */
		reached[0][30] = 1;
		spin_assert(((int)now.authorized[ Index(((int)((P0 *)_this)->k), 8) ]), "authorized[k]", II, tt, t);
		/* merge: rec = COMPLETED(83, 31, 83) */
		reached[0][31] = 1;
		(trpt+1)->bup.ovals[1] = now.rec;
		now.rec = 1;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: stored = 1(83, 32, 83) */
		reached[0][32] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.stored);
		now.stored = 1;
#ifdef VAR_RANGES
		logval("stored", ((int)now.stored));
#endif
		;
		/* merge: storedKey = k(83, 33, 83) */
		reached[0][33] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.storedKey);
		now.storedKey = ((int)((P0 *)_this)->k);
#ifdef VAR_RANGES
		logval("storedKey", ((int)now.storedKey));
#endif
		;
		/* merge: owner = 0(83, 34, 83) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.owner);
		now.owner = 0;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: .(goto)(83, 38, 83) */
		reached[0][38] = 1;
		;
		/* merge: goto done(0, 41, 83) */
		reached[0][41] = 1;
		;
		_m = 3; goto P999; /* 8 */
	case 51: // STATE 38 - idem.pml:59 - [.(goto)] (0:83:0 - 2)
		IfNotBlocked
		reached[0][38] = 1;
		;
		/* merge: goto done(0, 41, 83) */
		reached[0][41] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 52: // STATE 36 - idem.pml:57 - [(1)] (83:0:0 - 1)
		IfNotBlocked
		reached[0][36] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(83, 38, 83) */
		reached[0][38] = 1;
		;
		/* merge: goto done(0, 41, 83) */
		reached[0][41] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 53: // STATE 46 - idem.pml:86 - [(((owner==me)&&(lease==LIVE)))] (81:0:3 - 1)
		IfNotBlocked
		reached[0][46] = 1;
		if (!(((((int)now.owner)==((int)((P0 *)_this)->me))&&(now.lease==6))))
			continue;
		/* merge: transit[me] = k(81, 47, 81) */
		reached[0][47] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.transit[ Index(((int)((P0 *)_this)->me), 4) ]);
		now.transit[ Index(((P0 *)_this)->me, 4) ] = ((int)((P0 *)_this)->k);
#ifdef VAR_RANGES
		logval("transit[Worker:me]", ((int)now.transit[ Index(((int)((P0 *)_this)->me), 4) ]));
#endif
		;
		/* merge: inTransit = (inTransit+1)(81, 48, 81) */
		reached[0][48] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.inTransit);
		now.inTransit = (((int)now.inTransit)+1);
#ifdef VAR_RANGES
		logval("inTransit", ((int)now.inTransit));
#endif
		;
		/* merge: leaseHasTransit = 1(81, 49, 81) */
		reached[0][49] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.leaseHasTransit);
		now.leaseHasTransit = 1;
#ifdef VAR_RANGES
		logval("leaseHasTransit", ((int)now.leaseHasTransit));
#endif
		;
		/* merge: .(goto)(0, 62, 81) */
		reached[0][62] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 54: // STATE 51 - idem.pml:95 - [((((rec==INPROG)&&(owner==me))&&!(takenOver)))] (83:0:4 - 1)
		IfNotBlocked
		reached[0][51] = 1;
		if (!((((now.rec==2)&&(((int)now.owner)==((int)((P0 *)_this)->me)))&& !(((int)((P0 *)_this)->takenOver)))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: me */  (trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->me;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->me = 0;
		if (TstOnly) return 1; /* TT */
		/* dead 1: takenOver */  (trpt+1)->bup.ovals[1] = ((P0 *)_this)->takenOver;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->takenOver = 0;
		/* merge: rec = ABSENT(83, 52, 83) */
		reached[0][52] = 1;
		(trpt+1)->bup.ovals[2] = now.rec;
		now.rec = 3;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: owner = 0(83, 53, 83) */
		reached[0][53] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.owner);
		now.owner = 0;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: .(goto)(83, 57, 83) */
		reached[0][57] = 1;
		;
		/* merge: goto done(0, 59, 83) */
		reached[0][59] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 55: // STATE 57 - idem.pml:99 - [.(goto)] (0:83:0 - 2)
		IfNotBlocked
		reached[0][57] = 1;
		;
		/* merge: goto done(0, 59, 83) */
		reached[0][59] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 56: // STATE 55 - idem.pml:97 - [(1)] (83:0:0 - 1)
		IfNotBlocked
		reached[0][55] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(83, 57, 83) */
		reached[0][57] = 1;
		;
		/* merge: goto done(0, 59, 83) */
		reached[0][59] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 57: // STATE 63 - idem.pml:103 - [((transit[me]==255))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][63] = 1;
		if (!((((int)now.transit[ Index(((int)((P0 *)_this)->me), 4) ])==255)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 58: // STATE 64 - idem.pml:53 - [(((rec==INPROG)&&(owner==me)))] (83:0:5 - 1)
		IfNotBlocked
		reached[0][64] = 1;
		if (!(((now.rec==2)&&(((int)now.owner)==((int)((P0 *)_this)->me)))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: me */  (trpt+1)->bup.ovals = grab_ints(5);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->me;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->me = 0;
		/* merge: assert(!(stored))(83, 65, 83) */
		reached[0][65] = 1;
		spin_assert( !(((int)now.stored)), " !(stored)", II, tt, t);
		/* merge: assert(authorized[k])(83, 66, 83) */
		reached[0][66] = 1;
		spin_assert(((int)now.authorized[ Index(((int)((P0 *)_this)->k), 8) ]), "authorized[k]", II, tt, t);
		/* merge: rec = COMPLETED(83, 67, 83) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[1] = now.rec;
		now.rec = 1;
#ifdef VAR_RANGES
		logval("rec", now.rec);
#endif
		;
		/* merge: stored = 1(83, 68, 83) */
		reached[0][68] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.stored);
		now.stored = 1;
#ifdef VAR_RANGES
		logval("stored", ((int)now.stored));
#endif
		;
		/* merge: storedKey = k(83, 69, 83) */
		reached[0][69] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.storedKey);
		now.storedKey = ((int)((P0 *)_this)->k);
#ifdef VAR_RANGES
		logval("storedKey", ((int)now.storedKey));
#endif
		;
		/* merge: owner = 0(83, 70, 83) */
		reached[0][70] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.owner);
		now.owner = 0;
#ifdef VAR_RANGES
		logval("owner", ((int)now.owner));
#endif
		;
		/* merge: .(goto)(83, 74, 83) */
		reached[0][74] = 1;
		;
		/* merge: .(goto)(0, 82, 83) */
		reached[0][82] = 1;
		;
		_m = 3; goto P999; /* 8 */
	case 59: // STATE 74 - idem.pml:59 - [.(goto)] (0:83:0 - 2)
		IfNotBlocked
		reached[0][74] = 1;
		;
		/* merge: .(goto)(0, 82, 83) */
		reached[0][82] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 60: // STATE 72 - idem.pml:57 - [(1)] (83:0:0 - 1)
		IfNotBlocked
		reached[0][72] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(83, 74, 83) */
		reached[0][74] = 1;
		;
		/* merge: .(goto)(0, 82, 83) */
		reached[0][82] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 61: // STATE 77 - idem.pml:104 - [(((rec==INPROG)&&(owner==me)))] (83:0:2 - 1)
		IfNotBlocked
		reached[0][77] = 1;
		if (!(((now.rec==2)&&(((int)now.owner)==((int)((P0 *)_this)->me)))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: me */  (trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->me;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->me = 0;
		/* merge: lease = ENDED(0, 78, 83) */
		reached[0][78] = 1;
		(trpt+1)->bup.ovals[1] = now.lease;
		now.lease = 5;
#ifdef VAR_RANGES
		logval("lease", now.lease);
#endif
		;
		/* merge: .(goto)(0, 82, 83) */
		reached[0][82] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 62: // STATE 84 - idem.pml:108 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[0][84] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */
	case  _T5:	/* np_ */
		if (!((!(trpt->o_pm&4) && !(trpt->tau&128))))
			continue;
		/* else fall through */
	case  _T2:	/* true */
		_m = 3; goto P999;
#undef rand
	}

