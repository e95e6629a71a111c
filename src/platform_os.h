/* What the operating system's loader can tell about the files loaded into
 * this process, for the one-copy check of singleton.c.
 *
 * One implementation per operating system, chosen by binding.gyp:
 * platform_linux.c (the dynamic loader's list, dl_iterate_phdr),
 * platform_win.c (the process's module list) and platform_none.c (macOS and
 * every other system: no check, every copy loads). Only these functions
 * differ between systems; the decision itself lives in singleton.c.
 */
#ifndef TL_PLATFORM_OS_H_
#define TL_PLATFORM_OS_H_

#include <stddef.h>

/* Marks a data symbol so that other copies of the addon can find it by name
 * in this file's table of exported symbols. */
#if defined(_WIN32)
#define TL_OS_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define TL_OS_EXPORT __attribute__((visibility("default"), used))
#else
#define TL_OS_EXPORT
#endif

/* Keeps the file that contains `addr` mapped until the process exits, so
 * that a marker another copy has read stays readable after Node would have
 * unloaded its file. On Linux the linker flag `-z nodelete` (binding.gyp)
 * already did this at load time. Runs on any thread. */
void tl_os_pin(const void *addr);

/* The exported data symbol `name` of the first loaded addon file (a file
 * whose name ends in .node), in the order the files were loaded, that is at
 * least `size` bytes large (where the system records sizes) and for which
 * `accept` returns nonzero; NULL when there is none or the system is not
 * covered. Runs on any thread, takes no lock of threadlock's. */
void *tl_os_first_export(const char *name, size_t size,
                         int (*accept)(const void *sym));

/* The file that maps `addr`, as a malloc'd UTF-8 string, or NULL when it is
 * not known (or memory ran out). */
char *tl_os_path_of(const void *addr);

#endif /* TL_PLATFORM_OS_H_ */
