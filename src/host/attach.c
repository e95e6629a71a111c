/* threadlock/host, Attaching to a table (after the trust checks of
 * files_linux.c) and detaching from it.
 */

#include "table.h"

tl_host_t *
tl_host_attach(const char *dir, tl_host_error_t *e)
{
  size_t size = (sizeof(tl_table_t) + 4095) & ~(size_t)4095;
  uint64_t dev = 0, ino = 0, have = 0;
  uint8_t boot[16];
  tl_hdr_t hdr;
  tl_host_t *h = calloc(1, sizeof(*h));
  int first, dirfd;
  uint32_t holder = 0;

  if (h == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
    return NULL;
  }
  h->fd = -1;
  h->fence_fd = -1;
  h->lock = tl__hp_mutex_new();
  h->local = tl__hp_mutex_new();
  if (h->lock == NULL || h->local == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
    goto fail;
  }
  dirfd = tl__hp_open_dir(dir, 1, e);
  if (dirfd < 0)
    goto fail;
  h->fd = tl__hp_open_file(dirfd, dir, TL_FILE, e);
  if (h->fd >= 0) {
    h->fence_fd = tl__hp_open_file(dirfd, dir, TL_FENCE_FILE, e);
    if (h->fence_fd < 0) {
      tl__hp_close(h->fd);
      h->fd = -1;
    }
  }
  tl__hp_close(dirfd);
  if (h->fd < 0)
    goto fail;
  tl__hp_boot_id(boot);
  /* First attacher: nobody else holds byte 0, so the file is ours to
   * re-initialise (LMDB's and SQLite's approach). Otherwise a read lock,
   * waited for only as long as an initialisation can take: a lock that
   * stays is someone else's, which must not hang this call for ever. */
  first = tl__hp_trylock(h->fd, 0, 1) == 0;
  if (!first &&
      tl__hp_lock_within(h->fd, 0, 0, TL_ATTACH_WAIT_MS, &holder) != 0) {
    if (holder != 0)
      tl__host_fail(e, TL_HOST_EATTACH, 0,
                    "byte 0 of the table file in '%s' has been locked by "
                    "process %u for %d s (only threadlock/host may lock it)",
                    dir, (unsigned)holder, TL_ATTACH_WAIT_MS / 1000);
    else
      tl__host_fail(e, TL_HOST_EATTACH, 0,
                    "byte 0 of the table file in '%s' has been locked for "
                    "%d s (a process attaching now is stopped, or another "
                    "program locks it)",
                    dir, TL_ATTACH_WAIT_MS / 1000);
    goto fail;
  }
  if (tl__hp_identity(h->fd, &dev, &ino, &have) != 0) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "cannot check the table file: %s",
                  strerror(errno));
    goto fail;
  }
  if (first) {
    if (tl__hp_allocate(h->fd, size) != 0) {
      tl__host_fail(e, TL_HOST_ESYS, errno,
                    "cannot size the table file in '%s': %s", dir,
                    strerror(errno));
      goto fail;
    }
  } else {
    /* Read (not mapped: it may be short) to tell another version from a
     * corrupt file. */
    memset(&hdr, 0, sizeof(hdr));
    long n = tl__hp_read(h->fd, &hdr, sizeof(hdr), 0);
    if (n >= 16 && hdr.magic == TL_MAGIC && hdr.version != TL_VERSION) {
      tl__host_fail(e, TL_HOST_EVERSION, 0,
                    "the table file in '%s' has layout version %u, and this "
                    "threadlock uses version %u: it is in use by processes "
                    "of another threadlock version, which cannot share locks "
                    "with this one; it is rebuilt when none of them uses it",
                    dir, (unsigned)hdr.version, (unsigned)TL_VERSION);
      goto fail;
    }
    if (have < size || (size_t)n < sizeof(hdr) || hdr.magic != TL_MAGIC) {
      tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                    "the table file in '%s' is corrupt (%s); it is rebuilt "
                    "when no process uses it",
                    dir, have < size ? "too small" : "bad header");
      goto fail;
    }
  }
  h->t = tl__hp_map(h->fd, size);
  if (h->t == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, errno,
                  "cannot map the table file in '%s': %s", dir,
                  strerror(errno));
    goto fail;
  }
  h->size = size;
  if (first) {
    if (tl__other_path(h->t, dev, ino, boot))
      goto other_path;
    if (tl__init(h, size, dev, ino, boot) != 0) {
      tl__host_fail(e, TL_HOST_ESYS, errno,
                    "cannot write the fence file in '%s': %s", dir,
                    strerror(errno));
      goto fail;
    }
    /* Downgrade to shared: later attachers see us. */
    tl__hp_trylock(h->fd, 0, 0);
  } else if (!tl__check_header(h->t, size)) {
    tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                  "the table file in '%s' is corrupt (bad header); it is "
                  "rebuilt when no process uses it",
                  dir);
    goto fail;
  } else if (h->t->hdr.ident_dev != dev || h->t->hdr.ident_ino != ino) {
    goto other_path;
  }
  h->generation = h->t->hdr.generation;
  /* Claim a slot: a free one first, else one whose process is gone. */
  h->slot = TL_HOST_SLOTS;
  for (int pass = 0; pass < 2 && h->slot == TL_HOST_SLOTS; pass++) {
    for (uint32_t s = 0; s < TL_HOST_SLOTS; s++) {
      if (pass == 0 && h->t->slots[s].state != SLOT_FREE)
        continue;
      if (tl__hp_trylock(h->fd, TL_LIVE + s, 1) == 0) {
        h->slot = s;
        break;
      }
    }
  }
  if (h->slot == TL_HOST_SLOTS) {
    tl__host_fail(e, TL_HOST_EATTACH, 0,
                  "every process slot of the table in '%s' is in use (%d)", dir,
                  TL_HOST_SLOTS);
    goto fail;
  }
  if (tl__crit_lock(h, -1) != 0) {
    tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                  "the table file in '%s' shrank or was rebuilt while "
                  "attaching",
                  dir);
    goto fail;
  }
  tl_slot_t *me = &h->t->slots[h->slot];
  if (me->state != SLOT_FREE)
    tl__recover(h, h->slot);
  tl__sweep(h);
  const char *fake = getenv("THREADLOCK_HOST_TEST_PID");
  me->pid = fake != NULL ? (uint32_t)strtoul(fake, NULL, 10) : tl__hp_pid();
  me->start_time = tl__hp_start_time();
  me->gen++;
  me->client = tl__next_token(h);
  me->state = SLOT_ATTACHED;
  tl__crit_unlock(h);
  return h;

other_path:
  tl__host_fail(e, TL_HOST_EATTACH, 0,
                "the table file in '%s' is in use through another path to "
                "the same file (device %llu inode %llu here, device %llu "
                "inode %llu there), such as an overlay mount and its upper "
                "directory, whose processes this one cannot see; every "
                "process must use the same path",
                dir, (unsigned long long)dev, (unsigned long long)ino,
                (unsigned long long)h->t->hdr.ident_dev,
                (unsigned long long)h->t->hdr.ident_ino);
fail:
  if (h->t != NULL)
    tl__hp_unmap(h->t, size);
  if (h->fd >= 0)
    tl__hp_close(h->fd);
  if (h->fence_fd >= 0)
    tl__hp_close(h->fence_fd);
  if (h->lock != NULL)
    tl__hp_mutex_free(h->lock);
  if (h->local != NULL)
    tl__hp_mutex_free(h->local);
  free(h);
  return NULL;
}

void
tl_host_detach(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  /* A table that shrank or was rebuilt is not touched: the byte locks go
   * with the descriptor, and the others recover what was ours. */
  if (tl__crit_lock(h, -1) != 0)
    goto gone;
  /* Everything of ours leaves the table, as a death would, except that
   * nobody is told the owner died. */
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    if (n->slot != h->slot || atomic_load(&n->state) == TL_HOST_FREE)
      continue;
    uint32_t st = atomic_load(&n->state);
    if ((st == TL_HOST_WAITING || st == TL_HOST_HELD) &&
        n->name < TL_HOST_NAMES) {
      uint32_t at = n->name;
      tl__list_unlink(h, n);
      tl__node_free(h, n);
      tl__list_process(h, at, 0);
    } else {
      tl__node_free(h, n);
    }
  }
  h->t->slots[h->slot].state = SLOT_FREE;
  tl__crit_unlock(h);
gone:
  tl__hp_unlock(h->fd, TL_LIVE + h->slot);
  tl_host_stop_watchers(h);
  tl__hp_unmap(h->t, h->size);
  tl__hp_close(h->fd);
  tl__hp_close(h->fence_fd);
  tl__hp_mutex_free(h->lock);
  tl__hp_mutex_free(h->local);
  free(h);
}
