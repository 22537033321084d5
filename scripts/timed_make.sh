#!/usr/bin/env bash
# Runs `MAKE [FLAGS] TARGET...` and then says how long it took, as
# "make test: TARGET... took N s" (make test's log shows where its time goes).
# Exits with make's status.
#   scripts/timed_make.sh make --no-print-directory test-unit
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MAKE [FLAGS] TARGET..." >&2; exit 2; }
targets=()
for arg in "${@:2}"; do
  case "$arg" in -*) ;; *) targets+=("$arg") ;; esac
done
start=$SECONDS
"$@"
status=$?
echo "make test: ${targets[*]} took $((SECONDS - start)) s$([ $status = 0 ] || echo ", FAILED ($status)")"
exit $status
