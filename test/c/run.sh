#!/usr/bin/env bash
# Builds every test/c/<behaviour>.c together with the core (src/table.c,
# gates.c, owners.c, names.c, heap.c, alloc.c) three ways (plain,
# ThreadSanitizer, AddressSanitizer + UndefinedBehaviorSanitizer), runs them
# all, and fails on any failed test or sanitizer report.
#
# Usage: test/c/run.sh [test ...]     (default: every test/c/*.c)
# Environment: TL_VARIANTS (default "plain tsan asan"), CC (plain build),
# and the tests' own settings (TL_STRESS_N, TL_SEED, TL_SCENARIO, ...).
set -u
cd "$(dirname "$0")/../.." || exit 2

out=test/c/build
core="src/table.c src/gate_queue.c src/gates.c src/lock.c src/rwlock.c src/sem.c src/owners.c src/names.c src/heap.c src/alloc.c"
variants=${TL_VARIANTS:-plain tsan asan}

# CI starts from a fresh machine; install only what is missing.
if ! pkg-config --exists libuv 2>/dev/null ||
  ! command -v clang >/dev/null; then
  sudo=
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  if ! $sudo apt-get update ||
    ! $sudo apt-get install -y libuv1-dev clang libclang-rt-14-dev pkg-config
  then
    echo "run.sh: cannot install libuv1-dev and clang" >&2
    exit 2
  fi
fi

# TL_FAULT_INJECTION only adds the allocation hooks, which stay idle unless
# a test (alloc_fail) arms them.
cflags="-std=c11 -D_GNU_SOURCE -DTL_FAULT_INJECTION -Wall -Wextra -Werror -Isrc"
cflags="$cflags $(pkg-config --cflags libuv)"
libs="-luv -lpthread -lm"
plain_cc=${CC:-cc}
command -v "$plain_cc" >/dev/null || plain_cc=clang
# The sanitizer builds want clang; gcc's sanitizers do the same job.
san_cc=clang
command -v clang >/dev/null || san_cc=gcc

export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
# A sync waiter lives on its thread's stack: also catch any access to it
# after its wait returned.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
ASAN_OPTIONS="$ASAN_OPTIONS:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

if [ $# -gt 0 ]; then
  tests=("$@")
else
  tests=()
  for f in test/c/*.c; do
    tests+=("$(basename "$f" .c)")
  done
fi

reports="WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:"

mkdir -p "$out"
passed=0
failed=0
start_all=$(date +%s)

# Runs one binary; with ThreadSanitizer, retries without address space
# randomization when the kernel's mmap randomization leaves no room for
# TSan's fixed shadow layout ("unexpected memory mapping").
run_one() {
  local bin=$1 log=$2 variant=$3
  "$bin" >"$log" 2>&1
  local rc=$?
  if [ "$variant" = tsan ] && grep -q "unexpected memory mapping" "$log"; then
    echo "(retrying under setarch -R: unexpected memory mapping)" >>"$log"
    setarch "$(uname -m)" -R "$bin" >>"$log" 2>&1
    rc=$?
  fi
  return $rc
}

for variant in $variants; do
  case $variant in
  plain) cc=$plain_cc; vflags="-O2" ;;
  tsan) cc=$san_cc; vflags="-O1 -g -fsanitize=thread" ;;
  asan)
    cc=$san_cc
    vflags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined"
    vflags="$vflags -fno-sanitize-recover=all"
    ;;
  *) echo "run.sh: unknown variant $variant" >&2; exit 2 ;;
  esac
  for t in "${tests[@]}"; do
    bin=$out/$t.$variant
    log=$out/$t.$variant.log
    # shellcheck disable=SC2086 # the flag lists are meant to split
    if ! $cc $cflags $vflags "test/c/$t.c" $core -o "$bin" $libs \
      >"$log" 2>&1; then
      echo "FAIL $t ($variant): build"
      sed 's/^/    /' "$log"
      failed=$((failed + 1))
      continue
    fi
    t0=$(date +%s%N)
    run_one "$bin" "$log" "$variant"
    rc=$?
    secs=$(awk "BEGIN { printf \"%.2f\", ($(date +%s%N) - $t0) / 1e9 }")
    # A report that somehow did not change the exit status still fails.
    if [ $rc -eq 0 ] && ! grep -qE "$reports" "$log"; then
      printf "ok   %-12s %-6s %6ss\n" "$t" "$variant" "$secs"
      passed=$((passed + 1))
    else
      printf "FAIL %-12s %-6s %6ss (exit %d; log %s)\n" "$t" "$variant" \
        "$secs" "$rc" "$log"
      tail -n 60 "$log" | sed 's/^/    /'
      failed=$((failed + 1))
    fi
  done
done

# A checker must catch known bugs: each is built in with -DTL_INJECT_BUG=n
# and must break the protocol in every scenario listed for it
# (TL_EXPECT_BUG=1 succeeds only then). check_injected <test> <entries>
# <sources...>: entries are n:scenarios.
check_injected() {
  local t=$1 entries=$2 entry n scenarios bin log
  shift 2
  [ -z "${TL_SKIP_INJECTED:-}" ] && [[ " ${tests[*]} " == *" $t "* ]] || return 0
  for entry in $entries; do
    n=${entry%%:*}
    scenarios=${entry#*:}
    bin=$out/$t.bug$n
    log=$out/$t.bug$n.log
    # shellcheck disable=SC2086
    if ! $plain_cc $cflags -O2 -DTL_INJECT_BUG="$n" "$@" -o "$bin" $libs \
      >"$log" 2>&1; then
      echo "FAIL $t with bug $n: build"
      sed 's/^/    /' "$log"
      failed=$((failed + 1))
      continue
    fi
    if TL_EXPECT_BUG=1 TL_SCENARIO=$scenarios "$bin" >"$log" 2>&1; then
      printf "ok   %s catches injected bug %s (%s)\n" "$t" "$n" "$scenarios"
      passed=$((passed + 1))
    else
      printf "FAIL %s misses injected bug %s (%s; log %s)\n" "$t" "$n" \
        "$scenarios" "$log"
      tail -n 20 "$log" | sed 's/^/    /'
      failed=$((failed + 1))
    fi
  done
}

# The lock protocol's checker (test/c/interleave.c), bugs built into the
# core (src/lock.c, src/rwlock.c):
#   1  readers let in one per pass               (a reader batch together)
#   2  new readers pass a queued writer           (writer preference)
#   3  a hand-off skips the oldest waiter         (I5: order)
#   4  hand-offs to an event loop's request that  (I7, issue 24 item 1)
#      is not there (the policy before I7)
#   5  a grant that lands while the request's     (the present watch)
#      thread watches for it is never taken up
injections="1:rw-readers-batch 2:rw-reader-behind-writer 3:lock-handoff-order"
injections="$injections 4:lock-loop-busy,rw-loop-busy 5:lock-basic"
# shellcheck disable=SC2086
check_injected interleave "$injections" test/c/interleave.c $core

# The model of the cross-process hand-off (test/c/shm_handoff.c, whose
# header lists its bugs):
#   1  no take-back when the grantee left first     (H2)
#   2  the node notified before the word is written  (H1)
#   3  the waiter woken from a scan before the free   (H3)
#   4  a left grantee's hand-off not free for others  (L7)
#   5  the grantee frees its node before taking up    (L8)
#   6  a free leaves WAITERS off while others wait    (H3, I2)
#   7  a running thread hands a free word on for ever (I6, FIFO)
handoff_injections="1:handoff-timeouts 2:handoff-basic 3:handoff-death"
handoff_injections="$handoff_injections 4:handoff-all 5:handoff-basic"
handoff_injections="$handoff_injections 6:handoff-death 7:fifo-death"
check_injected shm_handoff "$handoff_injections" test/c/shm_handoff.c

# The model of the Semaphore's reservation across processes
# (test/c/shm_sem.c, whose header lists its bugs):
#   1  a woken reserver publishes a new node         (S5)
#   2  a release clears RESERVED                     (S6)
#   3  a release ignores RESERVED alone              (S2)
#   4  RESERVED set before the node is published      (S5)
#   5  a death pokes nobody                          (S8)
#   6  a reserver gives up leaving RESERVED          (S5)
#   7  a sleeper's publication ignores the pokes     (S8)
#   8  a plain sleeper is not poked                  (S9)
sem_injections="1:sem-basic 2:sem-basic 3:sem-basic 4:sem-basic 5:sem-death"
sem_injections="$sem_injections 6:sem-timeouts 7:sem-death 8:sem-death"
check_injected shm_sem "$sem_injections" test/c/shm_sem.c

# The model of the pokes and doorbells of promise waiters across processes
# (test/c/shm_poke.c, whose header lists its bugs):
#   1  a poke rings a process as it frees, once per scan  (P1)
#   2  a poke does not ring its own process              (P2)
#   3  the poll clears its queued mark after its look
#   4  a notify rings before the node is NOTIFIED
#   5  the helper does not look at the poke counter     (P3)
poke_injections="1:poke-basic 2:poke-death 3:poke-basic 4:poke-basic"
poke_injections="$poke_injections 5:poke-arrival"
check_injected shm_poke "$poke_injections" test/c/shm_poke.c

# The model of the read holds of RWLocks across processes (test/c/shm_rw.c,
# whose header lists its bugs):
#   1  a reader counts its record after its look at the word  (R4)
#   2  a leaving reader uncounts before it frees its record   (R4)
#   3  the writer looks at the count only before its claim    (R4)
#   4  readers wait for a dead grantee's id to go       (a stall)
#   5  a dead grantee's id cleared with DIED           (it never held)
#   6  a reader handed the word frees it before it counts   (R5)
rw_injections="1:rw-basic 2:rw-basic 3:rw-basic 4:rw-handoff-death"
rw_injections="$rw_injections 5:rw-handoff-death 6:rw-handoff-reader"
check_injected shm_rw "$rw_injections" test/c/shm_rw.c

echo "total $(($(date +%s) - start_all))s"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
