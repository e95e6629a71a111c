#!/usr/bin/env bash
# Allocation-failure runs of the addon: copies the package to a temporary
# directory, builds it there with TL_FAULT_INJECTION (so that the normal
# build stays as it is) and runs test/fault/*.test.js against that copy.
# The C core alone gets the same treatment in test/c/alloc_fail.c.
#
# Where the compiler has AddressSanitizer, the copy is built with it and
# node runs with the runtime preloaded, so that a use after free or an
# overflow in the glue fails the run. Leak detection stays off there
# (node's own allocations at exit would drown it); the tests count the
# addon's live blocks instead.
#
# Without AddressSanitizer the run proves less, so it is never dropped
# quietly: with CI set, a compiler without it fails the run; elsewhere the
# run goes on without it and says so.
#
# Usage: test/fault/run.sh [mocha args ...]
# Environment: TL_FAULT_ASAN=0 builds and runs without AddressSanitizer, on
# purpose (also in CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r package.json index.js index.mjs lib src scripts binding.gyp "$tmp"/
ln -s "$root/node_modules" "$tmp/node_modules"

cflags="-DTL_FAULT_INJECTION ${CFLAGS:-}"
ldflags=${LDFLAGS:-}
preload=
asan=$(${CC:-cc} -print-file-name=libasan.so 2>/dev/null || true)
if [ "${TL_FAULT_ASAN:-1}" != 0 ]; then
  if [ -f "$asan" ]; then
    cflags="$cflags -fsanitize=address -fno-omit-frame-pointer -g"
    ldflags="$ldflags -fsanitize=address"
    preload=$asan
  elif [ -n "${CI:-}" ]; then
    echo "test/fault/run.sh: ${CC:-cc} has no AddressSanitizer runtime (libasan.so), and CI requires it (TL_FAULT_ASAN=0 runs without it on purpose)" >&2
    exit 1
  else
    echo "test/fault/run.sh: !!! no AddressSanitizer runtime for ${CC:-cc}: running WITHOUT it (CI would fail here) !!!" >&2
  fi
fi
(cd "$tmp" && CFLAGS="$cflags" LDFLAGS="$ldflags" \
  THREADLOCK_FORCE_BUILD=1 node scripts/install.js >build.log 2>&1) || {
  cat "$tmp/build.log" >&2
  echo "test/fault/run.sh: the fault-injection build failed" >&2
  exit 1
}

echo "test/fault: ${preload:+AddressSanitizer, }TL_FAULT_INJECTION build in $tmp"
LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
  THREADLOCK_FAULT_ROOT="$tmp" node node_modules/.bin/mocha --no-config \
  --timeout 120000 "$@" test/fault/*.test.js
