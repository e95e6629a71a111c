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
// An event-loop thread leaves a gap of a few hundred nanoseconds between
// two grants (the promise jobs of `await lock.executeLocked(f)` in a loop),
// and a thread in a tight blocking loop would take the lock in every such
// gap. So once that happened in its slice, while others wait, a release
// through the promise API (the release function, runExclusive,
// executeLocked) keeps the word for RESERVE_HOPS microtasks: a request the
// thread makes meanwhile takes it back without an atomic operation, and
// otherwise the release happens before the thread's microtasks run out, so
// a reservation never outlives them.
//
// { fifo: true } opens the lock in strict FIFO hand-off instead: every
// release with waiters hands the lock to the oldest, so nobody ever barges,
// at the cost of one wake-up per grant.

const g = require('./gate')
const { describe } = require('./atomics')
const { binding, selfId } = require('./native')
const { LockError, codes } = require('./errors')
const { ThreadQueue, Request } = require('./ThreadQueue')
const { LockWord, HANDOFF } = require('./LockWord')

const {
  LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT, LOCK_PASSING: PASSING,
  RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED
} = binding.constants

const NO_OPTIONS = Object.freeze({ blocking: true, timeout: Infinity, signal: undefined, ref: true })

function readMode (options, where) {
  if (options === undefined) return false
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  const { fifo = false } = options
  if (typeof fifo !== 'boolean') {
    throw new TypeError(`${where}: options.fifo must be a boolean, received ${describe(fifo)}`)
  }
  return fifo
}

class AsyncLock {
  #i32
  #buffer
  #byteOffset
  #word
  #queue = new ThreadQueue()
  #drop = (req, err) => this.#dropRequest(req, err)
  // A release through the promise API (see LockWord.leave).
  #leave = () => { if (this.#queue.size !== 0 || !this.#word.leave()) this.unlock() }

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0] a multiple of 4
   * @param {{ fifo?: boolean }} [options] every user of one lock word must
   *   open it with the same `fifo`; `handle` carries it
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0, options = undefined) {
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock')
    const fifo = readMode(options, 'AsyncLock')
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
    this.#word = new LockWord(this.#i32, fifo, () => this.unlock())
  }

  /** Reopens a lock from its `handle`, e.g. one posted to a worker. */
  static from (handle) {
    const { buffer, byteOffset } = g.readHandle(handle, 'AsyncLock.from')
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock.from')
    return new AsyncLock(buffer, byteOffset, { fifo: handle.fifo === undefined ? false : handle.fifo })
  }

  /** A structured-clonable description of the lock. */
  get handle () {
    return { buffer: this.#buffer, byteOffset: this.#byteOffset, fifo: this.#word.fifo }
  }

  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }
  /** true for strict FIFO hand-off. */
  get fifo () { return this.#word.fifo }

  /** Whether some thread holds the lock. */
  get locked () {
    return (this.#word.value & ID_MASK) !== 0
  }

  /** The threadId of the holder, or null. */
  get owner () {
    const id = this.#word.value & ID_MASK
    return id === 0 || id === PASSING ? null : id - 1
  }

  /** How many requests (sync or async, all threads) wait for the lock. */
  get waiting () {
    const first = this.#queue.first
    const local = first !== null && first.native ? this.#queue.size - 1 : this.#queue.size
    return binding.waiterCount(this.#i32, 0) + local
  }

  /**
   * True while the lock is held by a thread that took it over from one that
   * died holding it: the data it protects may be half updated. Cleared by
   * the next release.
   */
  get ownerDied () {
    return (this.#word.value & OWNER_DIED_BIT) !== 0
  }

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && this.#queue.size === 0 && this.#word.fast()) return
    const timeout = g.readSyncOptions(options, 'AsyncLock.lock')
    if (this.#queue.size === 0 && this.#word.fast()) return
    if (this.#word.mine || this.#queue.size !== 0) {
      throw new LockError(codes.EDEADLK, 'AsyncLock.lock: this thread holds the lock or has requests queued for it, so a blocking lock() would never return')
    }
    g.gateSync(this.#i32, 0, g.GATE_LOCK, this.#word.flags, timeout, 'AsyncLock.lock')
    this.#word.restart()
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    if (this.#queue.size !== 0) return false // this thread's older requests come first
    if (this.#word.fast()) return true
    if (this.#word.mine) return false
    const r = binding.gateAcquire(this.#i32, 0, g.GATE_LOCK, selfId, this.#word.flags, 0)
    return r === ACQUIRED || r === OWNER_DIED
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
    req.resolve(g.makeRelease(this.#leave, ownerDied))
  }

  // A request waiting in this thread's queue ended by its timer or signal.
  #dropRequest (req, err) {
    if (this.#queue.remove(req)) req.reject(err)
  }

  // Sends `req`, first in this thread's queue, to the core.
  #send (req) {
    req.native = true
    this.#queue.unwatch(req)
    const o = req.options
    const timeout = g.remaining(req.deadline)
    const p = timeout === 0 && o.timeout !== 0
      ? Promise.reject(g.timeoutError(o.timeout, req.where))
      : g.gateAsync(this.#i32, 0, g.GATE_LOCK, this.#word.flags,
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
    const idle = this.#queue.size === 0
    if (options === undefined && idle && this.#word.fast()) {
      return Promise.resolve(g.makeRelease(this.#leave, this.ownerDied))
    }
    const o = options === undefined ? NO_OPTIONS : g.readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(g.abortError(o.signal))
    if (idle && this.#word.fast()) return Promise.resolve(g.makeRelease(this.#leave, this.ownerDied))
    if (!o.blocking || o.timeout === 0) {
      if (this.tryLock()) return Promise.resolve(g.makeRelease(this.#leave, this.ownerDied))
      return Promise.reject(o.blocking ? g.timeoutError(0, where) : g.busyError(where))
    }
    if (this.#word.fifo) {
      return g.gateAsync(this.#i32, 0, g.GATE_LOCK, this.#word.flags, o, where)
        .then((ownerDied) => g.makeRelease(this.#leave, ownerDied))
    }
    return new Promise((resolve, reject) => {
      const req = new Request(o, where, resolve, reject)
      // While this thread holds the lock or has older requests, the
      // request waits here for the release that passes the lock on.
      if (idle && !this.#word.mine) {
        this.#queue.push(req, undefined)
        this.#send(req)
      } else {
        this.#queue.push(req, this.#drop)
      }
    })
  }

  // Runs `callback` holding the lock, releasing it however it ends.
  async #run (callback, options, where) {
    if (typeof callback !== 'function') {
      throw new TypeError(`${where}: callback must be a function, received ${describe(callback)}`)
    }
    // Uncontended: skip the release function and the promise of acquire().
    if (options !== undefined || this.#queue.size !== 0 || !this.#word.fast()) {
      const release = await this.#acquire(options, where)
      try {
        return await callback()
      } finally {
        release()
      }
    }
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
      return this.#run(callback, options, 'AsyncLock.runExclusive')
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
  }

  /** The V8 blog's name for runExclusive without options. */
  executeLocked (f) {
    try {
      return this.#run(f, undefined, 'AsyncLock.executeLocked')
    } catch (err) {
      return Promise.reject(err)
    }
  }
}

module.exports = { AsyncLock }
