'use strict'

// Semaphore: a count of permits in one Int32 of a SharedArrayBuffer, shared
// by every thread that opens it. The policy is the lock's (src/sem.c):
// a request takes permits whenever enough are available, also while others
// wait (barging); queued requests are served in the order they queued; and
// a request that has waited POLICY_STARVING_NS gets the permits that
// releases return before any later request takes permits, so a large
// request is never starved by a stream of small ones.
//
// Word layout (src/waiters.h): the available permits in the low 29 bits
// (SEM_MASK), SEM_RESERVED (permits kept for a starving request at the
// head), GATE_WAITERS (requests are queued) and SEM_WOKEN (the head was
// woken and is on its way). These fast paths are one compare-exchange
// each: acquire while the permits suffice and are not reserved, release
// while nobody is queued or woken; the core decides everything else.

const { SharedSlot } = require('./SharedSlot')
const shm = require('./ShmSemaphore')
const gate = require('./gate')
const native = require('./native')
const { interrupted, timeoutError } = require('./errors')
const {
  describe, isPlainObject, checkKeys, readCount, readSyncOptions, readAsyncOptions
} = require('./validate')

const {
  GATE_SEM, SEM_MASK: MASK, SEM_RESERVED: RESERVED, SEM_WOKEN: WOKEN, GATE_WAITERS: WAITERS
} = native.constants
const { compareExchange, load, store } = Atomics
const { RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED } = native.constants

// The Semaphore's gate: a queued request without a signal settles with its
// release function in one step from the core's code (gate.Gate's queue
// takes two: code to owner-died news, news to release function), which is
// a promise and a microtask less for every request that waits (row 7b).
class SemaphoreGate extends gate.Gate {
  queue (amount, o, where, release) {
    if (o.signal !== undefined) return super.queue(amount, o, where, release)
    const r = native.gateAcquireAsync(this.i32, 0, GATE_SEM, native.selfId, amount, o.timeout, o.ref, false)
    if (typeof r === 'number') return Promise.resolve(gate.makeRelease(release, r === OWNER_DIED))
    // As in gate.gateAsync: no promise, because the thread is terminating.
    if (r === undefined) return Promise.reject(interrupted(where))
    return r.then((code) => {
      if (code === ACQUIRED || code === OWNER_DIED) return gate.makeRelease(release, code === OWNER_DIED)
      throw timeoutError(o.timeout, where)
    })
  }
}

function readPermits (k, where) {
  if (k === undefined) return 1
  return readCount(k, 1, MASK, where, 'permits')
}

const PERMITS = ['permits']

// The arguments of acquire, acquireSync and tryAcquire: `(permits,
// options)`, or one options object `{ permits, ...options }` as
// runExclusive takes it, told apart by the first: a plain object is the
// options. Returns [permits, options, the keys read here or undefined].
function readPermitArgs (k, options, where) {
  if (!isPlainObject(k)) return [k, options, undefined]
  if (options !== undefined) {
    throw new TypeError(`${where}: an options object must be the last argument, received ${describe(options)} after it`)
  }
  return [k.permits, k, PERMITS]
}

class Semaphore extends SharedSlot {
  #i32
  #gate
  #releaseOne = () => this.#give(1)
  // performance.now() before which no request queued on the word can have
  // starved, as the core last told this object (src/sem.c, S6).
  #calmUntil = 0

  /**
   * @param {number} [permits=1] initial permits
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (permits = 1, buffer = undefined, byteOffset = undefined, options = undefined) {
    let shared
    super({ type: 'Semaphore', words: 1, shm: true }, [buffer, byteOffset, options], (i32, handle, o, inShm) => {
      shared = inShm
      if (handle === undefined) store(i32, 0, readCount(permits, 0, MASK, 'Semaphore', 'permits'))
    })
    // Memory shared by processes: lib/ShmSemaphore.js, chosen once here.
    if (shared) return new shm.ShmSemaphore(this.buffer, this.byteOffset)
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#gate = new SemaphoreGate(this.#i32, GATE_SEM, (k) => this.#fast(k) ? false : undefined)
  }

  /** Permits available now. */
  get value () { return load(this.#i32, 0) & MASK }

  /** Requests waiting, in all threads. */
  get waiting () { return native.waiterCount(this.#i32, 0) }

  // Barging: queued requests do not stop this one, reserved permits do.
  #fast (k) {
    let v = load(this.#i32, 0)
    while (!(v & RESERVED) && (v & MASK) >= k) {
      const seen = compareExchange(this.#i32, 0, v, v - k)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  /** Takes `k` permits if they are available without waiting. */
  tryAcquire (k) {
    const [n, o] = readPermitArgs(k, undefined, 'Semaphore.tryAcquire')
    if (o !== undefined) checkKeys(o, PERMITS, 'Semaphore.tryAcquire')
    return gate.tryAcquire(this.#gate, readPermits(n, 'Semaphore.tryAcquire'))
  }

  /** Blocks this thread until `k` permits are taken; also acquireSync({ permits, timeout }). */
  acquireSync (k, options) {
    const [p, o, own] = readPermitArgs(k, options, 'Semaphore.acquireSync')
    const n = readPermits(p, 'Semaphore.acquireSync')
    const timeout = readSyncOptions(o, 'Semaphore.acquireSync', own)
    gate.acquireSync(this.#gate, n, timeout, 'Semaphore.acquireSync')
  }

  /**
   * Resolves with a release function once `k` permits are taken; also
   * acquire({ permits, timeout, signal, ref, blocking }).
   */
  acquire (k, options) {
    try {
      // The common call, one permit without options, while one is free: the
      // word's compare-exchange and the release function, nothing read.
      if (k === undefined && options === undefined && this.#fast(1)) {
        return Promise.resolve(gate.makeRelease(this.#releaseOne, false))
      }
      return this.#acquire(...readPermitArgs(k, options, 'Semaphore.acquire'), 'Semaphore.acquire')
    } catch (err) {
      // Bad permits or options, or a wrong receiver: reported through the
      // promise, as by every promise-returning method.
      return Promise.reject(err)
    }
  }

  // The promise form; `own` names option keys read by the caller, `where`
  // the public method in messages.
  #acquire (k, options, own, where) {
    const n = readPermits(k, where)
    const o = readAsyncOptions(options, where, true, own)
    return gate.acquire(this.#gate, n, o, where, n === 1 ? this.#releaseOne : () => this.release(n))
  }

  /** Returns `k` permits; the core wakes or grants a queued request. */
  release (k) {
    this.#give(readPermits(k, 'Semaphore.release'))
  }

  // release() once its count `n` is read.
  #give (n) {
    const i32 = this.#i32
    let v = load(i32, 0)
    let calm = false
    for (;;) {
      // With requests queued, one compare-exchange still serves while the
      // head is woken and on its way (K set, R clear) and no request can
      // have starved: the core would only add the permits (src/sem.c, the
      // woken shortcut, S6). Otherwise the core decides.
      if (v & (WAITERS | WOKEN)) {
        if ((v & (WOKEN | RESERVED)) !== WOKEN) break
        if (!calm) {
          if (performance.now() >= this.#calmUntil) break
          calm = true
        }
      }
      if ((v & MASK) + n > MASK) throw new RangeError(`Semaphore.release: ${n} more permits would exceed ${MASK}`)
      const seen = compareExchange(i32, 0, v, v + n)
      if (seen === v) return
      v = seen
    }
    // Read before the call, so that the bound errs early.
    const before = performance.now()
    const r = gate.gateRelease(i32, 0, GATE_SEM, n, 'Semaphore.release')
    this.#calmUntil = before + ((r >> 4) - 1) / 1000
  }

  /** Runs `callback` holding `options.permits` (1) permits. */
  runExclusive (callback, options) {
    // One permit free at once: run it held (gate.runHeld), as acquire()'s
    // fast path.
    try {
      if (options === undefined && typeof callback === 'function' && this.#fast(1)) {
        return gate.runHeld(callback, this.#releaseOne, undefined)
      }
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
    // A bad `options` must be reported as such by acquire(), not as bad
    // permits read from it.
    return gate.runHolding(callback, 'Semaphore.runExclusive', () => this.#acquire(
      options !== null && typeof options === 'object' ? options.permits : undefined, options, ['permits'],
      'Semaphore.runExclusive'))
  }
}

// A semaphore on memory shared by processes is a Semaphore: instanceof,
// constructor (for from()), and the public methods below, which read their
// arguments as the in-process ones do and then make its requests.
Object.setPrototypeOf(shm.ShmSemaphore.prototype, Semaphore.prototype)
Object.defineProperties(shm.ShmSemaphore.prototype, Object.getOwnPropertyDescriptors({
  tryAcquire (k) {
    const [n, o] = readPermitArgs(k, undefined, 'Semaphore.tryAcquire')
    if (o !== undefined) checkKeys(o, PERMITS, 'Semaphore.tryAcquire')
    return this[shm.TRY](readPermits(n, 'Semaphore.tryAcquire'))
  },
  acquireSync (k, options) {
    const [p, o, own] = readPermitArgs(k, options, 'Semaphore.acquireSync')
    const n = readPermits(p, 'Semaphore.acquireSync')
    const timeout = readSyncOptions(o, 'Semaphore.acquireSync', own)
    this[shm.SYNC](n, timeout, 'Semaphore.acquireSync')
  },
  acquire (k, options) {
    try {
      // One permit without options, free at once: as the in-process fast
      // path.
      if (k === undefined && options === undefined && this[shm.TRY](1)) {
        return Promise.resolve(gate.makeRelease(this[shm.ONE], false))
      }
      const [p, o, own] = readPermitArgs(k, options, 'Semaphore.acquire')
      const n = readPermits(p, 'Semaphore.acquire')
      return this[shm.ASYNC](n, readAsyncOptions(o, 'Semaphore.acquire', true, own), 'Semaphore.acquire')
    } catch (err) {
      return Promise.reject(err)
    }
  },
  release (k) {
    this[shm.RELEASE](readPermits(k, 'Semaphore.release'), 'Semaphore.release')
  },
  runExclusive (callback, options) {
    const where = 'Semaphore.runExclusive'
    try {
      if (options === undefined && typeof callback === 'function' && this[shm.TRY](1)) {
        return gate.runHeld(callback, this[shm.ONE], undefined)
      }
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
    return gate.runHolding(callback, where, () => {
      const n = readPermits(options !== null && typeof options === 'object' ? options.permits : undefined, where)
      return this[shm.ASYNC](n, readAsyncOptions(options, where, true, PERMITS), where)
    })
  }
}))
for (const key of ['tryAcquire', 'acquireSync', 'acquire', 'release', 'runExclusive']) {
  Object.defineProperty(shm.ShmSemaphore.prototype, key, { enumerable: false })
}
Object.defineProperty(shm.ShmSemaphore.prototype, 'constructor', { value: Semaphore, writable: true, configurable: true })

module.exports = { Semaphore }
