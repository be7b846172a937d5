#!/usr/bin/env bash
# Makes sure a Chromium is there for the queue dashboard's browser test
# (apps/api/test/admin/queue-dashboard.test.ts, driven by playwright-core). Idempotent:
#   - a Chromium named by CHROMIUM_PATH, or `chromium` / `chromium-browser` on the PATH, is used as is;
#   - otherwise, as root on a machine with apt-get, installs Debian's `chromium` package;
#   - otherwise says why it cannot, and the test is skipped naming what is missing.
# Prints the binary's path on its last line when there is one. Exits 0 either way unless --strict
# is given: CI must not fail because a machine cannot install a browser.
set -uo pipefail

strict=false
[ "${1:-}" = "--strict" ] && strict=true

found() {
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    if [ -x "$CHROMIUM_PATH" ]; then
      echo "$CHROMIUM_PATH"
      return 0
    fi
    echo "[chromium] CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file" >&2
    return 1
  fi
  command -v chromium || command -v chromium-browser
}

give_up() {
  echo "[chromium] $1; the queue dashboard's browser test will be skipped" >&2
  if $strict; then exit 1; fi
  exit 0
}

if path=$(found); then
  echo "[chromium] using $path ($("$path" --version 2>/dev/null || echo 'version unknown'))" >&2
  echo "$path"
  exit 0
fi
[ -n "${CHROMIUM_PATH:-}" ] && give_up "CHROMIUM_PATH does not name a Chromium"

if [ "$(id -u)" -ne 0 ]; then
  give_up "no chromium on the PATH and not root, so it cannot be installed here (run: sudo apt-get install -y chromium, or set CHROMIUM_PATH)"
fi
if ! command -v apt-get >/dev/null; then
  give_up "no chromium on the PATH and no apt-get to install it (install Chromium and set CHROMIUM_PATH)"
fi

echo "[chromium] installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing (a fresh container) or stale: refresh them only when needed.
if ! apt-get install -y --no-install-recommends chromium >&2; then
  apt-get update >&2 && apt-get install -y --no-install-recommends chromium >&2 ||
    give_up "apt-get could not install chromium (no network or no package source?)"
fi

path=$(found) || give_up "chromium was installed but is not on the PATH"
echo "[chromium] installed $path ($("$path" --version 2>/dev/null || echo 'version unknown'))" >&2
echo "$path"
