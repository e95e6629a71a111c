'use strict'

// A thread's side of a word: what every object of this thread on one word
// shares (its queue of promise requests, which hold it has), found by the
// word's address (native.wordKey: the same for every buffer object and
// typed array on that memory) under a name of its kind. A side lives as
// long as an object on the word does: the objects hold it, the map only a
// weak reference, swept once it is gone. The objects' typed arrays keep
// the buffer, so the address is not reused meanwhile.

const native = require('./native')

const sides = new Map()
const sweep = new FinalizationRegistry((key) => {
  const ref = sides.get(key)
  if (ref !== undefined && ref.deref() === undefined) sides.delete(key)
})

/**
 * This thread's side of the word of `i32` (its first element) for `kind`
 * (one per kind of object and request), made by `make()` the first time.
 */
function sideOf (i32, kind, make) {
  const key = `${kind} ${native.wordKey(i32, 0)}`
  const ref = sides.get(key)
  let side = ref === undefined ? undefined : ref.deref()
  if (side === undefined) {
    side = make()
    sides.set(key, new WeakRef(side))
    sweep.register(side, key)
  }
  return side
}

module.exports = { sideOf }
