/* Linux: the loaded files of the process come from the dynamic loader's own
 * list (dl_iterate_phdr), and an exported symbol is looked up in a file's
 * dynamic symbol table through its hash table, the way the loader does it
 * (platform_os.h).
 *
 * dlopen/dlsym/dladdr would be shorter, but they tie the binary to glibc
 * 2.34 or later (where they moved into libc), which the prebuilt binary must
 * not need. Keeping the file mapped is the linker's job here: the addon is
 * linked with `-z nodelete` (binding.gyp), so tl_os_pin has nothing left to
 * do. Other ELF systems would work the same way but are not tested, so they
 * build platform_none.c.
 */
#include "platform_os.h"

#include <link.h>
#include <stdint.h>
#include <string.h>

void
tl_os_pin(const void *addr)
{
  (void)addr;
}

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

typedef struct {
  const char *name;
  size_t size;
  int (*accept)(const void *sym);
  void *found;
} tl_export_query_t;

/* dl_iterate_phdr callback: stops at the first addon file whose export
 * q->name is a defined data object of at least q->size bytes that q->accept
 * takes. Only the files Node loads as addons are looked at. */
static int
tl__export_cb(struct dl_phdr_info *info, size_t size, void *data)
{
  tl_export_query_t *q = data;
  const char *name = info->dlpi_name;
  size_t len = name != NULL ? strlen(name) : 0;
  const ElfW(Sym) * sym;
  void *addr;

  (void)size;
  if (len < 5 || strcmp(name + len - 5, ".node") != 0)
    return 0;
  /* ELF64_ST_TYPE reads the type in either ELF class. */
  sym = tl__lookup(info, q->name);
  if (sym == NULL || sym->st_shndx == SHN_UNDEF ||
      ELF64_ST_TYPE(sym->st_info) != STT_OBJECT || sym->st_size < q->size)
    return 0;
  addr = (void *)(info->dlpi_addr + sym->st_value);
  if (!q->accept(addr))
    return 0;
  q->found = addr;
  return 1;
}

void *
tl_os_first_export(const char *name, size_t size,
                   int (*accept)(const void *sym))
{
  tl_export_query_t q = { name, size, accept, NULL };

  /* The loader appends objects to its list in load order. */
  dl_iterate_phdr(tl__export_cb, &q);
  return q.found;
}

typedef struct {
  uintptr_t addr;
  char *path; /* malloc'd copy of the object's name, or NULL */
} tl_path_query_t;

/* dl_iterate_phdr callback: the name of the object that maps q->addr. */
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

char *
tl_os_path_of(const void *addr)
{
  tl_path_query_t q = { (uintptr_t)addr, NULL };

  dl_iterate_phdr(tl__path_cb, &q);
  return q.path;
}
