/* One copy of threadlock per process: the first copy to load claims the
 * process, and any other copy refuses to load (singleton.h).
 *
 * How the copies find each other. Each copy exports a marker (a plain data
 * symbol, tl_threadlock_singleton_v1). A copy looks for the markers among
 * the exported symbols of every loaded `*.node` file, in the list the
 * system's loader keeps of them (platform_os.h: dl_iterate_phdr on Linux,
 * the module list on Windows). Nothing else is process-wide and visible to
 * every copy in the same way: an environment variable is inherited by child
 * processes and can be changed by anyone.
 *
 * How they agree. The marker of the first copy in the loader's list (files
 * are appended in load order, so this is the copy mapped first) holds the
 * decision: the first call in every copy compare-exchanges its `core` from 0
 * to that copy's own marker. Exactly one copy wins, also when two copies load
 * at the same moment in two threads.
 *
 * Why the decision cannot be lost. Node unloads an addon when the last
 * thread that loaded it exits; the first copy's marker, and with it the
 * decision, could then vanish while the winning copy is still in use, after
 * which a third copy would win again. So every copy stays mapped until the
 * process exits: on Linux through the linker flag `-z nodelete`
 * (binding.gyp), on Windows by pinning its module (tl_os_pin). Kept mapped,
 * every marker stays readable and the first copy serves the process for the
 * rest of its life.
 *
 * Linux and Windows are covered. On macOS and other systems
 * (platform_none.c) the copies are not checked: every copy loads.
 */
#include "singleton.h"

#include "platform_os.h"

#include <stdio.h>
#include <stdlib.h>

/* The marker of this copy. Exported, so that the other copies find it in
 * this file's table of exported symbols (TL_OS_EXPORT also marks it `used`
 * where that matters, because this file only takes its address). */
TL_OS_EXPORT tl_singleton_t tl_threadlock_singleton_v1 = { TL_SINGLETON_MAGIC,
                                                           TL_SINGLETON_LAYOUT,
                                                           0 };

/* The marker of the copy that serves the process, as this copy learnt it on
 * its first call; 0 before. Written once per copy (racing first calls of one
 * copy store the same value). */
static _Atomic uintptr_t tl__core;

#define TL_MARKER_NAME "tl_threadlock_singleton_v1"

/* Whether a loaded file's export is a marker of this scheme: other files
 * could export a symbol of the same name. */
static int
tl__is_marker(const void *sym)
{
  const tl_singleton_t *m = sym;

  return m->magic == TL_SINGLETON_MAGIC && m->layout == TL_SINGLETON_LAYOUT;
}

/* The marker that holds the decision: the first copy's. This copy is itself
 * among the loaded addons unless it was loaded under a name that does not
 * end in .node, or the system is not covered (platform_none.c); then it
 * decides for itself alone. */
static tl_singleton_t *
tl__arbiter(void)
{
  tl_singleton_t *first =
      tl_os_first_export(TL_MARKER_NAME, sizeof(tl_singleton_t), tl__is_marker);

  return first != NULL ? first : &tl_threadlock_singleton_v1;
}

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
    tl_singleton_t *arbiter;

    /* Pinned before the first look at the list: from now on another copy
     * may hold this copy's marker as its arbiter. */
    tl_os_pin(&tl_threadlock_singleton_v1);
    arbiter = tl__arbiter();
    core = atomic_compare_exchange_strong(&arbiter->core, &expected, self)
               ? self
               : expected;
    atomic_store(&tl__core, core);
  }
  if (core == self)
    return 0;

  core_path = tl_os_path_of((const void *)core);
  self_path = tl_os_path_of((const void *)self);
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
