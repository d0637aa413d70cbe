#!/usr/bin/env bash
# One set-up step of `make run` / `make test`, quietly: one progress line on the terminal, the
# step's whole output in .setup-logs/<name>.log (gitignored), and on failure the log's last lines.
#
#   scripts/setup-step.sh NAME "what it does" COMMAND [ARG...]
#
# SETUP_VERBOSE=1 shows the output on the terminal instead (still written to the log).
# SETUP_PARALLEL=1 (steps run by `make -j`): the line is printed whole when the step ends, so the
# steps' lines do not interleave; a step still running after 20 s says so once.
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: setup-step.sh NAME DESCRIPTION COMMAND [ARG...]" >&2; exit 2; }
name=$1 what=$2; shift 2
logdir="$(cd "$(dirname "$0")/.." && pwd)/.setup-logs"
mkdir -p "$logdir"
log=$logdir/$name.log
line=$(printf 'set-up: %-44s' "$what")
t0=$SECONDS
[ "${SETUP_PARALLEL:-0}" = 1 ] || { printf '%s' "$line" >&2; line=; }
{ echo "# $(date -u +%FT%TZ) $*"; } >"$log"
if [ "${SETUP_VERBOSE:-0}" = 1 ]; then
  echo >&2
  "$@" 2>&1 | tee -a "$log" >&2
  rc=${PIPESTATUS[0]}
elif [ -n "$line" ]; then
  "$@" >>"$log" 2>&1 </dev/null &
  pid=$!
  for _ in {1..20}; do kill -0 "$pid" 2>/dev/null && sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then echo "$line running (log: .setup-logs/$name.log)" >&2; fi
  wait "$pid"
  rc=$?
else
  "$@" >>"$log" 2>&1
  rc=$?
fi
if [ "$rc" -eq 0 ]; then
  echo "$line done ($((SECONDS - t0)) s)" >&2
  exit 0
fi
echo "$line FAILED ($((SECONDS - t0)) s); the last lines of $log:" >&2
tail -n 20 "$log" | sed 's/^/    /' >&2
exit "$rc"
