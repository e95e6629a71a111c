'use strict'

// AsyncLock: an owner-aware lock in one Int32 of a SharedArrayBuffer.
//
// Lock word (src/waiters.h): 0 is free; otherwise the low 29 bits hold the
// owner's thread id + 1, bit 29 says the owner took the lock over from a
// thread that died holding it, bit 30 that waiters are queued in the core,
// and bit 31 that one of them was woken and is on its way. An uncontended
// acquire (0 -> id) and release (id -> 0) are one compare-exchange each,
// here in JavaScript.
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

// Word bits, result codes and release flags of the native core
// (src/waiters.h).
const {
  LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT, LOCK_WAITERS: WAITERS_BIT,
  LOCK_WOKEN: WOKEN_BIT, RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED,
  LOCK_BARGE: BARGE, LOCK_HANDOFF: HANDOFF
} = binding.constants

// A slice: how long a thread may keep taking the lock while others wait.
const SLICE_GRANTS = 4096
const SLICE_MS = 0.5
const RESERVE_HOPS = 3

const NO_OPTIONS = Object.freeze({ blocking: true, timeout: Infinity, signal: undefined, ref: true })

const { compareExchange, load } = Atomics

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
  #fifo
  #flags
  #queue = new ThreadQueue()
  #streak = 0 // grants taken in a row while others waited
  #sliceEnd = 0 // performance.now() when the slice ends
  #guard = false // another thread took the word in a gap of this slice
  #reserved = false // released through the promise API, word kept
  #hops = 0 // microtasks the reservation has lasted
  #chain = false // a #settle microtask is queued
  #settle = () => this.#endReservation()
  #drop = (req, err) => this.#dropRequest(req, err)

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0] a multiple of 4
   * @param {{ fifo?: boolean }} [options] every user of one lock word must
   *   open it with the same `fifo`; `handle` carries it
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0, options = undefined) {
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock')
    this.#fifo = readMode(options, 'AsyncLock')
    this.#flags = this.#fifo ? 0 : BARGE
    this.#buffer = buffer
    this.#byteOffset = byteOffset
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
  }

  /** Reopens a lock from its `handle`, e.g. one posted to a worker. */
  static from (handle) {
    const { buffer, byteOffset } = g.readHandle(handle, 'AsyncLock.from')
    g.validateSlot(buffer, byteOffset, 4, 'AsyncLock.from')
    return new AsyncLock(buffer, byteOffset, { fifo: handle.fifo === undefined ? false : handle.fifo })
  }

  /** A structured-clonable description of the lock. */
  get handle () {
    return { buffer: this.#buffer, byteOffset: this.#byteOffset, fifo: this.#fifo }
  }

  get buffer () { return this.#buffer }
  get byteOffset () { return this.#byteOffset }
  /** true for strict FIFO hand-off. */
  get fifo () { return this.#fifo }

  /** Whether some thread holds the lock. */
  get locked () {
    return !this.#reserved && (load(this.#i32, 0) & ID_MASK) !== 0
  }

  /** The threadId of the holder, or null. */
  get owner () {
    const id = load(this.#i32, 0) & ID_MASK
    return id === 0 || this.#reserved ? null : id - 1
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
    return (load(this.#i32, 0) & OWNER_DIED_BIT) !== 0
  }

  // The compare-exchange acquire. Outside the FIFO mode a word without an
  // owner is free even while waiters are queued.
  #fast () {
    if (this.#reserved) {
      this.#reserved = false
      return true
    }
    const v = compareExchange(this.#i32, 0, 0, selfId)
    if (v === 0) return true
    if (!this.#fifo && (v & ID_MASK) === 0 &&
      compareExchange(this.#i32, 0, v, v | selfId) === v) return true
    // Lost in the middle of a slice: somebody takes the word in the gaps
    // between this thread's grants, so its releases will reserve it.
    if (this.#streak !== 0) this.#guard = true
    return false
  }

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && this.#queue.size === 0 && this.#fast()) return
    const timeout = g.readSyncOptions(options, 'AsyncLock.lock')
    if (this.#queue.size === 0 && this.#fast()) return
    if ((load(this.#i32, 0) & ID_MASK) === selfId || this.#queue.size !== 0) {
      throw new LockError(codes.EDEADLK, 'AsyncLock.lock: this thread holds the lock or has requests queued for it, so a blocking lock() would never return')
    }
    g.gateSync(this.#i32, 0, g.GATE_LOCK, this.#flags, timeout, 'AsyncLock.lock')
    this.#streak = 0
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    if (this.#queue.size !== 0) return false // this thread's older requests come first
    if (this.#fast()) return true
    if ((load(this.#i32, 0) & ID_MASK) === selfId) return false
    const r = binding.gateAcquire(this.#i32, 0, g.GATE_LOCK, selfId, this.#flags, 0)
    return r === ACQUIRED || r === OWNER_DIED
  }

  /** Releases the lock held by this thread. */
  unlock () {
    if (this.#reserved) this.#checkOwner(0)
    const queue = this.#queue
    if (queue.size === 0 || queue.first.native) {
      const v = compareExchange(this.#i32, 0, selfId, 0)
      if (v === selfId) {
        this.#streak = 0
        this.#guard = false
        return
      }
      this.#checkOwner(v)
      this.#release(v, 0)
      return
    }
    const v = load(this.#i32, 0)
    this.#checkOwner(v)
    const next = queue.first
    queue.remove(next)
    if ((v & OWNER_DIED_BIT) === 0 && this.#sliceLeft(v)) {
      this.#grant(next, false) // this thread keeps the lock
      return
    }
    this.#release(v, HANDOFF)
    this.#send(next)
  }

  // A release through the promise API: while others wait, it keeps the word
  // for a few microtasks (see the top of this file).
  #leave () {
    if (this.#guard && this.#queue.size === 0) {
      const v = load(this.#i32, 0)
      if ((v & ID_MASK) === selfId && (v & (OWNER_DIED_BIT | WAITERS_BIT)) === WAITERS_BIT) {
        if (!this.#sliceLeft(v)) {
          this.#release(v, HANDOFF)
          return
        }
        this.#reserved = true
        this.#hops = 0
        if (!this.#chain) {
          this.#chain = true
          queueMicrotask(this.#settle)
        }
        return
      }
    }
    this.unlock()
  }

  #endReservation () {
    if (this.#reserved && ++this.#hops < RESERVE_HOPS) {
      queueMicrotask(this.#settle)
      return
    }
    this.#chain = false
    if (!this.#reserved) return
    this.#reserved = false
    this.unlock()
  }

  #checkOwner (v) {
    if ((v & ID_MASK) === selfId) return
    const owner = (v & ID_MASK) === 0 ? null : (v & ID_MASK) - 1
    throw new LockError(codes.ENOTOWNER, owner === null
      ? 'AsyncLock.unlock: the lock is not held'
      : `AsyncLock.unlock: called by thread ${selfId - 1}, but the lock is held by thread ${owner}`)
  }

  // Whether this thread's slice lets it keep the lock; counts one grant.
  #sliceLeft (v) {
    if ((v & WAITERS_BIT) === 0) return true
    const s = ++this.#streak
    if (s === 1) this.#sliceEnd = performance.now() + SLICE_MS
    else if (s >= SLICE_GRANTS || ((s & 63) === 0 && performance.now() >= this.#sliceEnd)) {
      this.#streak = 0
      return false
    }
    return true
  }

  // Frees the word `v` (held by this thread with some bit set). Within the
  // slice, and with nobody to wake, that is a compare-exchange; otherwise
  // the core wakes or (HANDOFF, FIFO mode) hands over to the oldest waiter.
  #release (v, handoff) {
    if (!this.#fifo && handoff === 0 && (v & OWNER_DIED_BIT) === 0) {
      if ((v & WAITERS_BIT) !== 0 && !this.#sliceLeft(v)) {
        handoff = HANDOFF
      } else if (((v & WAITERS_BIT) === 0 || (v & WOKEN_BIT) !== 0) &&
        compareExchange(this.#i32, 0, v, v & ~ID_MASK) === v) {
        return
      }
    }
    g.gateRelease(this.#i32, 0, g.GATE_LOCK, this.#flags | handoff, 'AsyncLock.unlock')
  }

  // Resolves `req`, whose thread now holds the lock.
  #grant (req, ownerDied) {
    req.resolve(g.makeRelease(() => this.#leave(), ownerDied))
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
      : g.gateAsync(this.#i32, 0, g.GATE_LOCK, this.#flags,
        timeout === o.timeout ? o : { ...o, timeout }, req.where)
    p.then((ownerDied) => {
      this.#queue.remove(req)
      this.#streak = 0
      this.#grant(req, ownerDied)
    }, (err) => {
      this.#queue.remove(req)
      req.reject(err)
      // The next request of this thread competes now, unless this thread
      // holds the lock, whose release passes it on.
      const next = this.#queue.first
      if (next !== null && (load(this.#i32, 0) & ID_MASK) !== selfId) this.#send(next)
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
    if (options === undefined && idle && this.#fast()) {
      return Promise.resolve(g.makeRelease(() => this.#leave(), this.ownerDied))
    }
    const o = options === undefined ? NO_OPTIONS : g.readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(g.abortError(o.signal))
    if (idle && this.#fast()) return Promise.resolve(g.makeRelease(() => this.#leave(), this.ownerDied))
    if (!o.blocking || o.timeout === 0) {
      if (this.tryLock()) return Promise.resolve(g.makeRelease(() => this.#leave(), this.ownerDied))
      return Promise.reject(o.blocking ? g.timeoutError(0, where) : g.busyError(where))
    }
    if (this.#fifo) {
      return g.gateAsync(this.#i32, 0, g.GATE_LOCK, this.#flags, o, where)
        .then((ownerDied) => g.makeRelease(() => this.#leave(), ownerDied))
    }
    return new Promise((resolve, reject) => {
      const req = new Request(o, where, resolve, reject)
      // While this thread holds the lock or has older requests, the
      // request waits here for the release that passes the lock on.
      if (idle && (load(this.#i32, 0) & ID_MASK) !== selfId) {
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
    if (options !== undefined || this.#queue.size !== 0 || !this.#fast()) {
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
