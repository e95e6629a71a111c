/* threadlock/host, The table's internal critical section: a futex word
 * holding its owner's slot number, taken over (and the table repaired) when
 * that owner is dead, and waited for at most as long as the caller allows,
 * since a live owner may be stopped.
 */

#include "table.h"

/* Takes the table's critical section. A contended wait sleeps in slices
 * and checks, each time, whether the owner's process is still there: a
 * dead owner's word is taken over and the table repaired. A live owner is
 * waited for at most `timeout_ms` (< 0: without a limit; 0: not at all),
 * since it may be stopped (SIGSTOP, a debugger) for as long as anyone
 * likes: an event loop must never wait for it. Returns 0, TL_HOST_EAGAIN
 * (timeout 0), TL_HOST_ETIMEDOUT, or TL_HOST_ECORRUPT when the file
 * shrank or was rebuilt under this attachment; only 0 holds the section. */
int
tl__crit_lock(tl_host_t *h, int64_t timeout_ms)
{
  _Atomic uint32_t *w = &h->t->hdr.crit;
  uint32_t me = h->slot + 1;
  uint32_t take = me;
  uint64_t deadline = 0;
  int r;

  if (timeout_ms > 0)
    deadline = tl__hp_monotonic_ms() + (uint64_t)timeout_ms;
  if (timeout_ms < 0)
    tl__hp_mutex_lock(h->local);
  else if ((timeout_ms == 0
                ? tl__hp_mutex_trylock(h->local)
                : tl__hp_mutex_timedlock(h->local, timeout_ms)) != 0)
    return timeout_ms == 0 ? TL_HOST_EAGAIN : TL_HOST_ETIMEDOUT;
  for (;;) {
    if (tl__table_ok(h) != 0) {
      r = TL_HOST_ECORRUPT;
      break;
    }
    uint32_t v = 0;
    if (atomic_compare_exchange_strong(w, &v, take))
      return 0;
    uint32_t owner = v & ~TL_WAITERS;
    /* Our own slot number there means a dead earlier owner of our slot:
     * no thread of this attachment nests the section. */
    if (owner == me || owner == 0 || owner > TL_HOST_SLOTS ||
        !tl__alive(h, owner - 1)) {
      if (atomic_compare_exchange_strong(w, &v, me | (v & TL_WAITERS))) {
        tl__repair(h);
        return 0;
      }
      continue;
    }
    int64_t slice = TL_CRIT_SLICE_MS;
    if (timeout_ms == 0) {
      r = TL_HOST_EAGAIN;
      break;
    }
    if (timeout_ms > 0) {
      uint64_t now = tl__hp_monotonic_ms();
      if (now >= deadline) {
        r = TL_HOST_ETIMEDOUT;
        break;
      }
      if ((int64_t)(deadline - now) < slice)
        slice = (int64_t)(deadline - now);
    }
    if (!(v & TL_WAITERS)) {
      if (!atomic_compare_exchange_strong(w, &v, v | TL_WAITERS))
        continue;
      v |= TL_WAITERS;
    }
    tl__hp_wait((uint32_t *)w, v, slice);
    /* Having slept, take it with the waiters bit, so that the unlock
     * wakes whoever else sleeps. */
    take = me | TL_WAITERS;
  }
  /* Leaving without the section after having set the waiters bit is
   * harmless: the owner's unlock wakes one sleeper too many at worst. */
  tl__hp_mutex_unlock(h->local);
  return r;
}

void
tl__crit_unlock(tl_host_t *h)
{
  uint32_t v = atomic_exchange(&h->t->hdr.crit, 0);
  if (v & TL_WAITERS)
    tl__hp_wake((uint32_t *)&h->t->hdr.crit, 1);
  tl__hp_mutex_unlock(h->local);
}
