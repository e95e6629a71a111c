/* threadlock/host, The table file's layout and identity: checked access to
 * what is read from it, the size check before every touch of the mapping,
 * the liveness probe of a slot, fencing tokens and the fence file, and the
 * (re)initialisation of the header.
 */

#include "table.h"

/* Fault injection for the tests: THREADLOCK_HOST_FAULT=crit, the process
 * kills itself inside the critical section of its first queued request,
 * with the node linked but the tail not yet updated; =stop, it stops
 * itself there (SIGSTOP), once. */
_Atomic int tl__fault = -1; /* read by the JS thread of any env */

int
tl__fault_armed(void)
{
  int f = atomic_load_explicit(&tl__fault, memory_order_relaxed);
  if (f < 0) {
    const char *v = getenv("THREADLOCK_HOST_FAULT");
    f = v == NULL                ? 0
        : strcmp(v, "crit") == 0 ? 1
        : strcmp(v, "stop") == 0 ? 2
                                 : 0;
    atomic_store_explicit(&tl__fault, f, memory_order_relaxed);
  }
  return f;
}

uint64_t
tl__hash(const uint16_t *s, size_t len)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

/* Whether the owner of slot `s` is alive. The attachment's own slot is
 * invisible to its own probes (same open file description). */
int
tl__alive(tl_host_t *h, uint32_t s)
{
  if (s == h->slot)
    return 1;
  return tl__hp_probe(h->fd, TL_LIVE + s) == TL_HP_OWNED;
}

/* Whether the mapping can be touched: the file still has the size that
 * was mapped (a file shrunk under a mapping faults with SIGBUS on the
 * pages past its end, so the size is asked for before every entry, by
 * lseek, the cheapest call that tells it, never caught with a signal
 * handler), and the table is the one
 * this attachment joined (not rebuilt since). Returns 0 or
 * TL_HOST_ECORRUPT. Truncating the file between this check and the
 * accesses that follow it (microseconds) is the one window left. */
int
tl__table_ok(tl_host_t *h)
{
  uint64_t size;

  if (tl__hp_size_now(h->fd, &size) != 0 || size < h->size)
    return TL_HOST_ECORRUPT;
  if (h->t->hdr.generation != h->generation || h->t->hdr.magic != TL_MAGIC)
    return TL_HOST_ECORRUPT;
  return 0;
}

/* A node index + 1 read from the file, checked. Returns NULL for 0 (no
 * node) and sets *bad for an index out of range. */
tl_node_t *
tl__node_at(tl_host_t *h, uint32_t ref, int *bad)
{
  if (ref == 0)
    return NULL;
  if (ref > TL_HOST_NODES) {
    *bad = 1;
    return NULL;
  }
  return &h->t->nodes[ref - 1];
}

uint32_t
tl__node_ref(tl_host_t *h, tl_node_t *n)
{
  return (uint32_t)(n - h->t->nodes) + 1;
}

/* Reserves tokens up to `limit` in the fence file, durably. */
static int
tl__fence_write(int fd, uint64_t limit)
{
  uint64_t rec[2] = { TL_FENCE_MAGIC, limit };
  return tl__hp_write_sync(fd, rec, sizeof(rec), 0);
}

/* The next token: strictly greater than every earlier one of this table,
 * and (through the fence file) of every earlier table of the directory.
 * Runs in crit. A failed write of the fence file (a full disk) does not
 * stop the grant; only a later rebuild could then go below it. */
uint64_t
tl__next_token(tl_host_t *h)
{
  tl_hdr_t *hd = &h->t->hdr;
  if (hd->fence + 1 > hd->fence_limit) {
    hd->fence_limit = hd->fence + 1 + TL_FENCE_BLOCK;
    tl__fence_write(h->fence_fd, hd->fence_limit);
  }
  return ++hd->fence;
}

/* Re-initialises the table (first attacher, byte 0 write-locked: nobody
 * else uses it). Tokens go on above the old table's fence when its header
 * is still readable, and above the fence file's record in any case: the
 * wall clock is read only when neither exists (a new directory). Returns
 * 0, or -1 when the fence file cannot be written. */
int
tl__init(tl_host_t *h, size_t size, uint64_t dev, uint64_t ino,
         const uint8_t boot[16])
{
  tl_table_t *t = h->t;
  uint64_t fence = 0, rec[2] = { 0, 0 };
  uint32_t generation = 0;
  uint64_t now = tl__hp_realtime_us();

  if (t->hdr.magic == TL_MAGIC && t->hdr.version >= 1 &&
      t->hdr.version <= TL_VERSION) {
    fence = t->hdr.fence;
    generation = t->hdr.generation;
  }
  if (tl__hp_read(h->fence_fd, rec, sizeof(rec), 0) == (long)sizeof(rec) &&
      rec[0] == TL_FENCE_MAGIC && rec[1] > fence)
    fence = rec[1];
  if (fence == 0)
    fence = now;
  if (tl__fence_write(h->fence_fd, fence + TL_FENCE_BLOCK) != 0)
    return -1;
  memset(t, 0, size);
  t->hdr.version = TL_VERSION;
  t->hdr.size = (uint32_t)size;
  t->hdr.nslots = TL_HOST_SLOTS;
  t->hdr.nnames = TL_HOST_NAMES;
  t->hdr.nnodes = TL_HOST_NODES;
  t->hdr.name_max = TL_HOST_NAME_MAX;
  t->hdr.fence = fence;
  t->hdr.fence_limit = fence + TL_FENCE_BLOCK;
  t->hdr.initialised_us = now;
  t->hdr.generation = generation + 1;
  t->hdr.ident_dev = dev;
  t->hdr.ident_ino = ino;
  memcpy(t->hdr.boot_id, boot, 16);
  atomic_thread_fence(memory_order_release);
  t->hdr.magic = TL_MAGIC;
  return 0;
}

int
tl__check_header(tl_table_t *t, size_t size)
{
  return t->hdr.magic == TL_MAGIC && t->hdr.version == TL_VERSION &&
         t->hdr.size == size && t->hdr.nslots == TL_HOST_SLOTS &&
         t->hdr.nnames == TL_HOST_NAMES && t->hdr.nnodes == TL_HOST_NODES &&
         t->hdr.name_max == TL_HOST_NAME_MAX;
}

/* Whether a valid table of this boot was made through another identity
 * of the file and has slots attached: processes this one cannot see (their
 * byte locks are on another inode) may be using it. A first attacher must
 * not rebuild it under them. Slots of processes that died stay attached
 * until one of their path attaches again (and rebuilds it) or a reboot. */
int
tl__other_path(tl_table_t *t, uint64_t dev, uint64_t ino,
               const uint8_t boot[16])
{
  if (t->hdr.magic != TL_MAGIC || t->hdr.version != TL_VERSION ||
      memcmp(t->hdr.boot_id, boot, 16) != 0 ||
      (t->hdr.ident_dev == dev && t->hdr.ident_ino == ino))
    return 0;
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    if (t->slots[s].state != SLOT_FREE)
      return 1;
  return 0;
}

void
tl__mine_set(tl_host_t *h, uint32_t i, uint32_t state)
{
  uint8_t was = atomic_exchange(&h->mine[i], (uint8_t)state);
  if (was == TL_HOST_WAITING && state != TL_HOST_WAITING)
    atomic_fetch_sub(&h->waiting, 1);
  else if (was != TL_HOST_WAITING && state == TL_HOST_WAITING)
    atomic_fetch_add(&h->waiting, 1);
}
