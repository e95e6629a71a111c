/* One copy of threadlock per process.
 *
 * Every copy of the addon (every threadlock.node file at its own path) has
 * its own waiter table and names table, so two copies in one process would
 * never wake each other's waiters. The first copy to load claims the process;
 * any other copy refuses to load. See singleton.c for how the copies find
 * each other.
 *
 * The exported marker below is how copies of different versions recognize
 * each other: its symbol name, its layout and the meaning of `core` must
 * never change. A future incompatible scheme takes a new symbol name.
 */
#ifndef TL_SINGLETON_H_
#define TL_SINGLETON_H_

#include <stdatomic.h>
#include <stdint.h>

#define TL_SINGLETON_MAGIC 0x746c6f63u /* "tloc" */
#define TL_SINGLETON_LAYOUT 1u

typedef struct tl_singleton_s {
  uint32_t magic;  /* TL_SINGLETON_MAGIC; immutable */
  uint32_t layout; /* TL_SINGLETON_LAYOUT; immutable */
  /* The address of the marker of the copy that serves the process, 0 until
   * one claims it. Only the marker of the first copy mapped into the process
   * is used this way; it is set once, by compare-exchange, by any copy. */
  _Atomic uintptr_t core;
} tl_singleton_t;

/* Decides whether this copy serves the process. Returns 0 if it does (the
 * first call decides; later calls, from any thread, give the same answer).
 * Otherwise returns -1 and sets *message to an explanation naming both
 * files, allocated with malloc (NULL if that failed). Runs on any thread,
 * takes no lock of threadlock's. */
int tl_singleton_claim(char **message);

#endif /* TL_SINGLETON_H_ */
