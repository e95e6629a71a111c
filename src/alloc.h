/* Every allocation of the core and the glue goes through these functions,
 * so that a build with TL_FAULT_INJECTION can make any chosen one fail and
 * count the blocks still live. Without the switch they are malloc, calloc,
 * realloc and free.
 */
#ifndef TL_ALLOC_H_
#define TL_ALLOC_H_

#include <stddef.h>
#include <stdint.h>

void *tl__malloc(size_t size);
void *tl__calloc(size_t count, size_t size);
void *tl__realloc(void *ptr, size_t size);
void tl__free(void *ptr);

#ifdef TL_FAULT_INJECTION
/* Makes the `n`th allocation from now fail (0: none). When it fails,
 * `on_fail(data)` runs first if given, at the failing call's place and under
 * whatever lock it holds; a test uses it to let another event happen at
 * exactly that moment. */
void tl_fault_arm(uint64_t n, void (*on_fail)(void *data), void *data);

/* Whether the armed failure happened; a run that allocated fewer than `n`
 * blocks leaves it unset, which ends a loop over n = 1, 2, 3... */
int tl_fault_fired(void);

/* Blocks allocated and not yet freed, process-wide. */
int64_t tl_alloc_live(void);
#endif

#endif /* TL_ALLOC_H_ */
