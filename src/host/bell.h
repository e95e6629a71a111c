/* Doorbells of the glue's process helper (binding_host.c) besides the host
 * tables': one per shared-memory file that has promise waiters in this
 * process (binding_shm.c). The helper sleeps on every doorbell word at once
 * (futex_waitv), or, where it cannot, a thread of the bell's own does; when
 * the word moved it calls `ring`.
 */
#ifndef TL_BELL_H_
#define TL_BELL_H_

#include <stdatomic.h>
#include <stdint.h>

#include "platform.h"

typedef struct tl_bell_s tl_bell_t;
struct tl_bell_s {
  /* Set by the owner before tl__bell_add; immutable until tl__bell_remove
   * returned. `word` is a shared futex word that only grows; bumping it
   * once more is harmless (the bell's stop does). `check` says whether it
   * moved from `*seen` (1, updating it), not (0), or can no longer be read
   * (-1: rung once more, then left out). `ring` runs on the helper thread
   * with the process lock held: it must not take it or block. */
  uint32_t *word;
  int (*check)(tl_bell_t *b, uint32_t *seen);
  void (*ring)(tl_bell_t *b);
  /* > 0: its helper calls `check` at least every `slice_ms` even when the
   * word does not move (a bell whose check also looks at something that
   * may change unrung); 0: only when the word moves. */
  int slice_ms;
  /* binding_host.c's; protected by the process lock. */
  int shared;             /* served by the process helper */
  int broken;             /* its word can no longer be read */
  uint32_t seen;          /* the value the process helper acted on */
  tl_hp_thread_t *helper; /* the fallback: its own thread, or NULL */
  _Atomic int stopping;   /* tells its own thread to end */
  tl_bell_t *next;        /* in the process's list */
};

/* Puts a bell in the process's list (JS thread). -1 when no thread could
 * be started. */
int tl__bell_add(tl_bell_t *b);
/* Takes it out; once this returned, no helper reads it. JS thread. */
void tl__bell_remove(tl_bell_t *b);

#endif
