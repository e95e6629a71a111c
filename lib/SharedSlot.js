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
//
// Where the slot is may be given in two ways, read by readSlotArgs
// (lib/validate.js): positionally, `(buffer, byteOffset, options)`, or as
// one options object `{ buffer, byteOffset, ...own options }`, which is
// what users of other lock libraries write first (`new AsyncLock({ fifo:
// true })`).
//
// A handle names the primitive it describes (`type`), and from() refuses a
// handle of another kind: a semaphore's word opened as a lock would corrupt
// both. The type lives only in the handle, not in the shared memory, so
// zeroed memory stays a free lock of whatever kind opens it.

const { readSlotArgs, readHandle, validateSlot, aName } = require('./validate')
const native = require('./native')

// A slot in memory that other processes share (threadlock/host's
// openSharedMemory) is refused by the primitives that do not work across
// processes there yet: their owner ids (threadId + 1) are equal in every
// process and their waiter list is this process's, so they would exclude
// nothing. AsyncLock, Semaphore and RWLock accept it (`slot.shm`) and
// become a lib/ShmLock.js, a lib/ShmSemaphore.js and a lib/ShmRWLock.js;
// ConditionVariable, Barrier and CountDownLatch accept it as they are
// (plain waits, which cross processes there). No primitive refuses it
// today; the refusal stays for the next one.
// The memory is recognised by its address (a process-wide registry of the
// mappings), which a SharedArrayBuffer posted to a worker keeps. Asked
// once per construction, only where such memory can exist (Node.js 22 and
// later).
function inSharedMemory (buffer, byteOffset, words) {
  return native.shmSupported && native.shmContains(new Int32Array(buffer, byteOffset, words))
}

function refuseSharedMemory (where) {
  const err = new TypeError(`${where}: this primitive does not work across processes on memory from openSharedMemory (threadlock/host) yet; every other primitive, wait, notify, waitAsync and Atomics loads, stores and read-modify-write operations work on such a buffer today`)
  err.code = 'ENOTSUP'
  throw err
}

// { handle, buffer, byteOffset } of the handle that from() is opening, for
// the one constructor call it makes.
let opening = null

class SharedSlot {
  #type
  #buffer
  #byteOffset

  /**
   * @param {{ type: string, words: number, keys?: string[], shm?: boolean }} slot the
   *   primitive's name (for its handles and error messages), how many
   *   Int32s it uses, the names of its own options, and whether it
   *   accepts memory shared by processes
   * @param {Array} args the constructor's `[buffer, byteOffset, options]`
   *   as given (the first may be the options object)
   * @param {(i32: Int32Array, handle: object | undefined, options: object, shared: boolean) => void} [setup]
   *   runs once the slot is valid, with the handle when from() opens it
   *   (write nothing then) and undefined when the constructor creates it;
   *   `options` holds the own options given to the constructor ({} when
   *   opening); `shared`: the slot is in memory shared by processes (only
   *   for a primitive whose `slot.shm` accepts it)
   */
  constructor (slot, args, setup) {
    const { type, words } = slot
    const open = opening
    opening = null
    let buffer, byteOffset, options, shared
    if (open !== null) {
      ({ buffer, byteOffset } = open)
      const where = `${type}.from`
      if (open.type !== undefined && open.type !== type) {
        throw new TypeError(`${where}: the handle describes ${aName(open.type)}, not ${aName(type)}`)
      }
      validateSlot(buffer, byteOffset, 4 * words, where)
      shared = inSharedMemory(buffer, byteOffset, words)
      if (shared && slot.shm !== true) refuseSharedMemory(where)
      options = {}
    } else {
      ({ buffer, byteOffset, options } = readSlotArgs(args, words, slot.keys || [], type))
      shared = inSharedMemory(buffer, byteOffset, words)
      if (shared && slot.shm !== true) refuseSharedMemory(type)
    }
    this.#type = type
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    if (setup !== undefined) {
      setup(new Int32Array(buffer, byteOffset, words), open === null ? undefined : open.handle, options, shared)
    }
  }

  /** Opens the primitive that `handle` describes, e.g. one posted to a worker. */
  static from (handle) {
    const { type, buffer, byteOffset } = readHandle(handle, `${this.name}.from`)
    opening = { handle, type, buffer, byteOffset }
    try {
      return new this()
    } finally {
      opening = null
    }
  }

  /** A structured-clonable description of the primitive. */
  get handle () { return { type: this.#type, buffer: this.#buffer, byteOffset: this.#byteOffset } }
  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }
}

module.exports = { SharedSlot }
