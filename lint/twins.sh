#!/usr/bin/env bash
# twins.sh DUPL DIR: the duplicate check of `make lint`. dupl (pinned in
# the Makefile), run at TWIN_TOKENS tokens (default 40) over the non-test
# Go files of the module in DIR, reports pairs of duplicate code; a pair
# where either side spans TWIN_LINES lines or more (default 10) fails the
# check unless DIR/.twins accepts it. Each line of .twins is
#     fileA fileB reason...
# (paths from DIR, either order, '#' starts a comment). An accepted pair
# that is no longer found fails too, so the list never outlives its
# reasons.
set -euo pipefail
dupl=$1
cd "$2"
tokens=${TWIN_TOKENS:-40}
min_lines=${TWIN_LINES:-10}

found=$(go list -f '{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' ./... | sed "s#^$PWD/##" | grep . |
  "$dupl" -files -plumbing -t "$tokens" |
  awk -v min="$min_lines" '{
    split($1, a, ":"); split(a[2], ra, "-"); split($4, b, ":"); split(b[2], rb, "-")
    n = ra[2] - ra[1] + 1; m = rb[2] - rb[1] + 1
    if (n < min && m < min) next
    x = a[1]; y = b[1]; if (x > y) { t = x; x = y; y = t }
    print x, y
  }' | sort -u)

accepted=$(test -f .twins && sed 's/#.*//' .twins | awk 'NF >= 3 { x = $1; y = $2; if (x > y) { t = x; x = y; y = t }; print x, y }' | sort -u || true)

status=0
new=$(comm -23 <(printf '%s\n' "$found" | grep . || true) <(printf '%s\n' "$accepted" | grep . || true))
if [ -n "$new" ]; then
  echo "twins: duplicate code of $min_lines+ lines at $tokens tokens (dupl), not accepted in .twins:"
  printf '%s\n' "$new" | sed 's/^/  /'
  echo "  share it (the operation layer, op, is where two operations' code meets), or accept the pair in .twins with its reason"
  status=1
fi
stale=$(comm -13 <(printf '%s\n' "$found" | grep . || true) <(printf '%s\n' "$accepted" | grep . || true))
if [ -n "$stale" ]; then
  echo "twins: accepted in .twins but no longer found (remove the line):"
  printf '%s\n' "$stale" | sed 's/^/  /'
  status=1
fi
exit $status
