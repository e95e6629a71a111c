/* The errors of threadlock/host's core and platform layer: a code and,
 * where an operating-system call failed, its errno, with a message for
 * the user. The glue turns `code` (and `sys`) into HostError.code, never
 * the message, which may contain a path and any word. Includes nothing of
 * the rest of src/host/, so that every layer can use it. */
#ifndef TL_HOST_ERROR_H_
#define TL_HOST_ERROR_H_

#include <stddef.h>

/* Errors (negative returns of the core, and `code` of tl_host_error_t). */
enum {
  TL_HOST_ECORRUPT = -1,  /* an index or header read from the file is bad */
  TL_HOST_ENAMES = -2,    /* no free name entry */
  TL_HOST_ENODES = -3,    /* no free request node */
  TL_HOST_ETIMEDOUT = -4, /* requestSync's timeout ran out */
  TL_HOST_ENOTMINE = -5,  /* a node that this attachment does not own */
  TL_HOST_ECLOSED = -6,
  TL_HOST_EINTR = -7,     /* the waiting thread is being terminated */
  TL_HOST_ESYS = -8,      /* an OS call failed: its errno is in `sys` */
  TL_HOST_EFSTYPE = -9,   /* a network or virtual file system */
  TL_HOST_EUNSAFE = -10,  /* another user could write, replace or link it */
  TL_HOST_EVERSION = -11, /* a table of another layout version in use */
  TL_HOST_EATTACH = -12,  /* anything else that prevents attaching */
  /* The critical section is held by another process (or another thread
   * of this attachment), and the caller asked not to wait for it. */
  TL_HOST_EAGAIN = -13,
  /* A thread the request needs (a watcher) could not start. */
  TL_HOST_ETHREAD = -14
};

#define TL_HOST_ERROR_MAX 600

typedef struct {
  int code;                        /* one of the codes above */
  int sys;                         /* errno for TL_HOST_ESYS, else 0 */
  char message[TL_HOST_ERROR_MAX]; /* for the user; may name a path */
} tl_host_error_t;

/* Sets `e` (code, errno, printf-style message) and returns -1. */
int tl__host_fail(tl_host_error_t *e, int code, int sys, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
