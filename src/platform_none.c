/* macOS and every system other than Linux and Windows: the one-copy check
 * of singleton.c is not done here (platform_os.h). Each copy of the addon
 * finds no other copy and serves its own callers, so two installed copies in
 * one process would keep separate waiter tables without an error; the
 * README says so. A macOS version would walk the images of dyld
 * (_dyld_image_count, _dyld_get_image_header) and look the marker up in each
 * file's symbol table; it is not written because nothing here could run it.
 */
#include "platform_os.h"

void
tl_os_pin(const void *addr)
{
  (void)addr;
}

void *
tl_os_first_export(const char *name, size_t size,
                   int (*accept)(const void *sym))
{
  (void)name;
  (void)size;
  (void)accept;
  return NULL;
}

char *
tl_os_path_of(const void *addr)
{
  (void)addr;
  return NULL;
}
