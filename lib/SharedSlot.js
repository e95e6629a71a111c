'use strict'

// What every shared primitive has in common: a slot of Int32 words in a
// SharedArrayBuffer, validated once, and the handle that lets another thread
// reopen it with the primitive's static from().

const g = require('./gate')

class SharedSlot {
  #buffer
  #byteOffset

  /**
   * @param {SharedArrayBuffer} buffer
   * @param {number} byteOffset a multiple of 4
   * @param {number} words how many Int32s the primitive uses
   * @param {string} where the caller's name, for error messages
   */
  constructor (buffer, byteOffset, words, where) {
    g.validateSlot(buffer, byteOffset, 4 * words, where)
    this.#buffer = buffer
    this.#byteOffset = byteOffset
  }

  /** Reads and validates a handle given to a static from(). */
  static open (handle, words, where) {
    const { buffer, byteOffset } = g.readHandle(handle, where)
    g.validateSlot(buffer, byteOffset, 4 * words, where)
    return { buffer, byteOffset }
  }

  /** A structured-clonable description of the primitive. */
  get handle () { return { buffer: this.#buffer, byteOffset: this.#byteOffset } }
}

module.exports = { SharedSlot }
