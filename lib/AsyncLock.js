'use strict'

// AsyncLock: an owner-aware lock in one Int32 of a SharedArrayBuffer.
//
// The word and its fast paths are lib/LockWord.js. An uncontended acquire
// and release are one compare-exchange each, here in JavaScript.
//
// The default policy is eventual fairness. A running thread may take a free
// lock even while others sleep, and the release that frees it wakes the
// oldest waiter to compete, unless one is already on its way, in which case
// the release is a compare-exchange too. Every thread that holds the lock
// while others wait counts its slice (SLICE_GRANTS grants or SLICE_MS,
// whichever ends first), and the release that ends the slice hands the lock
// straight to the oldest waiter. The core also hands it over to a waiter
// that has waited longer than a millisecond. So a hot loop runs at
// uncontended speed for a slice, and the threads take turns.
//
// A thread's own promise requests stay in order: only the oldest goes to the
// core, the others wait in this object's ThreadQueue, and a release passes
// the lock to the thread's next request directly while its slice lasts.
//
// A release through the promise API may keep the word for a few
// microtasks while others wait: see the reservation in lib/LockWord.js.
//
// { fifo: true } opens the lock in strict FIFO hand-off instead: every
// release with waiters hands the lock to the oldest, so nobody ever barges,
// at the cost of one wake-up per grant.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readFlag, readSyncOptions, readAsyncOptions } = require('./validate')
const { deadlockError, timeoutError } = require('./errors')
const { ThreadQueue, Request } = require('./ThreadQueue')
const { LockWord, HANDOFF } = require('./LockWord')

const { GATE_LOCK, LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT, LOCK_PASSING: PASSING } = native.constants

const NO_OPTIONS = Object.freeze({ blocking: true, timeout: Infinity, signal: undefined, ref: true })

class AsyncLock extends SharedSlot {
  #i32
  #word
  #queue = new ThreadQueue()
  // A request waiting in this thread's queue ended by its timer or signal.
  #drop = (req, err) => { if (this.#queue.remove(req)) req.reject(err) }
  // A release through the promise API (see LockWord.leave).
  #leave = () => { if (this.#queue.size !== 0 || !this.#word.leave()) this.unlock() }
  // The promise form's requests, for the acquire skeleton (lib/gate.js).
  #gate = {
    take: () => this.#queue.size === 0 && this.#word.fast() ? this.ownerDied : undefined,
    attempt: () => this.tryLock() ? this.ownerDied : undefined,
    queue: (flags, o, where, release) => this.#word.fifo
      ? gate.gateAsync(this.#i32, 0, GATE_LOCK, flags, o, where)
        .then((ownerDied) => gate.makeRelease(release, ownerDied))
      : new Promise((resolve, reject) => this.#enqueue(new Request(o, where, resolve, reject)))
  }

  /**
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset, fifo } in place of all three
   * @param {number} [byteOffset=0] a multiple of 4
   * @param {{ fifo?: boolean }} [options] every user of one lock word must
   *   open it with the same `fifo`; `handle` carries it
   */
  constructor (buffer = undefined, byteOffset = undefined, options = undefined) {
    let fifo
    super({ type: 'AsyncLock', words: 1, keys: ['fifo'] }, [buffer, byteOffset, options], (i32, handle, o) => {
      // from() reads the mode from the handle as from options.
      const where = handle === undefined ? 'AsyncLock' : 'AsyncLock.from'
      fifo = readFlag((handle === undefined ? o : handle).fifo, false, where, 'fifo')
    })
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#word = new LockWord(this.#i32, fifo, () => this.unlock())
  }

  /** A structured-clonable description of the lock, with its mode. */
  get handle () {
    return { ...super.handle, fifo: this.#word.fifo }
  }

  /** true for strict FIFO hand-off. */
  get fifo () { return this.#word.fifo }

  /** Whether some thread holds the lock. */
  get locked () { return (this.#word.value & ID_MASK) !== 0 }

  /** The threadId of the holder, or null. */
  get owner () {
    const id = this.#word.value & ID_MASK
    return id === 0 || id === PASSING ? null : id - 1
  }

  /** How many requests (sync or async, all threads) wait for the lock. */
  get waiting () {
    const first = this.#queue.first
    const local = first !== null && first.native ? this.#queue.size - 1 : this.#queue.size
    return native.waiterCount(this.#i32, 0) + local
  }

  /**
   * True while the lock is held by a thread that took it over from one that
   * died holding it: the data it protects may be half updated. Cleared by
   * the next release.
   */
  get ownerDied () { return (this.#word.value & OWNER_DIED_BIT) !== 0 }

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && this.#queue.size === 0 && this.#word.fast()) return
    const timeout = readSyncOptions(options, 'AsyncLock.lock')
    if (this.#queue.size === 0 && this.#word.fast()) return
    if (this.#word.mine || this.#queue.size !== 0) {
      throw deadlockError('AsyncLock.lock', 'this thread holds the lock or has requests queued for it, so a blocking lock() would never return')
    }
    gate.gateSync(this.#i32, 0, GATE_LOCK, this.#word.flags, timeout, 'AsyncLock.lock')
    this.#word.restart()
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    if (this.#queue.size !== 0) return false // this thread's older requests come first
    if (this.#word.fast()) return true
    if (this.#word.mine) return false
    return gate.gateTry(this.#i32, 0, GATE_LOCK, this.#word.flags) !== undefined
  }

  /**
   * Releases the lock held by this thread. While its slice lasts, the
   * thread's next queued request gets the lock directly.
   */
  unlock () {
    const queue = this.#queue
    if (queue.size === 0 || queue.first.native) {
      this.#word.unlock()
      return
    }
    const v = this.#word.value
    this.#word.checkOwner(v)
    const next = queue.first
    queue.remove(next)
    if (this.#word.keep(v)) {
      this.#grant(next, false) // this thread keeps the lock
      return
    }
    this.#word.release(v, HANDOFF)
    this.#send(next)
  }

  // Resolves `req`, whose thread now holds the lock.
  #grant (req, ownerDied) {
    req.resolve(gate.makeRelease(this.#leave, ownerDied))
  }

  // Queues a promise request of this thread. While this thread holds the
  // lock or has older requests, it waits here for the release that passes
  // the lock on; otherwise it goes to the core at once.
  #enqueue (req) {
    if (this.#queue.size === 0 && !this.#word.mine) {
      this.#queue.push(req, undefined)
      this.#send(req)
    } else {
      this.#queue.push(req, this.#drop)
    }
  }

  // Sends `req`, first in this thread's queue, to the core.
  #send (req) {
    req.native = true
    this.#queue.unwatch(req)
    const o = req.options
    const timeout = gate.remaining(req.deadline)
    const p = timeout === 0 && o.timeout !== 0
      ? Promise.reject(timeoutError(o.timeout, req.where))
      : gate.gateAsync(this.#i32, 0, GATE_LOCK, this.#word.flags,
        timeout === o.timeout ? o : { ...o, timeout }, req.where)
    p.then((ownerDied) => {
      this.#queue.remove(req)
      this.#word.restart()
      this.#grant(req, ownerDied)
    }, (err) => {
      this.#queue.remove(req)
      req.reject(err)
      // The next request of this thread competes now, unless this thread
      // holds the lock, whose release passes it on.
      const next = this.#queue.first
      if (next !== null && !this.#word.mine) this.#send(next)
    })
  }

  /**
   * Resolves with a release function once this thread holds the lock.
   * A thread's requests are granted in the order it made them.
   */
  acquire (options) {
    try {
      return this.#acquire(options, 'AsyncLock.acquire')
    } catch (err) {
      // Bad options, a throwing option getter or a wrong receiver: a
      // promise-returning method reports every failure through its promise.
      return Promise.reject(err)
    }
  }

  // The promise API's common path; `where` names the public method in
  // error messages. May throw synchronously on bad options.
  #acquire (options, where) {
    if (options === undefined && this.#queue.size === 0 && this.#word.fast()) {
      return Promise.resolve(gate.makeRelease(this.#leave, this.ownerDied))
    }
    const o = options === undefined ? NO_OPTIONS : readAsyncOptions(options, where, true)
    return gate.acquire(this.#gate, this.#word.flags, o, where, this.#leave)
  }

  // Runs `callback` holding the lock that this thread took uncontended:
  // no release function and no promise of acquire() in between.
  async #runHeld (callback) {
    try {
      const result = callback()
      return result !== null && typeof result === 'object' && typeof result.then === 'function'
        ? await result
        : result
    } finally {
      this.#leave()
    }
  }

  /**
   * Runs `callback` while holding the lock and resolves with its result;
   * the lock is released however the callback ends.
   */
  runExclusive (callback, options) {
    try {
      if (options === undefined && typeof callback === 'function' &&
        this.#queue.size === 0 && this.#word.fast()) return this.#runHeld(callback)
      return gate.runHolding(callback, 'AsyncLock.runExclusive',
        () => this.#acquire(options, 'AsyncLock.runExclusive'))
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
  }

  /** The V8 blog's name for runExclusive without options. */
  executeLocked (f) {
    try {
      if (typeof f === 'function' && this.#queue.size === 0 && this.#word.fast()) return this.#runHeld(f)
      return gate.runHolding(f, 'AsyncLock.executeLocked',
        () => this.#acquire(undefined, 'AsyncLock.executeLocked'))
    } catch (err) {
      return Promise.reject(err)
    }
  }
}

module.exports = { AsyncLock }
