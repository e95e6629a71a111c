/* Windows: the loaded files of the process come from its module list
 * (EnumProcessModules, which walks the loader's list in load order), an
 * exported symbol is found with GetProcAddress, and a module is kept loaded
 * with GET_MODULE_HANDLE_EX_FLAG_PIN (platform_os.h).
 *
 * PSAPI_VERSION 2 makes EnumProcessModules the K32 entry point of
 * kernel32.dll, so that the addon needs no psapi.dll.
 */
#define PSAPI_VERSION 2
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <psapi.h>

#include "platform_os.h"

#include <stdint.h>
#include <stdlib.h>
#include <wchar.h>

void
tl_os_pin(const void *addr)
{
  HMODULE module;

  /* A module that cannot be pinned stays loaded as long as Node keeps it,
   * which is the life of the process for an addon that loaded. */
  (void)GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                               GET_MODULE_HANDLE_EX_FLAG_PIN,
                           (LPCWSTR)addr, &module);
}

/* The full path of a module as a malloc'd wide string, or NULL. */
static wchar_t *
tl__module_wpath(HMODULE module)
{
  DWORD cap = MAX_PATH;

  for (;;) {
    wchar_t *path = malloc(cap * sizeof(wchar_t));
    DWORD len;

    if (path == NULL)
      return NULL;
    len = GetModuleFileNameW(module, path, cap);
    if (len == 0) {
      free(path);
      return NULL;
    }
    /* A path that fills the buffer may have been cut short. */
    if (len < cap)
      return path;
    free(path);
    if (cap >= 32768)
      return NULL;
    cap *= 2;
  }
}

static int
tl__is_addon(HMODULE module)
{
  wchar_t *path = tl__module_wpath(module);
  size_t len = path != NULL ? wcslen(path) : 0;
  int addon = len >= 5 && _wcsicmp(path + len - 5, L".node") == 0;

  free(path);
  return addon;
}

void *
tl_os_first_export(const char *name, size_t size,
                   int (*accept)(const void *sym))
{
  HANDLE process = GetCurrentProcess();
  HMODULE *modules = NULL;
  DWORD count = 256, needed = 0;
  void *found = NULL;

  /* PE exports carry no size; `accept` checks the marker's own fields. */
  (void)size;
  /* The list may grow between two calls: ask again until it fits. */
  for (;;) {
    HMODULE *grown = realloc(modules, count * sizeof(HMODULE));

    if (grown == NULL)
      goto done;
    modules = grown;
    if (!EnumProcessModules(process, modules, count * sizeof(HMODULE), &needed))
      goto done;
    if (needed <= count * sizeof(HMODULE))
      break;
    count = needed / sizeof(HMODULE) + 16;
  }
  for (DWORD i = 0; i < needed / sizeof(HMODULE); i++) {
    void *sym;

    if (!tl__is_addon(modules[i]))
      continue;
    sym = (void *)(uintptr_t)GetProcAddress(modules[i], name);
    if (sym != NULL && accept(sym)) {
      found = sym;
      break;
    }
  }
done:
  free(modules);
  return found;
}

char *
tl_os_path_of(const void *addr)
{
  HMODULE module;
  wchar_t *wpath;
  char *path = NULL;
  int len;

  if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                              GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          (LPCWSTR)addr, &module))
    return NULL;
  wpath = tl__module_wpath(module);
  if (wpath == NULL)
    return NULL;
  len = WideCharToMultiByte(CP_UTF8, 0, wpath, -1, NULL, 0, NULL, NULL);
  if (len > 0)
    path = malloc((size_t)len);
  if (path != NULL &&
      WideCharToMultiByte(CP_UTF8, 0, wpath, -1, path, len, NULL, NULL) == 0) {
    free(path);
    path = NULL;
  }
  free(wpath);
  return path;
}
