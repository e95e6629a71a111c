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

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readSyncOptions, readAsyncOptions } = require('./validate')

const { selfId } = native
const { GATE_READ, GATE_WRITE, RW_MASK: MASK, RW_WRITER: WRITER, GATE_WAITERS: WAITERS_BIT } = native.constants
const { compareExchange, load } = Atomics

class RWLock extends SharedSlot {
  #i32
  #read
  #write
  #releaseRead = () => this.releaseRead()
  #releaseWrite = () => this.releaseWrite()

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0]
   */
  constructor (buffer = undefined, byteOffset = 0) {
    super(buffer, byteOffset, 1, 'RWLock')
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#read = new gate.Gate(this.#i32, GATE_READ, () => this.#fastRead() ? false : undefined)
    this.#write = new gate.Gate(this.#i32, GATE_WRITE, () => this.#fastWrite() ? false : undefined)
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
  get waiting () { return native.waiterCount(this.#i32, 0) }

  #fastRead () {
    let v = load(this.#i32, 0)
    while (!(v & (WAITERS_BIT | WRITER)) && (v & MASK) < MASK) {
      const seen = compareExchange(this.#i32, 0, v, v + 1)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  #fastWrite () {
    return compareExchange(this.#i32, 0, 0, WRITER | selfId) === 0
  }

  tryAcquireRead () {
    return gate.tryAcquire(this.#read, 0)
  }

  tryAcquireWrite () {
    // The writer itself would only be refused by the core.
    if (this.writer === selfId - 1) return false
    return gate.tryAcquire(this.#write, 0)
  }

  /**
   * Blocks until this thread holds a read lock. Returns true when it was
   * taken over from a writer that died holding the lock.
   */
  acquireReadSync (options) {
    const timeout = readSyncOptions(options, 'RWLock.acquireReadSync')
    return gate.acquireSync(this.#read, 0, timeout, 'RWLock.acquireReadSync')
  }

  /**
   * Blocks until this thread holds the write lock. Returns true when it was
   * taken over from a writer that died holding it.
   */
  acquireWriteSync (options) {
    const timeout = readSyncOptions(options, 'RWLock.acquireWriteSync')
    return gate.acquireSync(this.#write, 0, timeout, 'RWLock.acquireWriteSync')
  }

  releaseRead () {
    let v = load(this.#i32, 0)
    while (!(v & (WAITERS_BIT | WRITER)) && (v & MASK) > 0) {
      const seen = compareExchange(this.#i32, 0, v, v - 1)
      if (seen === v) return
      v = seen
    }
    gate.gateRelease(this.#i32, 0, GATE_READ, 0, 'RWLock.releaseRead')
  }

  releaseWrite () {
    if (compareExchange(this.#i32, 0, WRITER | selfId, 0) === (WRITER | selfId)) return
    gate.gateRelease(this.#i32, 0, GATE_WRITE, 0, 'RWLock.releaseWrite')
  }

  /** Resolves with a release function once this thread holds a read lock. */
  acquireRead (options) {
    return gate.rejecting(() => gate.acquire(this.#read, 0,
      readAsyncOptions(options, 'RWLock.acquireRead', true), 'RWLock.acquireRead', this.#releaseRead))
  }

  /** Resolves with a release function once this thread holds the write lock. */
  acquireWrite (options) {
    return gate.rejecting(() => gate.acquire(this.#write, 0,
      readAsyncOptions(options, 'RWLock.acquireWrite', true), 'RWLock.acquireWrite', this.#releaseWrite))
  }

  /** Runs `callback` holding a read lock. */
  runRead (callback, options) {
    return gate.runHolding(callback, 'RWLock.runRead', () => this.acquireRead(options))
  }

  /** Runs `callback` holding the write lock. */
  runWrite (callback, options) {
    return gate.runHolding(callback, 'RWLock.runWrite', () => this.acquireWrite(options))
  }
}

module.exports = { RWLock }
