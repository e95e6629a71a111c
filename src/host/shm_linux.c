/* Linux implementation of shm.h: shared-memory files of threadlock/host.
 *
 * Opening. The directory and the file are opened by the host's own trust
 * checks (files_linux.c: the user is the boundary; owner, mode, symbolic
 * links, link count and file type). The file's first use is serialised by
 * an OFD write lock on byte 0 of the file, held only while the file is
 * sized and its header checked or written (waited for at most 5 s): the
 * opener that finds the file empty, or with a header never completed,
 * sizes it, allocates every block (posix_fallocate) and writes the header
 * last. A process killed before that leaves a file that the next opener
 * initialises again; none was ever mapped by anyone.
 *
 * No SIGBUS from this library. A store into a page of a file mapping whose
 * blocks cannot be allocated (a full disk), or beyond the end of a file
 * that shrank, raises SIGBUS in the process that touches it. So every open
 * allocates every block of the file again (a file made sparse by someone is
 * refused when its blocks cannot be had: ENOSPC, or a file system without
 * fallocate), refuses a file whose length is not the header's size
 * (ECORRUPT), and never truncates a file that has a header. What the same
 * user can still do (truncate the file under running processes: plain
 * loads and stores from JavaScript then raise SIGBUS) is documented in
 * docs/api.md: the trust boundary is the user, as for the table.
 *
 * The registry. Every mapping is in one process-wide list of address
 * ranges, under a mutex; `tl__shm_live` counts them so that the check of
 * an address costs one atomic load while the process maps nothing, which
 * is the case of every process that does not use shared memory (the
 * in-process primitives keep their speed).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform.h"
#include "shm.h"

/* The header page. Only the fields below are used; the rest of the page is
 * zero and reserved for later versions (a waiter list, owner ids). */
typedef struct {
  char magic[8];    /* "TLSHM\0\0\0", written last by the creator */
  uint32_t version; /* TL_SHM_VERSION */
  uint32_t header;  /* TL_SHM_HEADER: where the data starts */
  uint64_t size;    /* the data size in bytes */
} tl_shm_header_t;

_Static_assert(offsetof(tl_shm_header_t, size) == TL_SHM_SIZE_AT,
               "shm.h names where the size is");

static const char tl__shm_magic[8] = { 'T', 'L', 'S', 'H', 'M', 0, 0, 0 };

struct tl_shm_s {
  /* Immutable from open to close. */
  tl_shm_join_t *join; /* this process's slot in the file */
  char *base;          /* the mapping: header, then data */
  uint64_t size;       /* the data size */
  /* In the registry; protected by tl__shm_lock. */
  tl_shm_t *next;
  /* References (the data's SharedArrayBuffer, views of the header page);
   * protected by tl__shm_lock. */
  int refs;
};

/* The registry of this process's mappings. */
static pthread_mutex_t tl__shm_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_shm_t *tl__shm_list; /* protected by tl__shm_lock */
/* The length of tl__shm_list, written under tl__shm_lock, read without. */
static _Atomic int tl__shm_live;

/* How long an opener waits for another one's initialisation (byte 0). */
#define TL_SHM_INIT_WAIT_MS 5000

static int
tl__shm_header_read(int fd, tl_shm_header_t *h)
{
  memset(h, 0, sizeof(*h));
  return tl__hp_read(fd, h, sizeof(*h), 0) == (long)sizeof(*h) ? 0 : -1;
}

/* Sizes an empty (or never completed) file and writes its header: the
 * data is zero because the file is truncated to nothing first. Byte 0 is
 * held. */
static int
tl__shm_create(int fd, const char *path, uint64_t size, tl_host_error_t *e)
{
  tl_shm_header_t h;
  off_t total = (off_t)(TL_SHM_HEADER + size);
  int r;

  if (ftruncate(fd, 0) != 0 || ftruncate(fd, total) != 0)
    return tl__host_fail(e, TL_HOST_ESYS, errno, "cannot size '%s': %s", path,
                         strerror(errno));
  r = posix_fallocate(fd, 0, total);
  if (r != 0)
    return tl__host_fail(
        e, TL_HOST_ESYS, r,
        "cannot allocate %llu bytes for '%s': %s (every block is allocated "
        "when the file is made, so that no store into it can fail later)",
        (unsigned long long)total, path, strerror(r));
  memset(&h, 0, sizeof(h));
  h.version = TL_SHM_VERSION;
  h.header = TL_SHM_HEADER;
  h.size = size;
  /* The header without the magic first, then the magic: a reader that sees
   * the magic sees a complete header. */
  if (pwrite(fd, (const char *)&h + 8, sizeof(h) - 8, 8) !=
          (ssize_t)(sizeof(h) - 8) ||
      pwrite(fd, tl__shm_magic, 8, 0) != 8)
    return tl__host_fail(e, TL_HOST_ESYS, errno, "cannot write '%s': %s", path,
                         strerror(errno));
  return 0;
}

/* Checks the header and length of an initialised file, and allocates its
 * blocks again. Byte 0 is held. */
static int
tl__shm_check(int fd, const char *path, const tl_shm_header_t *h, uint64_t size,
              uint64_t *found, tl_host_error_t *e)
{
  uint64_t dev, ino, len;
  int r;

  if (h->version != TL_SHM_VERSION || h->header != TL_SHM_HEADER)
    return tl__host_fail(
        e, TL_HOST_EVERSION, 0,
        "'%s' is shared memory of another layout version (%u, this is %u)",
        path, (unsigned)h->version, (unsigned)TL_SHM_VERSION);
  if (h->size != size) {
    *found = h->size;
    return tl__host_fail(e, TL_SHM_ESIZE, 0,
                         "'%s' exists with size %llu, not %llu", path,
                         (unsigned long long)h->size, (unsigned long long)size);
  }
  if (tl__hp_identity(fd, &dev, &ino, &len) != 0)
    return tl__host_fail(e, TL_HOST_ESYS, errno, "cannot check '%s': %s", path,
                         strerror(errno));
  if (len != TL_SHM_HEADER + size)
    return tl__host_fail(
        e, TL_HOST_ECORRUPT, 0,
        "'%s' is %llu bytes long, not the %llu its header says: it was "
        "truncated or extended (remove it to start again)",
        path, (unsigned long long)len,
        (unsigned long long)(TL_SHM_HEADER + size));
  r = posix_fallocate(fd, 0, (off_t)len);
  if (r != 0)
    return tl__host_fail(e, TL_HOST_ESYS, r,
                         "cannot allocate the blocks of '%s': %s", path,
                         strerror(r));
  return 0;
}

/* Opens and checks the file; -1 with `e` set, -2 when the file was removed
 * between its opening and the lock (the caller opens it again). Returns the
 * fd with byte 0 unlocked. */
static int
tl__shm_prepare(int dirfd, const char *dir, const char *file, uint64_t size,
                uint64_t *found, tl_host_error_t *e)
{
  char path[4096 + 256];
  tl_shm_header_t h;
  uint32_t holder;
  struct stat st;
  int fd;

  snprintf(path, sizeof(path), "%s/%s", dir, file);
  fd = tl__hp_open_file(dirfd, dir, file, e);
  if (fd < 0)
    return -1;
  if (tl__hp_lock_within(fd, 0, 1, TL_SHM_INIT_WAIT_MS, &holder) != 0) {
    tl__host_fail(e, TL_HOST_EATTACH, 0,
                  "'%s' is being initialised by another process (byte 0 locked "
                  "for %d ms%s)",
                  path, TL_SHM_INIT_WAIT_MS,
                  holder != 0 ? ", by a process lock" : "");
    goto fail;
  }
  /* Removed (or replaced) while this process waited: its creator may have
   * failed and unlinked it. Open the name again. */
  if (fstat(fd, &st) != 0 || st.st_nlink != 1) {
    tl__hp_unlock(fd, 0);
    tl__hp_close(fd);
    return -2;
  }
  if (tl__shm_header_read(fd, &h) != 0 ||
      memcmp(h.magic, tl__shm_magic, 8) != 0) {
    /* Empty, or never completed: nobody has mapped it. */
    if (st.st_size != 0 && tl__shm_header_read(fd, &h) == 0 &&
        memcmp(h.magic, "\0\0\0\0\0\0\0\0", 8) != 0) {
      tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                    "'%s' is not threadlock shared memory (no header); remove "
                    "it or choose another name",
                    path);
      goto unlock;
    }
    if (tl__shm_create(fd, path, size, e) != 0) {
      /* Leave nothing behind: nobody has mapped the file (it has no
       * header), and an opener waiting for byte 0 sees it unlinked and
       * opens the name again. */
      if (ftruncate(fd, 0) != 0 || unlinkat(dirfd, file, 0) != 0) {
        /* An empty file without a header is made again by the next
         * opener: nothing more to do. */
      }
      goto unlock;
    }
  } else if (tl__shm_check(fd, path, &h, size, found, e) != 0) {
    goto unlock;
  }
  tl__hp_unlock(fd, 0);
  return fd;

unlock:
  tl__hp_unlock(fd, 0);
fail:
  tl__hp_close(fd);
  return -1;
}

tl_shm_t *
tl_shm_open(const char *dir, const char *file, uint64_t size, uint64_t *found,
            tl_host_error_t *e)
{
  tl_shm_t *m;
  int dirfd, fd = -2;

  if (size == 0 || size % 8 != 0 ||
      size > (uint64_t)INT64_MAX - TL_SHM_HEADER) {
    tl__host_fail(e, TL_HOST_ESYS, EINVAL, "bad size %llu",
                  (unsigned long long)size);
    return NULL;
  }
  dirfd = tl__hp_open_dir(dir, 1, e);
  if (dirfd < 0)
    return NULL;
  for (int tries = 0; fd == -2 && tries < 8; tries++)
    fd = tl__shm_prepare(dirfd, dir, file, size, found, e);
  tl__hp_close(dirfd);
  if (fd == -2)
    tl__host_fail(e, TL_HOST_EATTACH, 0,
                  "'%s/%s' was removed again and again while it was opened",
                  dir, file);
  if (fd < 0)
    return NULL;
  m = calloc(1, sizeof(*m));
  if (m == NULL) {
    tl__hp_close(fd);
    tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
    return NULL;
  }
  m->size = size;
  m->base = tl__hp_map(fd, (size_t)(TL_SHM_HEADER + size));
  if (m->base == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "cannot map '%s/%s': %s", dir, file,
                  strerror(errno));
    tl__hp_close(fd);
    free(m);
    return NULL;
  }
  /* The join takes the descriptor (the mapping needs none). */
  m->join = tl__shm_join(fd, e);
  if (m->join == NULL) {
    tl__hp_unmap(m->base, (size_t)(TL_SHM_HEADER + size));
    free(m);
    return NULL;
  }
  pthread_mutex_lock(&tl__shm_lock);
  m->refs = 1;
  m->next = tl__shm_list;
  tl__shm_list = m;
  atomic_fetch_add(&tl__shm_live, 1);
  pthread_mutex_unlock(&tl__shm_lock);
  return m;
}

/* The mapping of the registry that holds `addr`, or NULL, with one more
 * reference when `ref`. Without one the caller keeps the mapping alive (a
 * typed array over it in its call). */
static tl_shm_t *
tl__shm_at(const void *addr, int ref)
{
  uintptr_t a = (uintptr_t)addr;
  tl_shm_t *found = NULL;

  if (atomic_load_explicit(&tl__shm_live, memory_order_acquire) == 0)
    return NULL;
  pthread_mutex_lock(&tl__shm_lock);
  for (tl_shm_t *m = tl__shm_list; m != NULL && found == NULL; m = m->next) {
    uintptr_t s = (uintptr_t)m->base;
    if (a >= s && a < s + TL_SHM_HEADER + (uintptr_t)m->size)
      found = m;
  }
  if (found != NULL && ref)
    found->refs++;
  pthread_mutex_unlock(&tl__shm_lock);
  return found;
}

void *
tl_shm_data(tl_shm_t *m)
{
  return m->base + TL_SHM_HEADER;
}

tl_shm_join_t *
tl_shm_join_of(tl_shm_t *m)
{
  return m->join;
}

uint64_t
tl_shm_size(tl_shm_t *m)
{
  return m->size;
}

char *
tl_shm_base(tl_shm_t *m)
{
  return m->base;
}

tl_shm_t *
tl_shm_page_ref(const void *addr)
{
  return tl__shm_at(addr, 1);
}

void
tl_shm_close(tl_shm_t *m)
{
  pthread_mutex_lock(&tl__shm_lock);
  if (--m->refs > 0) {
    pthread_mutex_unlock(&tl__shm_lock);
    return;
  }
  for (tl_shm_t **p = &tl__shm_list; *p != NULL; p = &(*p)->next) {
    if (*p == m) {
      *p = m->next;
      break;
    }
  }
  atomic_fetch_sub(&tl__shm_live, 1);
  pthread_mutex_unlock(&tl__shm_lock);
  tl__hp_unmap(m->base, (size_t)(TL_SHM_HEADER + m->size));
  tl__shm_leave(m->join);
  free(m);
}

tl_shm_join_t *
tl_shm_find_map(const void *addr, char **base)
{
  tl_shm_t *m = tl__shm_at(addr, 0);

  if (m == NULL)
    return NULL;
  *base = m->base;
  return m->join;
}

tl_shm_join_t *
tl_shm_find(const void *addr)
{
  char *base;

  return tl_shm_find_map(addr, &base);
}

int
tl_shm_contains(const void *addr, size_t len)
{
  uintptr_t a = (uintptr_t)addr, b = a + len;
  int found = 0;

  if (atomic_load_explicit(&tl__shm_live, memory_order_acquire) == 0)
    return 0;
  pthread_mutex_lock(&tl__shm_lock);
  for (tl_shm_t *m = tl__shm_list; m != NULL && !found; m = m->next) {
    uintptr_t s = (uintptr_t)m->base;
    uintptr_t t = s + TL_SHM_HEADER + (uintptr_t)m->size;
    found = a < t && b > s;
  }
  pthread_mutex_unlock(&tl__shm_lock);
  return found;
}

int
tl_shm_count(void)
{
  return atomic_load(&tl__shm_live);
}
