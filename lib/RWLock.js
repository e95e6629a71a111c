'use strict'

// RWLock: many readers or one writer, in one Int32 of a SharedArrayBuffer.
// Requests are granted in FIFO order: a waiting writer holds back readers
// that come after it, so a stream of readers cannot starve writers, and the
// readers queued before the next writer are let in together.
//
// Word layout (src/waiters.h): with bit 29 set, the writer's thread id + 1
// in the low 29 bits; otherwise the number of readers there; bit 30 while
// requests are queued. The writer is known, so a writer that dies holding
// the lock is recovered like an AsyncLock owner; readers are counted, not
// named, so a reader that dies holding a read lock leaves it held.

const g = require('./gate')
const { SharedSlot } = require('./SharedSlot')

const { RW_MASK: MASK, RW_WRITER: WRITER } = require('./native').binding.constants
const { compareExchange, load } = Atomics

class RWLock extends SharedSlot {
  #i32

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0]
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    super(buffer, byteOffset, 1, 'RWLock')
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
  }

  static from (handle) {
    const { buffer, byteOffset } = SharedSlot.open(handle, 1, 'RWLock.from')
    return new RWLock(buffer, byteOffset)
  }

  /** Readers holding the lock now. */
  get readers () {
    const v = load(this.#i32, 0)
    return v & WRITER ? 0 : v & MASK
  }

  /** The threadId of the writer holding the lock, or null. */
  get writer () {
    const v = load(this.#i32, 0)
    return v & WRITER ? (v & MASK) - 1 : null
  }

  /** Requests waiting, in all threads. */
  get waiting () { return g.binding.waiterCount(this.#i32, 0) }

  #fastRead () {
    let v = load(this.#i32, 0)
    while (!(v & (g.WAITERS_BIT | WRITER)) && (v & MASK) < MASK) {
      const seen = compareExchange(this.#i32, 0, v, v + 1)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  #fastWrite () {
    return compareExchange(this.#i32, 0, 0, WRITER | g.selfId) === 0
  }

  // Takes the lock without waiting through the core, which also recovers
  // it from a dead writer: undefined if that is not possible now, otherwise
  // whether the previous writer died holding it.
  #try (gate) {
    return g.gateTry(this.#i32, 0, gate, 0)
  }

  tryReadLock () {
    return this.#fastRead() || this.#try(g.GATE_READ) !== undefined
  }

  tryWriteLock () {
    if (this.#fastWrite()) return true
    if (this.writer === g.selfId - 1) return false
    return this.#try(g.GATE_WRITE) !== undefined
  }

  /**
   * Blocks until this thread holds a read lock. Returns true when it was
   * taken over from a writer that died holding the lock.
   */
  readLock (options) {
    const timeout = g.readSyncOptions(options, 'readLock')
    if (this.#fastRead()) return false
    return g.gateSync(this.#i32, 0, g.GATE_READ, 0, timeout, 'RWLock.readLock')
  }

  /**
   * Blocks until this thread holds the write lock. Returns true when it was
   * taken over from a writer that died holding it.
   */
  writeLock (options) {
    const timeout = g.readSyncOptions(options, 'writeLock')
    if (this.#fastWrite()) return false
    return g.gateSync(this.#i32, 0, g.GATE_WRITE, 0, timeout, 'RWLock.writeLock')
  }

  readUnlock () {
    let v = load(this.#i32, 0)
    while (!(v & (g.WAITERS_BIT | WRITER)) && (v & MASK) > 0) {
      const seen = compareExchange(this.#i32, 0, v, v - 1)
      if (seen === v) return
      v = seen
    }
    g.gateRelease(this.#i32, 0, g.GATE_READ, 0, 'RWLock.readUnlock')
  }

  writeUnlock () {
    if (compareExchange(this.#i32, 0, WRITER | g.selfId, 0) === (WRITER | g.selfId)) return
    g.gateRelease(this.#i32, 0, g.GATE_WRITE, 0, 'RWLock.writeUnlock')
  }

  #acquire (gate, fast, unlock, options, where) {
    let o
    try {
      o = g.readAsyncOptions(options, where, true)
    } catch (err) {
      return Promise.reject(err)
    }
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(g.abortError(o.signal))
    if (fast()) return Promise.resolve(g.makeRelease(unlock, false))
    if (!o.blocking || o.timeout === 0) {
      const ownerDied = this.#try(gate)
      if (ownerDied !== undefined) return Promise.resolve(g.makeRelease(unlock, ownerDied))
      return Promise.reject(o.blocking ? g.timeoutError(0, where) : g.busyError(where))
    }
    return g.gateAsync(this.#i32, 0, gate, 0, o, where)
      .then((ownerDied) => g.makeRelease(unlock, ownerDied))
  }

  /** Resolves with a release function once this thread holds a read lock. */
  acquireRead (options) {
    return this.#acquire(g.GATE_READ, () => this.#fastRead(), () => this.readUnlock(), options, 'RWLock.acquireRead')
  }

  /** Resolves with a release function once this thread holds the write lock. */
  acquireWrite (options) {
    return this.#acquire(g.GATE_WRITE, () => this.#fastWrite(), () => this.writeUnlock(), options, 'RWLock.acquireWrite')
  }

  async runRead (callback, options) {
    g.readCallback(callback, 'runRead')
    const release = await this.acquireRead(options)
    try {
      return await callback()
    } finally {
      release()
    }
  }

  async runWrite (callback, options) {
    g.readCallback(callback, 'runWrite')
    const release = await this.acquireWrite(options)
    try {
      return await callback()
    } finally {
      release()
    }
  }
}

module.exports = { RWLock }
