'use strict'

// AsyncLock: an owner-aware lock in one Int32 of a SharedArrayBuffer.
//
// Lock word (see src/waiters.h): 0 is free; otherwise the low 29 bits hold
// the owner's thread id + 1, bit 29 says the owner took the lock over from a
// thread that died holding it, and bit 30 says that waiters are queued. An
// uncontended acquire (0 -> id) and release (id -> 0) are one
// compare-exchange each, here in JavaScript; anything else goes to the
// native waiter list.
//
// Fair mode (the default): a release hands the lock directly to the oldest
// waiter, so the word never reads free while somebody waits and nobody can
// barge in: grants are FIFO across threads.
//
// Throughput mode ({ fair: false }): a release frees the word and wakes the
// oldest blocked waiter, which competes with running threads; a running
// thread may take the lock again at once (a word with no owner is free even
// with the waiters bit set). A waiter that has waited a millisecond or more,
// and an async one, still gets the lock handed over, so nobody starves.

const g = require('./gate')
const { describe } = require('./atomics')
const { binding, selfId } = require('./native')
const { LockError, codes } = require('./errors')

// Word bits, result codes and the throughput flag of the native core
// (src/waiters.h).
const {
  LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT,
  RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED, LOCK_BARGE: BARGE
} = binding.constants

const { compareExchange, load } = Atomics

function readMode (options, where) {
  if (options === undefined) return true
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  const { fair = true } = options
  if (typeof fair !== 'boolean') {
    throw new TypeError(`${where}: options.fair must be a boolean, received ${describe(fair)}`)
  }
  return fair
}

class AsyncLock {
  #i32
  #buffer
  #byteOffset
  #fair
  #flags

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0] a multiple of 4
   * @param {{ fair?: boolean }} [options] every user of one lock word must
   *   open it in the same mode; `handle` carries it
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0, options = undefined) {
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock')
    this.#fair = readMode(options, 'AsyncLock')
    this.#flags = this.#fair ? 0 : BARGE
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
  }

  /** Reopens a lock from its `handle`, e.g. one posted to a worker. */
  static from (handle) {
    const { buffer, byteOffset } = g.readHandle(handle, 'AsyncLock.from')
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock.from')
    const fair = handle.fair === undefined ? true : handle.fair
    return new AsyncLock(buffer, byteOffset, { fair })
  }

  /** A structured-clonable description of the lock. */
  get handle () {
    return { buffer: this.#buffer, byteOffset: this.#byteOffset, fair: this.#fair }
  }

  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }
  /** false in the throughput mode. */
  get fair () { return this.#fair }

  /** Whether some thread holds the lock. */
  get locked () {
    return (load(this.#i32, 0) & ID_MASK) !== 0
  }

  /** The threadId of the holder, or null. */
  get owner () {
    const id = load(this.#i32, 0) & ID_MASK
    return id === 0 ? null : id - 1
  }

  /** How many requests (sync or async, all threads) wait for the lock. */
  get waiting () {
    return binding.waiterCount(this.#i32, 0)
  }

  /**
   * True while the lock is held by a thread that took it over from one that
   * died holding it: the data it protects may be half updated. Cleared by
   * the next release.
   */
  get ownerDied () {
    return (load(this.#i32, 0) & OWNER_DIED_BIT) !== 0
  }

  // The compare-exchange acquire. In the throughput mode a word without an
  // owner is free even while the waiters bit is set.
  #fast () {
    const v = compareExchange(this.#i32, 0, 0, selfId)
    if (v === 0) return true
    return !this.#fair && (v & ID_MASK) === 0 &&
      compareExchange(this.#i32, 0, v, v | selfId) === v
  }

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && this.#fast()) return
    const timeout = g.readSyncOptions(options, 'lock')
    if (this.#fast()) return
    if ((load(this.#i32, 0) & ID_MASK) === selfId) {
      throw new LockError(codes.EDEADLK, 'lock: this thread already holds the lock, so a blocking lock() would never return')
    }
    g.gateSync(this.#i32, 0, g.GATE_LOCK, this.#flags, timeout, 'lock')
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    if (this.#fast()) return true
    if ((load(this.#i32, 0) & ID_MASK) === selfId) return false
    const r = binding.gateAcquire(this.#i32, 0, g.GATE_LOCK, selfId, this.#flags, 0)
    return r === ACQUIRED || r === OWNER_DIED
  }

  /** Releases the lock held by this thread. */
  unlock () {
    if (compareExchange(this.#i32, 0, selfId, 0) === selfId) return
    const owner = this.owner
    if (owner !== selfId - 1) {
      throw new LockError(codes.ENOTOWNER, owner === null
        ? 'unlock: the lock is not held'
        : `unlock: called by thread ${selfId - 1}, but the lock is held by thread ${owner}`)
    }
    g.gateRelease(this.#i32, 0, g.GATE_LOCK, this.#flags, 'unlock')
  }

  #release (ownerDied) {
    return g.makeRelease(() => this.unlock(), ownerDied)
  }

  /**
   * Resolves with a release function once this thread holds the lock.
   * Requests are granted in FIFO order across all threads (fair mode).
   */
  acquire (options) {
    try {
      return this.#acquire(options, 'acquire')
    } catch (err) {
      // Bad options, a throwing option getter or a wrong receiver: a
      // promise-returning method reports every failure through its promise.
      return Promise.reject(err)
    }
  }

  // The promise API's common path; `where` names the public method in
  // error messages. May throw synchronously on bad options.
  #acquire (options, where) {
    if (options === undefined && this.#fast()) return Promise.resolve(this.#release(this.ownerDied))
    const o = g.readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(g.abortError(o.signal))
    if (this.#fast()) return Promise.resolve(this.#release(this.ownerDied))
    if (!o.blocking || o.timeout === 0) {
      if (this.tryLock()) return Promise.resolve(this.#release(this.ownerDied))
      return Promise.reject(o.blocking ? g.timeoutError(0, where) : g.busyError(where))
    }
    return g.gateAsync(this.#i32, 0, g.GATE_LOCK, this.#flags, o, where)
      .then((ownerDied) => this.#release(ownerDied))
  }

  // Runs `callback` holding the lock, releasing it however it ends.
  async #run (callback, options, where) {
    if (typeof callback !== 'function') {
      throw new TypeError(`${where}: callback must be a function, received ${describe(callback)}`)
    }
    // Uncontended: skip the release function and the promise of acquire().
    if (options !== undefined || !this.#fast()) {
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
      this.unlock()
    }
  }

  /**
   * Runs `callback` while holding the lock and resolves with its result;
   * the lock is released however the callback ends.
   */
  runExclusive (callback, options) {
    try {
      return this.#run(callback, options, 'runExclusive')
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
  }

  /** The V8 blog's name for runExclusive without options. */
  executeLocked (f) {
    try {
      return this.#run(f, undefined, 'executeLocked')
    } catch (err) {
      return Promise.reject(err)
    }
  }
}

module.exports = { AsyncLock }
