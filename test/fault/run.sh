#!/usr/bin/env bash
# Allocation-failure runs of the addon: copies the package to a temporary
# directory, builds it there with TL_FAULT_INJECTION (so that the normal
# build stays as it is) and runs test/fault/*.test.js against that copy.
# The C core alone gets the same treatment in test/c/alloc_fail.c.
#
# Usage: test/fault/run.sh [mocha args ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r package.json index.js index.mjs lib src scripts binding.gyp "$tmp"/
ln -s "$root/node_modules" "$tmp/node_modules"
(cd "$tmp" && CFLAGS="-DTL_FAULT_INJECTION ${CFLAGS:-}" \
  THREADLOCK_FORCE_BUILD=1 node scripts/install.js >build.log 2>&1) || {
  cat "$tmp/build.log" >&2
  echo "test/fault/run.sh: the fault-injection build failed" >&2
  exit 1
}

THREADLOCK_FAULT_ROOT="$tmp" npx mocha --no-config --timeout 120000 \
  "$@" test/fault/*.test.js
