/* Shared memory of threadlock/host: a file in a host directory mapped
 * MAP_SHARED, whose data region becomes a SharedArrayBuffer
 * (binding_shm.c). This is the core's interface; it includes no Node-API
 * header.
 *
 * The file: a header page (TL_SHM_HEADER bytes: magic, layout version,
 * the data size), then the data, zero-filled when the file is created.
 * Every open maps the file anew (one mapping per SharedArrayBuffer made),
 * and every mapping is in a process-wide registry of address ranges, so
 * that the glue can tell whether an address lies in shared memory, whatever
 * JavaScript object (or worker thread) reaches it.
 */
#ifndef TL_SHM_H_
#define TL_SHM_H_

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "host.h"

/* The header before the data (the data stays page-aligned): the header
 * page, then the waiter nodes (shm_wait.c). */
#define TL_SHM_HEADER 65536
#define TL_SHM_NODES_AT 4096
#define TL_SHM_NODES ((TL_SHM_HEADER - TL_SHM_NODES_AT) / 32)
/* The layout version written in the header. */
#define TL_SHM_VERSION 1
/* Errors of tl_shm_open besides those of error.h. */
enum {
  TL_SHM_ESIZE = -20,  /* the file exists with another data size */
  TL_SHM_ENOTSUP = -21 /* this runtime cannot share the mapping (glue) */
};

typedef struct tl_shm_s tl_shm_t;

/* Owner ids (shm_owners.c): process slots of the header page, their
 * liveness bytes (OFD write locks) and claim bytes. */
#define TL_SHM_SLOTS 96
#define TL_SHM_THREADS 128
#define TL_SHM_LIVE 128  /* byte TL_SHM_LIVE + slot: held while alive */
#define TL_SHM_CLAIM 256 /* byte TL_SHM_CLAIM + slot: held while claimed */

/* One process's join of one file: its slot. Made by the first mapping of
 * the file in the process, shared by the others (by device and inode),
 * left when the last mapping and thread record let go. */
typedef struct tl_shm_join_s tl_shm_join_t;
tl_shm_join_t *tl__shm_join(int fd, tl_host_error_t *e);
void tl__shm_leave(tl_shm_join_t *j);

/* The join of the mapping that holds `addr` (NULL: none). The caller keeps
 * the mapping alive (a typed array over it in its call). */
tl_shm_join_t *tl_shm_find(const void *addr);

/* Gives the calling thread an owner id in the file (29 bits, never 0,
 * unique across the host's processes); 0, or TL_HOST_ENODES (the process
 * had TL_SHM_THREADS threads ask) or TL_HOST_ECORRUPT. Takes a reference
 * on the join, which tl_shm_thread_remove drops (the thread's end). */
int tl_shm_thread_add(tl_shm_join_t *j, uint32_t *id);
void tl_shm_thread_remove(tl_shm_join_t *j, uint32_t id);

/* Where the header page records the data size (shm_linux.c). */
#define TL_SHM_SIZE_AT 16

/* 0 while the file still has its whole length (an fstat: the header and
 * the data size the header records), else TL_HOST_ECORRUPT: checked
 * before the library touches the header or the data, so that a file
 * shrunk under this process is an error, not SIGBUS. */
int tl_shm_header_ok(tl_shm_join_t *j);

/* The mapping that holds `addr`: its join and the start of its header
 * (`*base`); NULL when none. The caller keeps the mapping alive. */
tl_shm_join_t *tl_shm_find_map(const void *addr, char **base);

/* Blocks the calling thread (owner id `owner`) while the `width`-byte
 * word at `word` (in the mapping at `base`) holds `expected`, until a
 * tl_shm_notify of any process counts it, `timeout_ms` passes (never
 * early; >= 1e15: none) or `stop` says so. Returns the core's
 * TL_RESULT_OK, _NOT_EQUAL, _TIMED_OUT, _INTERRUPTED, or TL_HOST_ENODES
 * (every waiter node of the file in use) or TL_HOST_ECORRUPT. */
int tl_shm_wait(tl_shm_join_t *j, char *base, const void *word, int width,
                int64_t expected, double timeout_ms, uint32_t owner,
                const tl_host_stop_t *stop);

/* Wakes up to `count` (< 0: all) waiters of the word in every process,
 * oldest first; returns how many it woke, or TL_HOST_ECORRUPT. */
int64_t tl_shm_notify(tl_shm_join_t *j, char *base, const void *word,
                      int64_t count);

/* The waiters of the word whose owner is alive (for the tests and
 * waiterCount), or TL_HOST_ECORRUPT. */
int64_t tl_shm_waiters(tl_shm_join_t *j, char *base, const void *word);

/* Nodes not free, whatever their owner (for the tests). The caller has
 * checked the header (tl_shm_header_ok). */
int64_t tl_shm_nodes_used(char *base);

/* Whether owner `id` of the file is alive: 1, 0, or TL_HOST_ECORRUPT. */
int tl_shm_owner_alive(tl_shm_join_t *j, uint32_t id);
uint32_t tl_shm_join_slot(tl_shm_join_t *j);

/* Opens (creating it when missing, zero-filled, mode 0600) the file `file`
 * in the absolute directory `dir` (created with mode 0700 when missing),
 * after the host's trust checks of the directory and the file, with a data
 * region of `size` bytes (a multiple of 8, at least 8), and maps it shared.
 * Returns NULL with `e` set; TL_SHM_ESIZE says the file holds another
 * size, `*found` then holds it. */
tl_shm_t *tl_shm_open(const char *dir, const char *file, uint64_t size,
                      uint64_t *found, tl_host_error_t *e);

/* The data region (size bytes) of a mapping. */
void *tl_shm_data(tl_shm_t *m);
uint64_t tl_shm_size(tl_shm_t *m);

/* Unmaps a mapping, closes its file and takes it out of the registry. Runs
 * on any thread (the SharedArrayBuffer's finalizer), once per mapping. */
void tl_shm_close(tl_shm_t *m);

/* Whether any byte of [addr, addr + len) lies in a mapping of this
 * process. Costs one atomic load while the process has no mapping. Runs on
 * any thread. */
int tl_shm_contains(const void *addr, size_t len);

/* The number of live mappings of this process (for the tests). */
int tl_shm_count(void);

#endif
