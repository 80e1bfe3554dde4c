#!/usr/bin/env bash
# Seconds from starting the app on a fresh data folder (no server, no index, no model cache) to
# its header saying the memory is ready ("memory: 20 notes · synced …"), as a person sees it in a
# terminal: the app runs in tmux and the screen is read every 0.1 s.
# Usage: bench/memory_ready.sh COCKPIT_BIN   → prints the seconds, or "timeout" after 120 s
set -euo pipefail
BIN=$1
NOTES="$(cd "$(dirname "$0")" && pwd)/first_run_notes"
DATA=$(mktemp -d) WS=$(mktemp -d) NAME="memready$$"
cleanup() {
  tmux kill-session -t "$NAME" 2>/dev/null || true
  COCKPIT_DATA_DIR=$DATA "$BIN" server stop >/dev/null 2>&1 || true
  rm -rf "$DATA" "$WS"
}
trap cleanup EXIT
start=$(date +%s.%N)
tmux new-session -d -s "$NAME" -x 160 -y 45 \
  "env HF_HUB_OFFLINE=1 COCKPIT_DATA_DIR=$DATA $BIN --notes $NOTES --workspace $WS"
for _ in $(seq 1200); do
  if tmux capture-pane -p -t "$NAME" 2>/dev/null | grep -q "memory: 20 notes · synced"; then
    echo "$(date +%s.%N) - $start" | bc
    exit 0
  fi
  sleep 0.1
done
echo timeout
