/* Linux implementation of the file half of src/host/platform.h: the
 * resolution of a directory, the trust checks of every directory on the
 * way and of the file in it, and the file's opening. Reusable by anything
 * that shares a file of one user between processes (the table of
 * threadlock/host; shared memory later).
 *
 * The trust boundary is the user: a file that another user could write,
 * replace, rename or link (its owner, its mode, a symbolic link on the
 * way, a directory on the way that another user can write, a hard link)
 * is refused, because that user could then change the locks of this one.
 * The walk opens one component at a time with O_NOFOLLOW relative to the
 * directory before it, and checks what it opened with fstat, so that the
 * object checked is the object used, whatever is renamed meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "platform.h"

/* Directories are opened O_PATH: checked with fstat before anything in
 * them is opened, even when this user cannot read them. */
#define TL_DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int
tl__host_fail(tl_host_error_t *e, int code, int sys, const char *fmt, ...)
{
  va_list ap;

  e->code = code;
  e->sys = sys;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, ap);
  va_end(ap);
  return -1;
}

/* Magic numbers of statfs(2) f_type for file systems whose byte locks or
 * shared mappings are not coherent across the processes of one host, or
 * not local at all. FUSE covers virtiofs and sshfs. */
static const struct {
  unsigned long magic;
  const char *name;
} tl__refused[] = {
  { 0x6969, "NFS" },        { 0x517B, "SMB" },
  { 0xFE534D42, "SMB2" },   { 0xFF534D42, "CIFS" },
  { 0x01021997, "9p" },     { 0x65735546, "FUSE (or virtiofs)" },
  { 0x00C36400, "Ceph" },   { 0x5346414F, "AFS" },
  { 0x6B414653, "AFS" },    { 0x47504653, "GPFS" },
  { 0x0BD00BD0, "Lustre" },
};

/* Refuses a directory on a file system named above. */
static int
tl__check_fs(int dirfd, const char *path, tl_host_error_t *e)
{
  struct statfs sf;

  if (fstatfs(dirfd, &sf) != 0)
    return tl__host_fail(e, TL_HOST_ESYS, errno,
                         "cannot use directory '%s': %s", path,
                         strerror(errno));
  unsigned long type = (unsigned long)(unsigned int)sf.f_type;
  /* The tests stand in another file system's type (they cannot mount one
   * everywhere): THREADLOCK_HOST_TEST_FSTYPE=0x6969 is NFS. */
  const char *fake = getenv("THREADLOCK_HOST_TEST_FSTYPE");
  if (fake != NULL)
    type = strtoul(fake, NULL, 0);
  for (size_t i = 0; i < sizeof(tl__refused) / sizeof(tl__refused[0]); i++) {
    if (type == tl__refused[i].magic)
      return tl__host_fail(
          e, TL_HOST_EFSTYPE, 0,
          "'%s' is on a %s file system, whose locks and shared memory are "
          "not reliable across processes; put the directory on a local disk "
          "or tmpfs, or use threadlock/postgres to lock across machines",
          path, tl__refused[i].name);
  }
  return 0;
}

/* Checks a directory opened on the way to (or at, `last`) the directory
 * of a shared file. Every directory on the way must belong to this user or
 * to root (another owner could rename what is in it); one that others may
 * write must be sticky (as /tmp is: nobody else can then rename or remove
 * this user's entries). The last one must be this user's own, and
 * writable by nobody else. */
static int
tl__check_dir(int fd, const char *path, int last, tl_host_error_t *e)
{
  struct stat st;
  uid_t me = geteuid();

  if (fstat(fd, &st) != 0)
    return tl__host_fail(e, TL_HOST_ESYS, errno, "cannot check '%s': %s", path,
                         strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return tl__host_fail(e, TL_HOST_ESYS, ENOTDIR, "'%s' is not a directory",
                         path);
  if (last && st.st_uid != me)
    return tl__host_fail(
        e, TL_HOST_EUNSAFE, 0,
        "'%s' belongs to user %u, not to this user (%u): its owner could "
        "change the locks; use a directory of this user",
        path, (unsigned)st.st_uid, (unsigned)me);
  if (!last && st.st_uid != me && st.st_uid != 0)
    return tl__host_fail(
        e, TL_HOST_EUNSAFE, 0,
        "'%s' (on the way) belongs to user %u, who could replace what is in "
        "it; use a directory whose every parent belongs to this user or root",
        path, (unsigned)st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
      (last || !(st.st_mode & S_ISVTX)))
    return tl__host_fail(
        e, TL_HOST_EUNSAFE, 0,
        "'%s' is writable by other users (mode %04o)%s; use a directory only "
        "this user can write (mode 0700)",
        path, (unsigned)(st.st_mode & 07777),
        last ? "" : " and not sticky, so they could replace what is in it");
  return 0;
}

/* Why opening component `name` in `dirfd` with O_NOFOLLOW failed. */
static int
tl__open_failed(int dirfd, const char *name, const char *path, int err,
                tl_host_error_t *e)
{
  struct stat st;

  if ((err == ELOOP || err == ENOTDIR) &&
      fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode))
    return tl__host_fail(
        e, TL_HOST_EUNSAFE, 0,
        "'%s' is a symbolic link, which is not followed (whoever can change "
        "it could point this process at another table); give the path it "
        "resolves to",
        path);
  return tl__host_fail(e, TL_HOST_ESYS, err, "cannot open '%s': %s", path,
                       strerror(err));
}

int
tl__hp_open_dir(const char *path, int create, tl_host_error_t *e)
{
  char done[PATH_MAX];
  size_t len = strlen(path), at = 1, dlen = 1;
  int fd;

  if (len == 0 || path[0] != '/' || len >= sizeof(done))
    return tl__host_fail(e, TL_HOST_ESYS, ENAMETOOLONG,
                         "the path '%s' is not absolute or too long", path);
  fd = open("/", TL_DIR_FLAGS);
  if (fd < 0)
    return tl__host_fail(e, TL_HOST_ESYS, errno, "cannot open '/': %s",
                         strerror(errno));
  done[0] = '/';
  done[1] = '\0';
  for (;;) {
    while (at < len && path[at] == '/')
      at++;
    size_t end = at;
    while (end < len && path[end] != '/')
      end++;
    size_t rest = end;
    while (rest < len && path[rest] == '/')
      rest++;
    int last = rest >= len;
    char name[NAME_MAX + 1];
    if (end == at) { /* the path is "/" */
      if (tl__check_dir(fd, done, 1, e) != 0)
        goto fail;
      break;
    }
    if (end - at > NAME_MAX) {
      tl__host_fail(e, TL_HOST_ESYS, ENAMETOOLONG, "a name in '%s' is too long",
                    path);
      goto fail;
    }
    memcpy(name, path + at, end - at);
    name[end - at] = '\0';
    /* The directory holding `name` is checked before `name` is used. */
    if (tl__check_dir(fd, done, 0, e) != 0)
      goto fail;
    if (dlen > 1)
      done[dlen++] = '/';
    memcpy(done + dlen, name, end - at);
    dlen += end - at;
    done[dlen] = '\0';
    int next = openat(fd, name, TL_DIR_FLAGS);
    if (next < 0 && errno == ENOENT && create) {
      if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST) {
        tl__host_fail(e, TL_HOST_ESYS, errno,
                      "cannot create directory '%s': %s", done,
                      strerror(errno));
        goto fail;
      }
      next = openat(fd, name, TL_DIR_FLAGS);
    }
    if (next < 0) {
      tl__open_failed(fd, name, done, errno, e);
      goto fail;
    }
    close(fd);
    fd = next;
    at = rest;
    if (last) {
      if (tl__check_dir(fd, done, 1, e) != 0)
        goto fail;
      break;
    }
  }
  if (tl__check_fs(fd, path, e) != 0)
    goto fail;
  return fd;

fail:
  close(fd);
  return -1;
}

int
tl__hp_open_file(int dirfd, const char *dir, const char *name,
                 tl_host_error_t *e)
{
  char path[PATH_MAX + NAME_MAX + 2];
  struct stat st;
  int fd;

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  /* O_NONBLOCK: a FIFO or a device planted at the name must not block
   * the open; the checks below refuse it. */
  fd = openat(dirfd, name,
              O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0)
    return tl__open_failed(dirfd, name, path, errno, e);
  if (fstat(fd, &st) != 0) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "cannot check '%s': %s", path,
                  strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    const char *what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                           ? "a device"
                           : "not a file";
    tl__host_fail(e, TL_HOST_EUNSAFE, 0,
                  "'%s' is %s, not a regular file; remove it (the table is "
                  "made again)",
                  path, what);
    goto fail;
  }
  if (st.st_uid != geteuid()) {
    tl__host_fail(e, TL_HOST_EUNSAFE, 0,
                  "'%s' belongs to user %u, not to this user (%u); remove it "
                  "(the table is made again)",
                  path, (unsigned)st.st_uid, (unsigned)geteuid());
    goto fail;
  }
  if ((st.st_mode & 077) != 0) {
    tl__host_fail(e, TL_HOST_EUNSAFE, 0,
                  "'%s' can be opened by other users (mode %04o); only this "
                  "user may (chmod 600 it)",
                  path, (unsigned)(st.st_mode & 07777));
    goto fail;
  }
  if (st.st_nlink != 1) {
    tl__host_fail(e, TL_HOST_EUNSAFE, 0,
                  "'%s' has %lu links; a hard link elsewhere would let whoever "
                  "owns that directory reach the table: remove the other "
                  "links",
                  path, (unsigned long)st.st_nlink);
    goto fail;
  }
  /* Back to blocking mode, although a regular file ignores it. */
  fcntl(fd, F_SETFL, O_RDWR);
  return fd;

fail:
  close(fd);
  return -1;
}

int
tl__hp_identity(int fd, uint64_t *dev, uint64_t *ino, uint64_t *size)
{
  struct stat st;

  if (fstat(fd, &st) != 0)
    return -1;
  *dev = (uint64_t)st.st_dev;
  *ino = (uint64_t)st.st_ino;
  *size = (uint64_t)st.st_size;
  return 0;
}

void
tl__hp_boot_id(uint8_t out[16])
{
  char buf[64];
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
  unsigned k = 0;

  memset(out, 0, 16);
  if (fd >= 0)
    close(fd);
  /* "xxxxxxxx-xxxx-...": 32 hex digits, into 16 bytes. */
  for (ssize_t i = 0; i < n && k < 32; i++) {
    int c = buf[i], v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      continue;
    out[k / 2] = (uint8_t)(out[k / 2] | (k % 2 ? v : v << 4));
    k++;
  }
}
