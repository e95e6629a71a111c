/* The operating-system calls of threadlock/host, behind one small interface
 * so that the table protocol (src/host/table.h) never names a system call.
 * Linux implements it in platform_linux.c; macOS (os_sync_wait_on_address with
 * the shared flag, kqueue) and Windows (named events and mutexes,
 * LockFileEx) are each one more file implementing the same functions.
 *
 * Every function runs on any thread and takes no lock of its own.
 */
#ifndef TL_HOST_PLATFORM_H_
#define TL_HOST_PLATFORM_H_

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "error.h"

/* Results of tl__hp_wait. */
enum { TL_HP_WOKEN = 0, TL_HP_TIMED_OUT = 1 };

/* Results of tl__hp_probe: who holds a liveness byte. */
enum {
  TL_HP_FREE = 0,   /* nobody: its process is gone, or never was */
  TL_HP_OWNED = 1,  /* a write lock: the slot's process is alive */
  TL_HP_WATCHED = 2 /* only read locks: survivors noticing its end */
};

/* The files (files_linux.c). tl__hp_open_dir opens the absolute
 * directory `path`, creating missing directories with mode 0700 when
 * `create`, one component at a time without following symbolic links,
 * and refuses any directory on the way that another user could change
 * (see files_linux.c) and network or virtual file systems. Returns a
 * directory descriptor, or -1 with `e` set. */
int tl__hp_open_dir(const char *path, int create, tl_host_error_t *e);

/* Opens (creating it with mode 0600) `name` in the directory `dirfd`
 * (checked by tl__hp_open_dir; `dir` is its path, for messages) and
 * refuses anything but a regular file of this user, with one link, that
 * only this user can open. Returns the fd, or -1 with `e` set. */
int tl__hp_open_file(int dirfd, const char *dir, const char *name,
                     tl_host_error_t *e);
void tl__hp_close(int fd);

/* The file's identity as this process sees it (device, inode) and its
 * size now, from fstat; -1 when fstat fails. */
int tl__hp_identity(int fd, uint64_t *dev, uint64_t *ino, uint64_t *size);

/* The kernel's boot id (16 bytes, zeros when unknown): a table written
 * under another boot has no live process. */
void tl__hp_boot_id(uint8_t out[16]);

/* Reads `len` bytes at `offset` of the file (without mapping it).
 * Returns the number read, or -1. */
long tl__hp_read(int fd, void *buf, size_t len, uint64_t offset);
/* Writes `len` bytes at `offset` and waits until they are on the disk
 * (fdatasync). Returns 0, or -1 with errno. */
int tl__hp_write_sync(int fd, const void *buf, size_t len, uint64_t offset);

/* Byte-range locks owned by the open file description (not the process),
 * dropped by the kernel when the last descriptor of it closes, that is,
 * when the process dies. `exclusive` asks for a write lock. Non-blocking
 * forms return 0 on success and -1 when another description conflicts. */
int tl__hp_trylock(int fd, uint64_t byte, int exclusive);
int tl__hp_lock_wait(int fd, uint64_t byte, int exclusive);
/* As tl__hp_lock_wait, for at most `timeout_ms`: 0, or -1 when the lock
 * is still held then (`*holder`: the pid of a process-owned lock that is
 * in the way, or 0 when unknown, such as an OFD lock). */
int tl__hp_lock_within(int fd, uint64_t byte, int exclusive, int64_t timeout_ms,
                       uint32_t *holder);
void tl__hp_unlock(int fd, uint64_t byte);
int tl__hp_probe(int fd, uint64_t byte);

/* Sizes the file (allocating its blocks, so that a full disk shows now
 * and not as SIGBUS later) and maps it shared. */
int tl__hp_allocate(int fd, size_t size);
int tl__hp_size(int fd, size_t *size);
/* The size now, by lseek (cheaper than fstat; moves the descriptor's
 * offset, which positional reads and writes ignore). */
int tl__hp_size_now(int fd, uint64_t *size);
void *tl__hp_map(int fd, size_t size);
void tl__hp_unmap(void *addr, size_t size);

/* Futex-style waits on a 32-bit word of the shared mapping, keyed by the
 * kernel on (file, offset), so that they cross processes. timeout_ms < 0
 * waits without a limit. */
int tl__hp_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms);
void tl__hp_wake(uint32_t *word, int count);

/* A wait on several words at once (Linux futex_waitv, 5.16 and later),
 * for at most `timeout_ms` (< 0: no limit): it returns when one of them is
 * woken or does not hold its expected value, when the time is up, or for
 * a signal or a fault (an unmapped word); the caller re-reads its words
 * every time. `shared` words are keyed across
 * processes like tl__hp_wait's; the others are process-local and woken
 * by tl__hp_wake_local. At most TL_HP_WAITV_MAX words. */
#define TL_HP_WAITV_MAX 128
typedef struct {
  uint32_t *word;
  uint32_t expected;
  int shared;
} tl_hp_waitv_t;
int tl__hp_waitv_supported(void);
void tl__hp_waitv(const tl_hp_waitv_t *set, unsigned n, int64_t timeout_ms);
void tl__hp_wake_local(uint32_t *word);

/* Identity of this process, written into its slot for query(). */
uint32_t tl__hp_pid(void);
uint64_t tl__hp_start_time(void);
uint64_t tl__hp_realtime_us(void);
uint64_t tl__hp_monotonic_ms(void);
/* CLOCK_MONOTONIC in µs: one clock for the processes of a host (of one
 * time namespace; a process in another sees another, see lists.c). */
uint64_t tl__hp_monotonic_us(void);

/* A test hook: a pause of the milliseconds the environment variable
 * `name` gives (none when unset or not positive), read once into `*cache`
 * (-1 before), so that a hot path pays one atomic load. */
void tl__hp_test_pause(const char *name, _Atomic int *cache);

/* A joinable thread with a small stack and a name (seen in
 * /proc/self/task/<tid>/comm, at most 15 bytes), and its cancellation
 * (the watcher threads block in tl__hp_lock_wait, which is a cancellation
 * point; everything else they do runs with cancellation disabled). Every
 * thread started is joined by its owner before the owner goes away. */
typedef struct tl_hp_thread_s tl_hp_thread_t;
tl_hp_thread_t *tl__hp_thread_start(void *(*fn)(void *), void *arg,
                                    const char *name);
void tl__hp_thread_cancel(tl_hp_thread_t *t);
void tl__hp_thread_join(tl_hp_thread_t *t);
void tl__hp_cancel_point(int enabled);
/* tl__hp_lock_wait as the one cancellation point of a watcher thread:
 * cancellation is enabled only while it waits, and a cancelled wait sets
 * `*ended` to 1 as its thread ends (so that its owner knows it may join
 * it without waiting). Returns as tl__hp_lock_wait. */
int tl__hp_lock_wait_cancellable(int fd, uint64_t byte, int exclusive,
                                 _Atomic int *ended);

/* A process-local mutex, for the attachment's own bookkeeping. */
typedef struct tl_hp_mutex_s tl_hp_mutex_t;
tl_hp_mutex_t *tl__hp_mutex_new(void);
void tl__hp_mutex_free(tl_hp_mutex_t *m);
void tl__hp_mutex_lock(tl_hp_mutex_t *m);
void tl__hp_mutex_unlock(tl_hp_mutex_t *m);
/* 0 when taken; -1 when another thread holds it (trylock), or still held
 * after `timeout_ms`. */
int tl__hp_mutex_trylock(tl_hp_mutex_t *m);
int tl__hp_mutex_timedlock(tl_hp_mutex_t *m, int64_t timeout_ms);

/* The one process-wide mutex of the glue's process helper (statically
 * initialised, never freed), and a function run by exit(). */
void tl__hp_process_lock(void);
void tl__hp_process_unlock(void);
int tl__hp_at_exit(void (*fn)(void));

#endif
