#!/usr/bin/env bash
# Installs what is missing, applies migrations, and runs the API and the worker against local
# Postgres and Redis. Ctrl-C stops both, letting in-flight work finish.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
prepare
exec bash scripts/run.sh
