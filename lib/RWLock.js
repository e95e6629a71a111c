'use strict'

// RWLock: many readers or one writer, in one Int32 of a SharedArrayBuffer.
// A waiting writer holds back readers that come after it, so a stream of
// readers cannot starve writers, and the readers queued before the next
// writer are let in together. Writers follow the lock policy (src/lock.c,
// with their fast paths in lib/LockWord.js): a running writer may take a
// free word while others wait, a writer's release wakes the oldest waiting
// writer to compete or hands the lock over (readers at the head, a waiter
// that starves, the end of the writer's slice). A thread's own write
// requests stay in order: while one waits, its next ones do not barge.
//
// Readers are owners too: every read lock is taken and given back through
// the core, which counts them per thread (src/rwlock.c), so that a thread
// that dies holding read locks gives them back, and its next writer is told
// (ownerDied), as for a writer that dies holding the lock.
//
// Word layout (src/waiters.h): with bit 29 set, the writer's thread id + 1
// in the low 28 bits; otherwise the number of readers there; bit 28 when a
// holder died (cleared by the next writer's release), bit 30 while
// requests are queued, bit 31 while a woken writer is on its way.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readSyncOptions, readAsyncOptions } = require('./validate')
const { LockWord } = require('./LockWord')
const { ShmRWLock } = require('./ShmRWLock')
const sides = require('./sides')

const { selfId } = native
const { GATE_READ, GATE_WRITE, RW_MASK: MASK, RW_WRITER: WRITER, LOCK_BARGE: BARGE } = native.constants

// Numbers the write holds of this thread. Its side of each word (lib/sides.js,
// shared by all its RWLock objects on the word) keeps the write hold that a
// release function may still end (`hold`, 0: none): named when the release
// function is made, cleared when the write lock is released by any means. A
// spent release function releases its own hold or nothing (issue 24, 3.9).
let holds = 0

// The writers' gate: a write request granted after it waited in the core
// starts a new slice of its thread's side of the word (lib/LockWord.js), as
// acquireWriteSync() and AsyncLock's queued requests do; without it the
// slice of the thread's last run of grants went on counting, and a thread
// that waited was made to hand the lock on at its first release.
class WriteGate extends gate.Gate {
  #word
  constructor (i32, kind, take, word) {
    super(i32, kind, take)
    this.#word = word
  }

  queue (amount, o, where, release) {
    return super.queue(amount, o, where, release).then((r) => {
      this.#word.restart()
      return r
    })
  }
}

class RWLock extends SharedSlot {
  #i32
  #read
  #write
  #releaseRead = () => this.releaseRead()
  #side // this thread's side of the word as a writer: { hold }
  #releaseWrite = Object.assign((hold) => {
    if (this.#side.hold === hold) this.releaseWrite()
  }, {
    hold: () => {
      this.#side.hold = ++holds
      return holds
    }
  })
  #word // this thread's side of the word as a writer (lib/LockWord.js)
  #pendingWrites = 0 // this thread's write requests that have not settled
  #writeSettled = () => { this.#pendingWrites-- }

  /**
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (buffer = undefined, byteOffset = undefined, options = undefined) {
    let shared
    super({ type: 'RWLock', words: 1, shm: true }, [buffer, byteOffset, options], (i32, handle, o, inShm) => {
      shared = inShm
    })
    // Memory shared by processes: the cross-process RWLock
    // (lib/ShmRWLock.js), chosen once here.
    if (shared) return new ShmRWLock(this.buffer, this.byteOffset)
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#side = sides.sideOf(this.#i32, 'write', () => ({ hold: 0 }))
    this.#word = new LockWord(this.#i32, false, 'write')
    // Read locks have no fast path: the core counts them per thread.
    this.#read = new gate.Gate(this.#i32, GATE_READ, () => undefined)
    this.#write = new WriteGate(this.#i32, GATE_WRITE, () => this.#fastWrite() ? this.#word.ownerDied : undefined, this.#word)
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

  /**
   * True while the lock is held (by a writer or readers) and a holder died
   * since the last writer released it, or while the writer holding it is a
   * dead thread that nobody has taken it over from yet (the next request
   * does): the data it protects may be half updated. Every write-acquire
   * form is told through it, also tryAcquireWrite() and runWrite(), which
   * have no other channel; the release of the writer holding it clears it.
   */
  get ownerDied () {
    const v = this.#word.value
    if ((v & (WRITER | MASK)) === 0) return false
    return this.#word.ownerDied || ((v & WRITER) !== 0 && !native.threadAlive(v & MASK))
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
    if (options === undefined && this.#fastWrite()) return this.#word.ownerDied
    const timeout = readSyncOptions(options, 'RWLock.acquireWriteSync')
    if (this.#fastWrite()) return this.#word.ownerDied
    const ownerDied = gate.gateSync(this.#i32, 0, GATE_WRITE, this.#writeFlags, timeout, 'RWLock.acquireWriteSync')
    this.#word.restart() // it waited in the core: a new slice
    return ownerDied
  }

  releaseRead () {
    gate.gateRelease(this.#i32, 0, GATE_READ, 0, 'RWLock.releaseRead')
  }

  releaseWrite () {
    this.#word.unlock()
    this.#side.hold = 0
  }

  /** Resolves with a release function once this thread holds a read lock. */
  acquireRead (options) {
    return gate.rejecting(() => this.#acquireRead(options, 'RWLock.acquireRead'))
  }

  // The promise forms' common paths; `where` names the public method in
  // messages. They may throw on bad options.
  #acquireRead (options, where) {
    return gate.acquire(this.#read, 0, readAsyncOptions(options, where, true), where, this.#releaseRead)
  }

  #acquireWrite (options, where) {
    const o = readAsyncOptions(options, where, true)
    const p = gate.acquire(this.#write, this.#writeFlags, o, where, this.#releaseWrite)
    this.#pendingWrites++
    p.then(this.#writeSettled, this.#writeSettled)
    return p
  }

  /** Resolves with a release function once this thread holds the write lock. */
  acquireWrite (options) {
    return gate.rejecting(() => this.#acquireWrite(options, 'RWLock.acquireWrite'))
  }

  /** Runs `callback` holding a read lock. */
  runRead (callback, options) {
    return gate.runHolding(callback, 'RWLock.runRead', () => this.#acquireRead(options, 'RWLock.runRead'))
  }

  /** Runs `callback` holding the write lock. */
  runWrite (callback, options) {
    try {
      // A free word taken with one compare-exchange: no release function and
      // no promise of acquireWrite() in between, as AsyncLock.runExclusive.
      if (options === undefined && typeof callback === 'function' &&
        this.#pendingWrites === 0 && this.#fastWrite()) {
        return gate.runHeld(callback, this.#releaseWrite, this.#releaseWrite.hold())
      }
      return gate.runHolding(callback, 'RWLock.runWrite', () => this.#acquireWrite(options, 'RWLock.runWrite'))
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
  }

}

// An RWLock on memory shared by processes is an RWLock: same methods,
// instanceof, constructor.
Object.setPrototypeOf(ShmRWLock.prototype, RWLock.prototype)
Object.defineProperty(ShmRWLock.prototype, 'constructor', { value: RWLock, writable: true, configurable: true })

module.exports = { RWLock }
