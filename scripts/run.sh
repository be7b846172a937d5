#!/usr/bin/env bash
# Applies migrations, then runs the API and the worker side by side in this terminal (`pnpm start`;
# `pnpm dev` passes --watch to restart each on a source change). Ctrl-C or SIGTERM stops both once,
# each finishing its in-flight work, and says how they ended. Needs Node 24 and pnpm on PATH
# (scripts/start.sh brings them).
set -uo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[dispatch]\033[0m %s\n' "$*" >&2; }
watch=()
if [ "${1:-}" = "--watch" ]; then watch=(--watch); fi

pnpm --silent db:migrate || exit 1
# A person at a terminal reads pretty lines; a file or a log shipper gets JSON.
if [ -z "${LOG_FORMAT:-}" ] && [ -t 1 ]; then export LOG_FORMAT=pretty; fi

# Each process in its own process group, so a Ctrl-C reaches it once, from here, not also from the
# terminal: a second signal would cut its graceful shutdown short.
set -m
node "${watch[@]}" apps/api/src/server.ts &
api=$!
# The worker's /metrics at http://127.0.0.1:9464/metrics (docs/operations.md), unless set otherwise.
METRICS_PORT="${METRICS_PORT-9464}" node "${watch[@]}" apps/worker/src/main.ts &
worker=$!
set +m

stopping=false
stop() {
  if $stopping; then return; fi
  stopping=true
  say "stopping: the API and the worker finish their in-flight work"
  kill -TERM "$api" "$worker" 2>/dev/null
}
trap stop INT TERM

# The exit status of one child, waiting through the signals that interrupt `wait`.
status_of() {
  local status
  while :; do
    wait "$1"
    status=$?
    kill -0 "$1" 2>/dev/null || return "$status"
  done
}

# Whichever ends first (a signal, or a process that died), the other is stopped too.
wait -n "$api" "$worker"
stop
status_of "$api"
api_status=$?
status_of "$worker"
worker_status=$?
if [ "$api_status" -eq 0 ] && [ "$worker_status" -eq 0 ]; then
  say "stopped cleanly"
  exit 0
fi
say "stopped: API exit ${api_status}, worker exit ${worker_status}"
exit 1
