'use strict'

// What every shared primitive has in common: a slot of Int32 words in a
// SharedArrayBuffer, validated once, the handle that describes it, and the
// static from() that opens it again in another thread.
//
// A primitive's constructor creates: it may allocate the buffer and write
// the initial state (a semaphore's permits). from() opens memory that
// another thread set up and must write nothing. It does so by calling the
// primitive's own constructor with no arguments while `opening` holds the
// handle; the slot then comes from the handle, and `setup` learns that it
// opens rather than creates. No public parameter carries that difference.

const { validateSlot, readHandle } = require('./validate')

// { handle, buffer, byteOffset } of the handle that from() is opening, for
// the one constructor call it makes.
let opening = null

class SharedSlot {
  #buffer
  #byteOffset

  /**
   * @param {SharedArrayBuffer} [buffer] a new zeroed one of `words` Int32s
   *   when undefined
   * @param {number} byteOffset a multiple of 4
   * @param {number} words how many Int32s the primitive uses
   * @param {string} where the primitive's name, for error messages
   * @param {(i32: Int32Array, handle: object | undefined) => void} [setup]
   *   runs once the slot is valid, with the handle when from() opens it
   *   (write nothing then) and undefined when the constructor creates it
   */
  constructor (buffer, byteOffset, words, where, setup) {
    const open = opening
    opening = null
    if (open !== null) {
      ({ buffer, byteOffset } = open)
      validateSlot(buffer, byteOffset, 4 * words, `${where}.from`)
    } else if (buffer === undefined) {
      buffer = new SharedArrayBuffer(4 * words)
    } else {
      validateSlot(buffer, byteOffset, 4 * words, where)
    }
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    if (setup !== undefined) {
      setup(new Int32Array(buffer, byteOffset, words), open === null ? undefined : open.handle)
    }
  }

  /** Opens the primitive that `handle` describes, e.g. one posted to a worker. */
  static from (handle) {
    const { buffer, byteOffset } = readHandle(handle, `${this.name}.from`)
    opening = { handle, buffer, byteOffset }
    try {
      return new this()
    } finally {
      opening = null
    }
  }

  /** A structured-clonable description of the primitive. */
  get handle () { return { buffer: this.#buffer, byteOffset: this.#byteOffset } }
  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }
}

module.exports = { SharedSlot }
