#!/usr/bin/env bash
# Checks the protocol model exhaustively with spin and shows that each rule
# of DESIGN §4 is needed. Exits non-zero if a property fails or a control
# does not fail. States are stored compressed (-DCOLLAPSE), which halves the
# memory; liveness under weak fairness is checked with three workers and no
# conflict, and with two workers and a conflict, each within about 2 GB (three
# workers and a conflict take about 5 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/idem.pml" "$work/"
cd "$work"

# verify NAME DEFINES PAN_FLAGS PAN_ARGS: prints pan's verdict, returns its error count.
verify() {
  local name=$1 defines=$2 ccflags=$3 args=$4
  rm -f pan pan.*
  spin -a $defines idem.pml >/dev/null
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
verify "safety with lying lookups (2 workers)"      "-DLYING_LOOKUPS -DWORKERS=2" "-DNOCLAIM" "" || fail=1
# control NAME DEFINES PAN_FLAGS PAN_ARGS: a switch that breaks the model;
# it must find a counterexample.
control() {
  if verify "control: $1 (must fail)" "$2" "$3" "$4"; then
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
control "rows after the lease margin"       "-DLYING_LOOKUPS -DWORKERS=2 -DNO_GONE"       "-DNOCLAIM" ""
control "no reconciler, liveness"           "-DNO_RECONCILER"  "-DNFAIR=4" "-a -f -N settles"
exit $fail
