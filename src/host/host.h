/* threadlock/host: named locks shared by the processes of one host through
 * a table file in a directory. This is the core's interface; it includes
 * no Node-API header (binding_host.c is the glue).
 *
 * One attachment (tl_host_t) is one participant: a LockManager. It owns a
 * process slot of the table, whose liveness is an OFD byte lock, and any
 * number of request nodes. Attachments of one process are as separate as
 * attachments of two processes.
 */
#ifndef TL_HOST_H_
#define TL_HOST_H_

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The bounds of the table, fixed by its layout version. */
#define TL_HOST_SLOTS 128
#define TL_HOST_NAMES 1024
#define TL_HOST_NODES 4096
/* Names are stored as UTF-16 code units (JavaScript's strings); lib/host/
 * bounds them at 255 bytes of UTF-8, which is at most 255 units. */
#define TL_HOST_NAME_MAX 255 /* UTF-16 code units */

/* Request flags. */
enum {
  TL_HOST_EXCLUSIVE = 1,
  TL_HOST_SYNC = 2, /* a blocking waiter: woken on its node, not the doorbell */
  TL_HOST_IF_AVAILABLE = 4,
  TL_HOST_STEAL = 8,
  /* The manager has an earlier request of this name waiting (or on its
   * way): this one must not barge ahead of it (one manager's requests
   * keep their order). */
  TL_HOST_NO_BARGE = 16
};

/* Node states in the table; also the results of requests and polls. */
enum {
  TL_HOST_FREE = 0,
  TL_HOST_WAITING = 1,
  TL_HOST_HELD = 2,
  TL_HOST_STOLEN = 3,
  TL_HOST_UNAVAILABLE = 4, /* ifAvailable, not grantable now (no node) */
  /* A poll's report only, never a node's state: a waiting request that a
   * release rang to take its name, left free (tl_host_claim). */
  TL_HOST_OFFERED = 5,
  /* A poll's report only: another process got ahead of this attachment's
   * waiting requests (a steal); the event loop calls tl_host_rewatch. */
  TL_HOST_REWATCH = 6
};

typedef struct tl_host_s tl_host_t;

/* Attaches to the table in the absolute directory `dir`, creating the
 * directory if missing, after the trust checks of tl__hp_open_dir and
 * tl__hp_open_file. Returns NULL with `e` set. */
tl_host_t *tl_host_attach(const char *dir, tl_host_error_t *e);

/* Releases and withdraws everything the attachment has, stops its threads
 * and frees it. Must not run concurrently with any other call on it. */
void tl_host_detach(tl_host_t *h);

/* `crit_ms` of the calls below: how long the call may wait for the
 * table's critical section while another process (or another thread of
 * this attachment) holds it: < 0 without a limit, 0 not at all (the call
 * then returns TL_HOST_EAGAIN and changes nothing: an event loop hands it
 * to a thread that may wait), > 0 that many milliseconds (then
 * TL_HOST_ETIMEDOUT). A process stopped inside the section delays every
 * call that waits for it. */

/* Requests `name`. Returns the node's state (HELD, WAITING) or
 * UNAVAILABLE, or a negative error; `*node` names the request. */
int tl_host_request(tl_host_t *h, const uint16_t *name, size_t len, int flags,
                    int64_t crit_ms, uint32_t *node, uint64_t *token,
                    int *owner_died);

/* Asked between slices of `slice_ms` of a blocking wait: nonzero when the
 * waiting thread must stop (its worker is being terminated). */
typedef struct {
  int (*fn)(void *data);
  void *data;
  int64_t slice_ms;
} tl_host_stop_t;

/* Blocks the calling thread until a SYNC node is no longer waiting, or
 * `timeout_ms` (< 0: none) ran out (TL_HOST_ETIMEDOUT), or `stop` (NULL:
 * never) said so (TL_HOST_EINTR); in both cases the request is withdrawn,
 * unless another process holds the critical section: then it returns
 * TL_HOST_EAGAIN, and the caller must release the node (it may have been
 * granted meanwhile) from a thread that may wait. Returns HELD or STOLEN. */
int tl_host_wait(tl_host_t *h, uint32_t node, int64_t timeout_ms,
                 const tl_host_stop_t *stop, uint64_t *token, int *owner_died);

/* Releases a held lock, or withdraws a waiting request. Returns the state
 * the node had: HELD, WAITING or STOLEN. */
int tl_host_release(tl_host_t *h, uint32_t node, int64_t crit_ms);

/* Reports the nodes of the attachment whose state changed since the last
 * poll (grants and steals). `visit` runs with the table locked: it must
 * only copy. */
typedef void (*tl_host_poll_cb)(void *data, uint32_t node, int state,
                                uint64_t token, int owner_died);
int tl_host_poll(tl_host_t *h, tl_host_poll_cb visit, void *data,
                 int64_t crit_ms);

/* The event loop's visit to its waiting requests (barging: a release may
 * leave a name free for a request that comes first, and its first waiter
 * must then take it itself): each waiting async request of the
 * attachment that a poll reported OFFERED, or all of them with `age`
 * (they have waited TL_BARGE_MS: from now on nobody barges ahead of
 * them), takes its name if it is free, granting it in order. Reports
 * what changed as tl_host_poll does. */
int tl_host_claim(tl_host_t *h, int age, tl_host_poll_cb visit, void *data,
                  int64_t crit_ms);

/* Lists every request of every attachment. */
typedef void (*tl_host_query_cb)(void *data, const uint16_t *name, size_t len,
                                 int exclusive, int held, uint64_t client,
                                 uint32_t pid);
int tl_host_query(tl_host_t *h, tl_host_query_cb visit, void *data,
                  int64_t crit_ms);

/* After a steal put another process ahead of this attachment's waiting
 * requests (the slot's `rewatch` word moved): starts the watchers of the
 * processes now ahead. The event loop calls it when a poll reported
 * TL_HOST_REWATCH. */
int tl_host_rewatch(tl_host_t *h, int64_t crit_ms);

/* The doorbell: a word of the attachment's slot, bumped and woken for
 * every grant or steal that concerns one of its async requests. The glue's
 * helper thread sleeps on it (with the doorbells of the process's other
 * attachments, through futex_waitv) and asks tl_host_doorbell_check after
 * every wake: 1 when the word moved past `*seen` (then updated), 0 when
 * not, -1 when the table can no longer be read (the file shrank or was
 * rebuilt: the attachment must leave the helper's set, whose futex wait
 * on it would fail at once). It never takes the critical section. Only one
 * thread at a time may check an attachment, and never after tl_host_detach.
 *
 * The fallback without futex_waitv, one helper thread per attachment:
 * tl_host_doorbell_wait sleeps on this one word until it rang (returns 0),
 * tl_host_doorbell_stop was called (returns -1) or the table can no longer
 * be read (returns -2).
 *
 * Every call that touches the table checks first that the file still has
 * its size and is the table joined: otherwise it returns TL_HOST_ECORRUPT
 * (a shrunk file is never touched, so it never raises SIGBUS). */
uint32_t *tl_host_doorbell(tl_host_t *h);
int tl_host_doorbell_check(tl_host_t *h, uint32_t *seen);
int tl_host_doorbell_wait(tl_host_t *h, uint32_t *seen);
void tl_host_doorbell_stop(tl_host_t *h);

/* Ends the watcher threads of an attachment that has waited for nothing
 * for 100 ms (they are kept that long, so that a lock taken in a loop
 * does not start threads on every turn). Returns 1 when watchers remain
 * (ask again later), 0 when none does. Never waits for another process:
 * the event loop calls it from a timer. */
int tl_host_prune(tl_host_t *h);

/* Cancels and joins the attachment's watcher threads and starts no more,
 * without detaching: for the exit path, where the kernel drops the
 * process's byte locks and survivors recover its slot. tl_host_detach
 * calls it too. */
void tl_host_stop_watchers(tl_host_t *h);

/* Diagnostics for the tests: the slot, nodes in use, attached slots,
 * names in use, and the requests this attachment's list walks visited. */
int tl_host_stats(tl_host_t *h, uint32_t *slot, uint32_t *nodes,
                  uint32_t *slots, uint32_t *names, uint64_t *walked);

#endif
