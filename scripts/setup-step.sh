#!/usr/bin/env bash
# One set-up step of `make run` / `make test`, quietly: one progress line on the terminal, the
# step's whole output in .setup-logs/<name>.log (gitignored), and on failure the log's last lines.
#
#   scripts/setup-step.sh NAME "what it does" COMMAND [ARG...]
#
# SETUP_VERBOSE=1 shows the output on the terminal instead (still written to the log).
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: setup-step.sh NAME DESCRIPTION COMMAND [ARG...]" >&2; exit 2; }
name=$1 what=$2; shift 2
logdir="$(cd "$(dirname "$0")/.." && pwd)/.setup-logs"
mkdir -p "$logdir"
log=$logdir/$name.log
printf 'set-up: %-44s' "$what" >&2
t0=$SECONDS
{ echo "# $(date -u +%FT%TZ) $*"; } >"$log"
if [ "${SETUP_VERBOSE:-0}" = 1 ]; then
  echo >&2
  "$@" 2>&1 | tee -a "$log" >&2
  rc=${PIPESTATUS[0]}
else
  "$@" >>"$log" 2>&1
  rc=$?
fi
if [ "$rc" -eq 0 ]; then
  echo " done ($((SECONDS - t0)) s)" >&2
  exit 0
fi
echo " FAILED ($((SECONDS - t0)) s); the last lines of $log:" >&2
tail -n 20 "$log" | sed 's/^/    /' >&2
exit "$rc"
