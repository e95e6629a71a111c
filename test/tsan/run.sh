#!/usr/bin/env bash
# The Node-API glue under ThreadSanitizer: copies the package to a temporary
# directory, builds the addon there with gcc's -fsanitize=thread (the normal
# build stays as it is), and runs a multi-threaded subset of the mocha suite
# against that copy with gcc's TSan runtime preloaded into an ordinary node.
#
# Node itself is not instrumented: TSan sees every access of the addon's
# code, the pthread and allocation calls of everybody, and no atomic
# operation of Node, V8 or libuv. The races it reports inside Node are
# therefore artifacts; test/tsan/node.supp suppresses those seen so far, by
# Node-internal function names that never reach the addon. Any other report
# fails the run. (clang's TSan runtime is a static library that only an
# instrumented executable can carry, so the build uses gcc, whose
# libtsan.so can be preloaded.)
#
# Usage: test/tsan/run.sh [test file ...]   (default: the subset below)
# Environment: TL_TSAN_KEEP=1 keeps the temporary directory and its logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

tsan=$(gcc -print-file-name=libtsan.so 2>/dev/null || true)
if [ ! -f "$tsan" ]; then
  echo "test/tsan/run.sh: gcc has no ThreadSanitizer runtime (libtsan.so); on Debian: apt-get install gcc" >&2
  exit 2
fi
tsan=$(readlink -f "$tsan")

tmp=$(mktemp -d)
[ -n "${TL_TSAN_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
# Every entry point (index, postgres, host) with the sources and tests.
cp -r package.json ./*.js ./*.mjs lib src scripts binding.gyp test "$tmp"/
ln -s "$root/node_modules" "$tmp/node_modules"

(cd "$tmp" && CC=gcc CFLAGS="-fsanitize=thread -g -O1 -fno-omit-frame-pointer ${CFLAGS:-}" \
  LDFLAGS="-fsanitize=thread ${LDFLAGS:-}" THREADLOCK_FORCE_BUILD=1 \
  node scripts/install.js >build.log 2>&1) || {
  cat "$tmp/build.log" >&2
  echo "test/tsan/run.sh: the ThreadSanitizer build failed" >&2
  exit 1
}
# (grep -q would close the pipe early, and pipefail would take nm's SIGPIPE
# for a missing symbol.)
if ! nm -D "$tmp/build/Release/threadlock.node" | grep __tsan_func_entry >/dev/null; then
  echo "test/tsan/run.sh: the addon was built without ThreadSanitizer" >&2
  exit 1
fi

# Threads contending, waiting, being terminated and exiting with requests
# pending: every path of the glue that crosses threads. Not
# robustness.test.js: its RSS bound does not hold with TSan's per-thread
# state (+49 MB over 1,000 workers), though it runs without a report.
# host-stress.test.js's short-lived processes end by process.exit() with
# threadlock/host's helper and watcher threads running, which the module's
# atexit function joins; host-helper.test.js starts and ends managers in
# workers around the process's one helper thread. Their child processes
# inherit the preload and the log path, so a report in any of them counts.
if [ $# -gt 0 ]; then
  files=("$@")
else
  files=(test/lock-stress.test.js test/atomics-stress.test.js test/atomics-threads.test.js
    test/asynclock-threads.test.js test/named-locks-threads.test.js
    test/semaphore.test.js test/rwlock.test.js test/termination-stress.test.js
    test/host-manager.test.js test/host-processes.test.js
    test/host-helper.test.js test/host-stress.test.js)
fi

echo "test/tsan: ThreadSanitizer build in $tmp, runtime $tsan"
# Each file in its own mocha process, with its own log directory. The
# runtime of gcc 12 (libtsan 2) sometimes dies in its own bookkeeping of a
# mapping that is not the addon's (the addon maps memory only for
# threadlock/host): "ThreadSanitizer failed to allocate 0xffffffffffffe000
# (-8192) bytes", a negative size it computed, then exit 66; seen in 1 of 6
# runs of termination-stress.test.js, whose workers' isolates map and unmap
# as they start and end. A file whose run ends that way, with no report,
# runs again (up to twice more); any report, any other failure, fails.
run_file() {
  local file=$1 logs=$2
  mkdir -p "$logs"
  (cd "$tmp" && LD_PRELOAD="$tsan" \
    TSAN_OPTIONS="suppressions=$root/test/tsan/node.supp log_path=$logs/tsan halt_on_error=0 report_signal_unsafe=0 history_size=4" \
    node node_modules/.bin/mocha --no-config --timeout 300000 "$file")
}
failed=0
for file in "${files[@]}"; do
  for attempt in 1 2 3; do
    logs="$tmp/logs/$(basename "$file")/$attempt"
    status=0
    run_file "$file" "$logs" || status=$?
    reports=$(cat "$logs"/tsan.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
    if [ "$reports" -gt 0 ]; then
      cat "$logs"/tsan.* >&2
      echo "test/tsan/run.sh: $file: $reports ThreadSanitizer report(s) (logs above)" >&2
      exit 1
    fi
    [ "$status" -ne 0 ] || break
    # Exit 66 is TSan's own: a fatal error of the runtime (a crash it
    # caught, a failed check) is logged in the same files, not as a WARNING.
    for log in "$logs"/tsan.*; do
      [ -f "$log" ] || continue
      echo "--- $log" >&2
      cat "$log" >&2
    done
    if [ "$status" -eq 66 ] && [ "$attempt" -lt 3 ] &&
      grep -q 'ThreadSanitizer failed to allocate 0xf[0-9a-f]\{15\} (-' "$logs"/tsan.* 2>/dev/null; then
      echo "test/tsan: $file: the runtime's negative allocation (above), not a report; again" >&2
      continue
    fi
    echo "test/tsan/run.sh: $file failed under ThreadSanitizer (exit $status)" >&2
    failed=1
    break
  done
done
[ "$failed" -eq 0 ] || exit 1
echo "test/tsan: no ThreadSanitizer report"
