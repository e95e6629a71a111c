'use strict'

// RWLock: many readers or one writer, in one Int32 of a SharedArrayBuffer.
// A waiting writer holds back readers that come after it, so a stream of
// readers cannot starve writers, and the readers queued before the next
// writer are let in together. Writers follow AsyncLock's default policy: a
// running writer may take a free word while others wait, a writer's release
// wakes the oldest waiting writer to compete (readers at the head are
// granted at once), and a writer's slice (lib/Slice.js) ends in a hand-off
// to the oldest waiter. A thread's own write requests stay in order: while
// one waits, its next ones do not barge.
//
// Word layout (src/waiters.h): with bit 29 set, the writer's thread id + 1
// in the low 29 bits; otherwise the number of readers there; bit 30 while
// requests are queued, bit 31 while a woken writer is on its way (see
// lib/LockWord.js). The writer is known, so a writer that dies holding
// the lock is recovered like an AsyncLock owner; readers are counted, not
// named, so a reader that dies holding a read lock leaves it held.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readSyncOptions, readAsyncOptions } = require('./validate')
const { LockWord } = require('./LockWord')

const { selfId } = native
const {
  GATE_READ, GATE_WRITE, RW_MASK: MASK, RW_WRITER: WRITER, GATE_WAITERS: WAITERS_BIT,
  LOCK_BARGE: BARGE
} = native.constants
const { compareExchange, load } = Atomics

class RWLock extends SharedSlot {
  #i32
  #read
  #write
  #releaseRead = () => this.releaseRead()
  #word // this thread's side of the word as a writer (lib/LockWord.js)
  #pendingWrites = 0 // this thread's write requests that have not settled
  #writeSettled = () => { this.#pendingWrites-- }
  // A writer's release through the promise API (see LockWord.leave).
  #leaveWrite = () => { if (!this.#word.leave()) this.releaseWrite() }

  /**
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (buffer = undefined, byteOffset = undefined, options = undefined) {
    super({ type: 'RWLock', words: 1 }, [buffer, byteOffset, options])
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#word = new LockWord(this.#i32, false, () => this.releaseWrite(), 'write')
    this.#read = new gate.Gate(this.#i32, GATE_READ, () => this.#fastRead() ? false : undefined)
    this.#write = new gate.Gate(this.#i32, GATE_WRITE, () => this.#fastWrite() ? false : undefined)
  }

  /** Readers holding the lock now. */
  get readers () {
    const v = this.#word.value
    return v & WRITER ? 0 : v & MASK
  }

  /** The threadId of the writer holding the lock, or null. */
  get writer () {
    const v = this.#word.value
    return v & WRITER ? (v & MASK) - 1 : null
  }

  /** Requests waiting, in all threads. */
  get waiting () { return native.waiterCount(this.#i32, 0) }

  #fastRead () {
    this.#word.settle() // a writer's reservation of this thread ends first
    let v = load(this.#i32, 0)
    while (!(v & (WAITERS_BIT | WRITER)) && (v & MASK) < MASK) {
      const seen = compareExchange(this.#i32, 0, v, v + 1)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  // A running writer takes a word without readers or writer even while
  // others wait, unless one of its own write requests waits.
  #fastWrite () {
    return this.#word.fast(this.#pendingWrites === 0)
  }

  // The `amount` of a native write request: barging unless this thread
  // has a write request waiting, which comes first.
  get #writeFlags () { return this.#pendingWrites === 0 ? BARGE : 0 }

  tryAcquireRead () {
    return gate.tryAcquire(this.#read, 0)
  }

  tryAcquireWrite () {
    // The writer itself would only be refused by the core.
    if (this.writer === selfId - 1) return false
    return gate.tryAcquire(this.#write, this.#writeFlags)
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
    const ownerDied = gate.acquireSync(this.#write, this.#writeFlags, timeout, 'RWLock.acquireWriteSync')
    this.#word.restart()
    return ownerDied
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
    this.#word.unlock()
  }

  /** Resolves with a release function once this thread holds a read lock. */
  acquireRead (options) {
    return gate.rejecting(() => gate.acquire(this.#read, 0,
      readAsyncOptions(options, 'RWLock.acquireRead', true), 'RWLock.acquireRead', this.#releaseRead))
  }

  /** Resolves with a release function once this thread holds the write lock. */
  acquireWrite (options) {
    return gate.rejecting(() => {
      const o = readAsyncOptions(options, 'RWLock.acquireWrite', true)
      const p = gate.acquire(this.#write, this.#writeFlags, o, 'RWLock.acquireWrite', this.#leaveWrite)
      this.#pendingWrites++
      p.then(this.#writeSettled, this.#writeSettled)
      return p
    })
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
