/* Thread primitives for the waiter list core.
 *
 * The core uses libuv for its mutexes, condition variables and clock so that
 * the same sources link against Node's embedded libuv inside the addon and
 * against the system libuv in the standalone C tests (test/c/). libuv aborts
 * on lock failures that cannot happen, which is the policy the core wants.
 */
#ifndef TL_PLATFORM_H_
#define TL_PLATFORM_H_

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

typedef uv_mutex_t tl_mutex_t;
typedef uv_cond_t tl_cond_t;
typedef uv_once_t tl_once_t;

#define TL_ONCE_INIT UV_ONCE_INIT

#define tl_mutex_init(m) tl__check_init(uv_mutex_init(m))
#define tl_mutex_destroy(m) uv_mutex_destroy(m)
#define tl_mutex_lock(m) uv_mutex_lock(m)
#define tl_mutex_unlock(m) uv_mutex_unlock(m)
#define tl_cond_init(c) tl__check_init(uv_cond_init(c))
#define tl_cond_destroy(c) uv_cond_destroy(c)
#define tl_cond_signal(c) uv_cond_signal(c)
#define tl_cond_wait(c, m) uv_cond_wait(c, m)
#define tl_once(g, f) uv_once(g, f)

/* Monotonic clock in nanoseconds. */
#define tl_now_ns() uv_hrtime()

/* Waits at most `ns` nanoseconds; returns nonzero when the time ran out.
 * Like every condition wait it may also return early for no reason. */
static inline int
tl_cond_timedwait(tl_cond_t *c, tl_mutex_t *m, uint64_t ns)
{
  return uv_cond_timedwait(c, m, ns) != 0;
}

/* A failed mutex or condition variable initialization leaves the process
 * without a way to synchronize; there is nothing sensible to continue with. */
static inline void
tl__check_init(int rc)
{
  if (rc != 0)
    abort();
}

/* Converts a relative timeout in milliseconds into an absolute deadline in
 * nanoseconds on the tl_now_ns clock; UINT64_MAX stands for no deadline.
 * The one conversion of the waits, the gates and the async glue. */
static inline uint64_t
tl__deadline(double timeout_ms)
{
  uint64_t now;
  double ns;

  /* DoWait step 9: NaN and +Infinity mean no deadline, negative means 0.
   * No deadline reads no clock (a clock reading is a tenth of a queued
   * request's cost on a VM, bench/README.md row 7b). */
  if (isnan(timeout_ms) || (isinf(timeout_ms) && timeout_ms > 0))
    return UINT64_MAX;
  now = tl_now_ns();
  if (timeout_ms <= 0)
    return now;
  ns = ceil(timeout_ms * 1e6);
  if (ns >= (double)(UINT64_MAX - now))
    return UINT64_MAX;
  return now + (uint64_t)ns;
}

/* Fibonacci hashing of an address into `bits` bits: multiplying by 2^64
 * divided by the golden ratio spreads the 4- or 8-byte aligned addresses of
 * neighbouring elements evenly over the top bits. */
static inline size_t
tl__addr_hash(uintptr_t addr, unsigned bits)
{
  return (size_t)(((uint64_t)addr * UINT64_C(0x9E3779B97F4A7C15)) >>
                  (64 - bits));
}

static inline void
tl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#endif /* TL_PLATFORM_H_ */
