'use strict'

// AsyncLock: a fair, owner-aware lock in one Int32 of a SharedArrayBuffer.
//
// Lock word (see src/waiters.h): 0 is free; otherwise the low 29 bits hold
// the owner's thread id + 1, bit 29 says the owner took the lock over from a
// thread that died holding it, and bit 30 says that waiters are queued. An
// uncontended acquire (0 -> id) and release (id -> 0) are one
// compare-exchange each, here in JavaScript. Anything else goes to the native
// waiter list, which hands the lock directly to the oldest waiter on release:
// the word never reads 0 while somebody waits, so nobody can barge in.

const { binding, selfId } = require('./native')
const { LockError, AbortError, codes } = require('./errors')
const { describe } = require('./atomics')
const { types } = require('util')

const ID_MASK = 0x1fffffff
const OWNER_DIED_BIT = 0x20000000

// Native result codes (src/waiters.h).
const TIMED_OUT = 2
const INTERRUPTED = 3
const ACQUIRED = 5
const OWNER_DIED = 6
const EDEADLK = -35
const ENOTOWNER = -1

const { compareExchange, load } = Atomics
const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

function validateBuffer (buffer, byteOffset, where) {
  if (!types.isSharedArrayBuffer(buffer)) {
    throw new TypeError(`${where}: buffer must be a SharedArrayBuffer, received ${describe(buffer)}`)
  }
  // As Node's own validators do: a value of the wrong type is a TypeError, a
  // number that is not a usable offset (fractional, NaN, out of range) a
  // RangeError.
  if (typeof byteOffset !== 'number') {
    throw new TypeError(`${where}: byteOffset must be a number, received ${describe(byteOffset)}`)
  }
  if (!Number.isInteger(byteOffset)) {
    throw new RangeError(`${where}: byteOffset must be an integer, received ${byteOffset}`)
  }
  if (byteOffset < 0 || byteOffset % 4 !== 0 || byteOffset + 4 > buffer.byteLength) {
    throw new RangeError(`${where}: byteOffset must be a multiple of 4 with 4 bytes available in the buffer (byteLength ${buffer.byteLength}), received ${byteOffset}`)
  }
}

function readTimeout (timeout, where) {
  if (timeout === undefined) return Infinity
  if (typeof timeout !== 'number') {
    throw new TypeError(`${where}: timeout must be a number of milliseconds, received ${describe(timeout)}`)
  }
  if (timeout !== timeout || timeout < 0) {
    throw new RangeError(`${where}: timeout must be >= 0 (Infinity for none), received ${timeout}`)
  }
  return timeout
}

function readOptions (options, where) {
  if (options === undefined) return undefined
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  return options
}

// Parses { blocking = true, timeout, signal, ref = true } of the promise API.
function readAcquireOptions (options, where) {
  const o = readOptions(options, where)
  if (o === undefined) return { blocking: true, timeout: Infinity, signal: undefined, ref: true }
  const { blocking = true, timeout, signal, ref = true } = o
  if (typeof blocking !== 'boolean') {
    throw new TypeError(`${where}: options.blocking must be a boolean, received ${describe(blocking)}`)
  }
  const t = readTimeout(timeout, where)
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`${where}: options.signal must be an AbortSignal, received ${describe(signal)}`)
  }
  if (typeof ref !== 'boolean') {
    throw new TypeError(`${where}: options.ref must be a boolean, received ${describe(ref)}`)
  }
  if (!blocking && timeout !== undefined) {
    throw new TypeError(`${where}: options.timeout cannot be combined with blocking: false`)
  }
  return { blocking, timeout: t, signal, ref }
}

function timeoutError (timeout) {
  return new LockError(codes.ETIMEDOUT, `lock not acquired within ${timeout} ms`)
}

function busyError () {
  return new LockError(codes.EBUSY, 'lock is held (non-blocking attempt)')
}

function abortError (signal) {
  return new AbortError('The operation was aborted', { cause: signal.reason })
}

class AsyncLock {
  #i32
  #buffer
  #byteOffset

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0] a multiple of 4
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    validateBuffer(buffer, byteOffset, 'AsyncLock')
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
  }

  /** Reopens a lock from its `handle`, e.g. one posted to a worker. */
  static from (handle) {
    if (handle === null || typeof handle !== 'object') {
      throw new TypeError(`AsyncLock.from: handle must be an object { buffer, byteOffset }, received ${describe(handle)}`)
    }
    const { buffer, byteOffset = 0 } = handle
    validateBuffer(buffer, byteOffset, 'AsyncLock.from')
    return new AsyncLock(buffer, byteOffset)
  }

  /** A structured-clonable description of the lock. */
  get handle () {
    return { buffer: this.#buffer, byteOffset: this.#byteOffset }
  }

  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }

  /** Whether some thread holds the lock. */
  get locked () {
    return load(this.#i32, 0) !== 0
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

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && compareExchange(this.#i32, 0, 0, selfId) === 0) return
    const o = readOptions(options, 'lock')
    const timeout = readTimeout(o && o.timeout, 'lock')
    const v = compareExchange(this.#i32, 0, 0, selfId)
    if (v === 0) return
    if ((v & ID_MASK) === selfId) {
      throw new LockError(codes.EDEADLK, 'lock() by the thread that already holds the lock would never return')
    }
    const r = binding.lockAcquire(this.#i32, 0, selfId, timeout)
    if (r === ACQUIRED || r === OWNER_DIED) return
    if (r === TIMED_OUT) throw timeoutError(timeout)
    if (r === EDEADLK) {
      throw new LockError(codes.EDEADLK, 'lock() while this thread has an acquire() pending on the same lock would never return')
    }
    throw new Error('threadlock: the wait was interrupted because the thread is terminating')
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    const v = compareExchange(this.#i32, 0, 0, selfId)
    if (v === 0) return true
    if ((v & ID_MASK) === selfId) return false
    const r = binding.lockAcquire(this.#i32, 0, selfId, 0)
    return r === ACQUIRED || r === OWNER_DIED
  }

  /** Releases the lock held by this thread. */
  unlock () {
    if (compareExchange(this.#i32, 0, selfId, 0) === selfId) return
    if (binding.lockRelease(this.#i32, 0, selfId) === ENOTOWNER) {
      const owner = this.owner
      throw new LockError(codes.ENOTOWNER, owner === null
        ? 'unlock() of a lock that is not held'
        : `unlock() by thread ${selfId - 1}, but the lock is held by thread ${owner}`)
    }
  }

  #release () {
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.unlock()
    }
    release[dispose] = release
    release.ownerDied = this.ownerDied
    return release
  }

  /**
   * Resolves with a release function once this thread holds the lock.
   * Requests are granted in FIFO order across all threads.
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
    const o = readAcquireOptions(options, where)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
    if (compareExchange(this.#i32, 0, 0, selfId) === 0) return Promise.resolve(this.#release())
    if (!o.blocking || o.timeout === 0) {
      if (this.tryLock()) return Promise.resolve(this.#release())
      return Promise.reject(o.blocking ? timeoutError(0) : busyError())
    }
    const signal = o.signal
    const r = binding.lockAcquireAsync(this.#i32, 0, selfId, o.timeout, o.ref, signal !== undefined)
    if (typeof r === 'number') return Promise.resolve(this.#release())
    const settle = (code) => {
      if (code === ACQUIRED || code === OWNER_DIED) return this.#release()
      throw timeoutError(o.timeout)
    }
    if (signal === undefined) return r.then(settle)
    const [promise, token] = r
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        // A request that was granted already cannot be withdrawn: it
        // resolves, as Node's APIs ignore an abort after completion.
        if (binding.lockCancel(token)) reject(abortError(signal))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      promise.then((code) => {
        signal.removeEventListener('abort', onAbort)
        if (code === INTERRUPTED) return
        try {
          resolve(settle(code))
        } catch (err) {
          reject(err)
        }
      })
    })
  }

  /**
   * Runs `callback` while holding the lock and resolves with its result;
   * the lock is released however the callback ends.
   */
  async runExclusive (callback, options) {
    if (typeof callback !== 'function') {
      throw new TypeError(`runExclusive: callback must be a function, received ${describe(callback)}`)
    }
    const release = await this.#acquire(options, 'runExclusive')
    try {
      return await callback()
    } finally {
      release()
    }
  }

  /** The V8 blog's name for runExclusive without options. */
  async executeLocked (f) {
    if (typeof f !== 'function') {
      throw new TypeError(`executeLocked: f must be a function, received ${describe(f)}`)
    }
    const release = await this.#acquire(undefined, 'executeLocked')
    try {
      return await f()
    } finally {
      release()
    }
  }
}

module.exports = { AsyncLock }
