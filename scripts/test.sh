#!/usr/bin/env bash
# Installs what is missing and runs the whole test suite against local Postgres and Redis
# (or DATABASE_URL / REDIS_URL when set). Extra arguments go to vitest (a file filter, say).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
prepare
exec pnpm test "$@"
