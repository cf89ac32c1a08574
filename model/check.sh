#!/usr/bin/env bash
# Checks the protocol models exhaustively with spin: idem.pml (the charge's
# record, DESIGN §4), refund.pml (the refund bound, DESIGN §7) and
# capture.pml (captures and voids on the charge's balance, §8), and shows
# that each rule is needed. Exits non-zero if a property fails or a control
# does not fail. States are stored compressed (-DCOLLAPSE), which halves the
# memory; liveness under weak fairness is checked with three workers and no
# conflict, and with two workers and a conflict, each within about 2 GB (three
# workers and a conflict take about 5 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/idem.pml" "$here/refund.pml" "$here/capture.pml" "$work/"
cd "$work"

# verify NAME DEFINES PAN_FLAGS PAN_ARGS [MODEL]: prints pan's verdict,
# returns its error count. MODEL is idem.pml unless given.
verify() {
  local name=$1 defines=$2 ccflags=$3 args=$4 model=${5:-idem.pml}
  rm -f pan pan.*
  spin -a $defines "$model" >/dev/null
  gcc -O2 -w -DVECTORSZ=2048 -DCOLLAPSE $ccflags -o pan pan.c
  local out
  out=$(./pan -m1000000 $args 2>&1)
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
  local what
  what=$(grep -oE 'assertion violated[^(]*\(.*\)|acceptance cycle' <<<"$out" | head -1 || true)
  printf '%-52s errors %s, %s states%s\n' "$name" "${errors:-?}" "${states:-?}" "${what:+  — $what}"
  return "${errors:-1}"
}

fail=0
verify "safety: assertions, end states"           ""                 "-DNOCLAIM" ""                 || fail=1
verify "LTL [] authorizations <= 1"                ""                 ""          "-a -N atMostOne" || fail=1
verify "LTL in flight -> <> settled (weak fair)"   "-DCONFLICTS=0"    "-DNFAIR=4" "-a -f -N settles" || fail=1
verify "the same with a conflict (2 workers)"       "-DWORKERS=2"      "-DNFAIR=4" "-a -f -N settles" || fail=1
verify "LTL completed -> its ledger row"            ""                 ""          "-a -N ledgerFirst" || fail=1
verify "safety, lying lookups, a late accept (2 workers)" "-DLYING_LOOKUPS -DLATE_ACCEPT -DWORKERS=2" "-DNOCLAIM" "" || fail=1
# control NAME DEFINES PAN_FLAGS PAN_ARGS [MODEL]: a switch that breaks the
# model; it must find a counterexample.
# A control whose depth-first search reaches its counterexample only after
# tens of millions of states searches breadth first (-DBFS): the shortest
# counterexample, in a second.
control() {
  if verify "control: $1 (must fail)" "$2" "$3" "$4" "${5:-idem.pml}"; then
    echo "model: the control \"$1\" found no counterexample" >&2; fail=1
  fi
}
for rule in 1 2 3; do
  control "rule $rule dropped" "-DDROP_RULE$rule" "-DNOCLAIM" ""
done
control "lookup before take-over"           "-DLOOKUP_FIRST"   "-DNOCLAIM" ""
control "record before ledger row"          "-DCOMPLETE_FIRST" ""          "-a -N ledgerFirst"
control "a mismatch stored as the outcome"  "-DNO_HOLD"        "-DNOCLAIM" ""
control "void-confirmed without the wait"   "-DVOID_EARLY"     "-DNOCLAIM" ""
control "void-confirmed with a ledger row"  "-DLYING_LOOKUPS -DWORKERS=2 -DVOID_WITH_ROW" "-DNOCLAIM" ""
control "void without the marker, a zombie's row" "-DLYING_LOOKUPS -DWORKERS=2 -DNO_VOID_MARKER" "-DNOCLAIM" ""
control "void without the marker, a late accept" "-DLATE_ACCEPT -DWORKERS=2 -DNO_VOID_MARKER"   "-DNOCLAIM" ""
control "no reconciler, liveness"           "-DNO_RECONCILER"  "-DNFAIR=4" "-a -f -N settles"

# The refund bound, in two shapes (model/refund.pml says why): one worker an
# intent, both crashing at every step; and intent 0 with a client's retry
# against a competing refund. The safety runs assert the bound at every
# refund and every step on the balance;
# the liveness runs leave out the late reservation write (-DNO_LATE: one
# that lands is refused and changes nothing that could block an ending),
# and the runs with mismatches and a competitor or a late accept its
# landing again after a success (-DNO_LATE_DUP); those two and the
# liveness run with a competitor leave out the reservation issued again
# after a fold passed its stamp (-DNO_REISSUE), which the safety runs of
# both shapes check: all within 3.5 GB.
for shape in "" "-DCOMPETITOR"; do
  label=${shape:+, a retry and a competitor}
  verify "refund: safety${label:-, two crashing intents}"   "$shape" "-DNOCLAIM" ""               refund.pml || fail=1
  verify "refund: LTL ends (weak fair)${label}"            "$shape -DNO_LATE${shape:+ -DNO_REISSUE}" "-DNFAIR=4" "-a -f -N ends"  refund.pml || fail=1
done
verify "refund: safety, two refunds that both fit"         "-DWANT=2" "-DNOCLAIM" ""             refund.pml || fail=1
verify "refund: safety with mismatches"                    "-DMISMATCHES" "-DNOCLAIM" ""         refund.pml || fail=1
verify "refund: the same, a retry and a competitor"        "-DMISMATCHES -DCOMPETITOR -DNO_LATE_DUP -DNO_REISSUE" "-DNOCLAIM" "" refund.pml || fail=1
verify "refund: safety with an accept's late row"           "-DMISMATCHES -DLATE_ACCEPT -DNO_LATE_DUP -DNO_REISSUE" "-DNOCLAIM" "" refund.pml || fail=1
control "refund: an unconditioned reservation"  "-DUNCONDITIONED_RESERVE"         "-DNOCLAIM" "" refund.pml
control "refund: a release after an ambiguous send" "-DRELEASE_AMBIGUOUS -DCOMPETITOR" "-DNOCLAIM" "" refund.pml
control "refund: a release without the fence"   "-DRELEASE_UNFENCED -DCOMPETITOR" "-DNOCLAIM -DBFS" "" refund.pml
control "refund: a take-over that does not fold" "-DNO_FOLD -DCOMPETITOR"          "-DNOCLAIM" "" refund.pml
control "refund: a release without the watermarks" "-DNO_WATERMARK -DCOMPETITOR"  "-DNOCLAIM" "" refund.pml
control "refund: a success folded without its watermark" "-DFOLD_NO_WATERMARK -DWANT=2" "-DNOCLAIM" "" refund.pml
control "refund: a refused fold taken for a fold" "-DREFUSED_FOLD_RELEASES -DCOMPETITOR" "-DNOCLAIM -DBFS" "" refund.pml
control "refund: no reconciler, liveness"       "-DNO_RECONCILER -DNO_LATE"       "-DNFAIR=4" "-a -f -N ends" refund.pml
control "refund: void-confirmed without the wait" "-DVOID_EARLY -DMISMATCHES -DCOMPETITOR -DNO_LATE_DUP -DNO_REISSUE" "-DNOCLAIM" "" refund.pml
control "refund: void-confirmed without its marker" "-DNO_VOID_MARKER -DMISMATCHES -DLATE_ACCEPT -DNO_LATE_DUP -DNO_REISSUE" "-DNOCLAIM" "" refund.pml

# Captures and voids on one balance (model/capture.pml says why each shape):
# a non-final capture against each other kind of intent, with and without
# the authorization's expiry; and a capture with a client's retry racing its
# first attempt.
for versus in CAPTURE FINAL VOID REFUND; do
  verify "capture: safety, a capture against a ${versus,,}" "-DVERSUS_$versus" "-DNOCLAIM" "" capture.pml || fail=1
done
for versus in CAPTURE VOID; do
  verify "capture: the same with the expiry (${versus,,})" "-DVERSUS_$versus -DEXPIRY" "-DNOCLAIM" "" capture.pml || fail=1
done
verify "capture: LTL ends (weak fair), against a void"  "-DVERSUS_VOID"     "-DNFAIR=4" "-a -f -N ends" capture.pml || fail=1
verify "capture: safety, a retry racing, the expiry"    "-DRETRY -DEXPIRY"  "-DNOCLAIM" ""              capture.pml || fail=1
verify "capture: LTL ends (weak fair), a retry racing"  "-DRETRY"           "-DNFAIR=4" "-a -f -N ends" capture.pml || fail=1
verify "capture: safety, a lookup that forgets, a retry" "-DRETRY -DFORGETFUL" "-DNOCLAIM" ""           capture.pml || fail=1
control "capture: a void that ignores captures in flight" "-DVERSUS_VOID -DVOID_IGNORES_CAPTURES" "-DNOCLAIM" "" capture.pml
control "capture: a success folded without the watermark" "-DRETRY -DFOLD_NO_WATERMARK" "-DNOCLAIM" "" capture.pml
control "capture: a write issued after the lease ended" "-DRETRY -DZOMBIE_WRITES" "-DNOCLAIM" "" capture.pml
control "capture: a fold without its floor, a clock behind" "-DRETRY -DNO_FLOOR" "-DNOCLAIM" "" capture.pml
control "capture: an absent answer that ignores the row" "-DRETRY -DFORGETFUL -DABSENT_IGNORES_ROW" "-DNOCLAIM" "" capture.pml
control "capture: a capture that trusts a read"  "-DVERSUS_CAPTURE -DCAPTURE_TRUSTS_READ" "-DNOCLAIM" "" capture.pml
control "capture: an expiry that ignores captures in flight" "-DVERSUS_VOID -DEXPIRY -DEXPIRY_IGNORES_CAPTURES" "-DNOCLAIM" "" capture.pml
exit $fail
