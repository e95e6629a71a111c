/* One copy of threadlock per process: the first copy to load claims the
 * process, and any other copy refuses to load (singleton.h).
 *
 * How the copies find each other. Each copy exports a marker (a plain data
 * symbol, tl_threadlock_singleton_v1). A copy looks for the markers in the
 * dynamic loader's own list of loaded objects (dl_iterate_phdr), reading the
 * dynamic symbol table of every loaded `*.node` file. Nothing else is
 * process-wide and visible to every copy in the same way: an environment
 * variable is inherited by child processes and can be changed by anyone,
 * and dlopen/dlsym/dladdr would tie the binary to glibc 2.34 or later
 * (where they moved into libc), which the prebuilt binary must not need.
 *
 * How they agree. The marker of the first copy in the loader's list (objects
 * are appended in load order, so this is the copy mapped first) holds the
 * decision: the first call in every copy compare-exchanges its `core` from 0
 * to that copy's own marker. Exactly one copy wins, also when two copies load
 * at the same moment in two threads.
 *
 * Why the decision cannot be lost. The addon is linked with `-z nodelete`
 * (binding.gyp): Node unloads an addon when the last thread that loaded it
 * exits, and without the flag the first copy's marker, and with it the
 * decision, could vanish while the winning copy is still in use, after which
 * a third copy would win again. Kept mapped, every marker stays readable and
 * the first copy serves the process for the rest of its life.
 *
 * Only Linux is covered (other ELF systems would work the same way but are
 * not tested); elsewhere every copy loads, as before.
 */
#include "singleton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The marker of this copy. Exported, so that the other copies find it in
 * this file's dynamic symbol table; `used`, because this file only takes its
 * address. */
#if defined(__GNUC__)
__attribute__((visibility("default"), used))
#endif
tl_singleton_t tl_threadlock_singleton_v1 = { TL_SINGLETON_MAGIC,
                                              TL_SINGLETON_LAYOUT, 0 };

/* The marker of the copy that serves the process, as this copy learnt it on
 * its first call; 0 before. Written once per copy (racing first calls of one
 * copy store the same value). */
static _Atomic uintptr_t tl__core;

#if defined(__linux__)

#include <link.h>

#define TL_MARKER_NAME "tl_threadlock_singleton_v1"

/* Addresses in a loaded object's dynamic section: glibc has already added
 * the load address, musl leaves them relative to it. A relative address is
 * smaller than the object, an absolute one at least its load address, and no
 * object is loaded at an address lower than its own size, so the two cannot
 * be confused. */
static uintptr_t
tl__dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) ptr)
{
  return ptr < info->dlpi_addr ? info->dlpi_addr + ptr : ptr;
}

static uint32_t
tl__gnu_hash(const char *s)
{
  uint32_t h = 5381;

  for (; *s != '\0'; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

static uint32_t
tl__sysv_hash(const char *s)
{
  uint32_t h = 0, g;

  for (; *s != '\0'; s++) {
    h = (h << 4) + (unsigned char)*s;
    g = h & 0xf0000000u;
    if (g != 0)
      h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

/* Looks `name` up in the dynamic symbol table of a loaded object through its
 * GNU or System V hash table, the way the dynamic loader itself does. */
static const ElfW(Sym) *
    tl__lookup(const struct dl_phdr_info *info, const char *name)
{
  const ElfW(Dyn) *dyn = NULL;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gnu = NULL, *sysv = NULL;

  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == NULL)
    return NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    uintptr_t p = tl__dyn_addr(info, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_SYMTAB)
      symtab = (const ElfW(Sym) *)p;
    else if (dyn->d_tag == DT_STRTAB)
      strtab = (const char *)p;
    else if (dyn->d_tag == DT_GNU_HASH)
      gnu = (const uint32_t *)p;
    else if (dyn->d_tag == DT_HASH)
      sysv = (const uint32_t *)p;
  }
  if (symtab == NULL || strtab == NULL)
    return NULL;

  if (gnu != NULL) {
    /* Header: buckets, first hashed symbol, bloom words, bloom shift; then
     * the bloom filter (skipped: it only answers "no" faster), the buckets
     * and one chain word per hashed symbol, whose low bit ends a chain. */
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], h = tl__gnu_hash(name);
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gnu + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + gnu[2]);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t i;

    if (nbuckets == 0)
      return NULL;
    i = buckets[h % nbuckets];
    if (i < symoffset)
      return NULL;
    for (;; i++) {
      uint32_t ch = chain[i - symoffset];
      if ((ch | 1) == (h | 1) && strcmp(name, strtab + symtab[i].st_name) == 0)
        return &symtab[i];
      if (ch & 1)
        return NULL;
    }
  }
  if (sysv != NULL) {
    /* Header: buckets, chain length; then the buckets and the chain. */
    uint32_t nbuckets = sysv[0];
    const uint32_t *buckets = sysv + 2, *chain = buckets + nbuckets;

    if (nbuckets == 0)
      return NULL;
    for (uint32_t i = buckets[tl__sysv_hash(name) % nbuckets]; i != STN_UNDEF;
         i = chain[i])
      if (strcmp(name, strtab + symtab[i].st_name) == 0)
        return &symtab[i];
  }
  return NULL;
}

/* The marker of a loaded object, if it is a copy of threadlock. Only the
 * files Node loads as addons are looked at. */
static tl_singleton_t *
tl__marker_of(const struct dl_phdr_info *info)
{
  const char *name = info->dlpi_name;
  size_t len = name != NULL ? strlen(name) : 0;
  const ElfW(Sym) * sym;
  tl_singleton_t *m;

  if (len < 5 || strcmp(name + len - 5, ".node") != 0)
    return NULL;
  /* A defined data object at least as large as the marker; ELF64_ST_TYPE
   * reads the type in either ELF class. */
  sym = tl__lookup(info, TL_MARKER_NAME);
  if (sym == NULL || sym->st_shndx == SHN_UNDEF ||
      ELF64_ST_TYPE(sym->st_info) != STT_OBJECT ||
      sym->st_size < sizeof(tl_singleton_t))
    return NULL;
  m = (tl_singleton_t *)(info->dlpi_addr + sym->st_value);
  if (m->magic != TL_SINGLETON_MAGIC || m->layout != TL_SINGLETON_LAYOUT)
    return NULL;
  return m;
}

/* dl_iterate_phdr callback: stops at the first copy of threadlock. */
static int
tl__first_copy_cb(struct dl_phdr_info *info, size_t size, void *data)
{
  tl_singleton_t *m;

  (void)size;
  m = tl__marker_of(info);
  if (m == NULL)
    return 0;
  *(tl_singleton_t **)data = m;
  return 1;
}

typedef struct {
  uintptr_t addr;
  char *path; /* malloc'd copy of the object's name, or NULL */
} tl_path_query_t;

/* dl_iterate_phdr callback: the name of the object that maps query->addr. */
static int
tl__path_cb(struct dl_phdr_info *info, size_t size, void *data)
{
  tl_path_query_t *q = data;

  (void)size;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && q->addr >= start &&
        q->addr < start + ph->p_memsz) {
      q->path = strdup(info->dlpi_name != NULL ? info->dlpi_name : "");
      return 1;
    }
  }
  return 0;
}

static tl_singleton_t *
tl__arbiter(void)
{
  tl_singleton_t *first = NULL;

  dl_iterate_phdr(tl__first_copy_cb, &first);
  /* This copy is itself in the list unless it was loaded under a name that
   * does not end in .node; then it decides for itself alone. */
  return first != NULL ? first : &tl_threadlock_singleton_v1;
}

static char *
tl__path_of(const void *addr)
{
  tl_path_query_t q = { (uintptr_t)addr, NULL };

  dl_iterate_phdr(tl__path_cb, &q);
  return q.path;
}

#else /* !__linux__ */

static tl_singleton_t *
tl__arbiter(void)
{
  return &tl_threadlock_singleton_v1;
}

static char *
tl__path_of(const void *addr)
{
  (void)addr;
  return NULL;
}

#endif

/* Why a second copy refuses to load; the first %s is the file of the copy
 * that serves the process, the second this copy's file. */
#define TL_REFUSAL                                                             \
  "threadlock: another copy of threadlock is already loaded in this "          \
  "process, from %s. This copy, %s, refuses to load: two copies keep "         \
  "separate tables of waiters, so a wait or a lock request made through one "  \
  "would never be woken through the other. Make every dependency use one "     \
  "copy: `npm ls threadlock` lists them; `npm dedupe`, or one version pinned " \
  "with \"overrides\" in package.json, leaves one."

int
tl_singleton_claim(char **message)
{
  uintptr_t self = (uintptr_t)&tl_threadlock_singleton_v1;
  uintptr_t core = atomic_load(&tl__core);
  char *core_path, *self_path;
  int len;

  if (core == 0) {
    uintptr_t expected = 0;
    tl_singleton_t *arbiter = tl__arbiter();
    core = atomic_compare_exchange_strong(&arbiter->core, &expected, self)
               ? self
               : expected;
    atomic_store(&tl__core, core);
  }
  if (core == self)
    return 0;

  core_path = tl__path_of((const void *)core);
  self_path = tl__path_of((const void *)self);
  len = snprintf(NULL, 0, TL_REFUSAL, core_path ? core_path : "(unknown)",
                 self_path ? self_path : "(unknown)");
  *message = len < 0 ? NULL : malloc((size_t)len + 1);
  if (*message != NULL)
    snprintf(*message, (size_t)len + 1, TL_REFUSAL,
             core_path ? core_path : "(unknown)",
             self_path ? self_path : "(unknown)");
  free(core_path);
  free(self_path);
  return -1;
}
