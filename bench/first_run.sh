#!/usr/bin/env bash
# One first preseed, as a new user meets it: `cockpit memory preseed` on a 20-note folder
# (bench/first_run_notes), with a task text never used before (no cache of any kind can answer).
#   cold: a fresh data folder (no index, no model cache) that is deleted afterwards;
#   warm: the data folder $FIRST_RUN_DATA (created and indexed on the first warm run).
# Usage: bench/first_run.sh COCKPIT_BIN cold|warm
# Time it from outside, alternating the two installs you compare, e.g. with /usr/bin/time -v:
#   for i in 1 2 3 4 5; do /usr/bin/time -f "%e s wall %U+%S s cpu" bench/first_run.sh ~/.local/bin/cockpit cold; done
set -euo pipefail
BIN=$1 MODE=$2
NOTES="$(cd "$(dirname "$0")" && pwd)/first_run_notes"
TASK="how long do access tokens live before refresh (run $(date +%s%N) $$)"
export HF_HUB_OFFLINE=1
unset COCKPIT_MODEL_CACHE COCKPIT_INDEX COCKPIT_NO_SERVER
if [ "$MODE" = cold ]; then
  export COCKPIT_DATA_DIR=$(mktemp -d)
  trap 'rm -rf "$COCKPIT_DATA_DIR"' EXIT
else
  export COCKPIT_DATA_DIR=${FIRST_RUN_DATA:-/tmp/cockpit-first-run-warm}
fi
"$BIN" memory preseed --notes "$NOTES" "$TASK" >/dev/null
