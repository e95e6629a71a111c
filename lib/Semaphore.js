'use strict'

// Semaphore: a count of permits in one Int32 of a SharedArrayBuffer, shared
// by every thread that opens it. Requests are granted in FIFO order: once a
// request waits, later ones queue behind it even if they would fit, so a
// large request is never starved by small ones.
//
// Word layout (src/waiters.h): the available permits in the low 30 bits and
// bit 30 set while requests are queued. Without queued requests, acquire and
// release are one compare-exchange in JavaScript.

const g = require('./gate')
const { SharedSlot } = require('./SharedSlot')

const { SEM_MASK: MASK } = require('./native').binding.constants
const { compareExchange, load, store } = Atomics

function readPermits (k, where) {
  if (k === undefined) return 1
  return g.readCount(k, 1, MASK, where, 'permits')
}

class Semaphore extends SharedSlot {
  #i32

  /**
   * @param {number} [permits=1] initial permits
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0]
   */
  constructor (permits = 1, buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    const attach = permits === g.ATTACH
    if (!attach) g.readCount(permits, 0, MASK, 'Semaphore', 'permits')
    super(buffer, byteOffset, 1, 'Semaphore')
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
    if (!attach) store(this.#i32, 0, permits)
  }

  /** Opens a semaphore created elsewhere from its `handle`. */
  static from (handle) {
    const { buffer, byteOffset } = SharedSlot.open(handle, 1, 'Semaphore.from')
    return new Semaphore(g.ATTACH, buffer, byteOffset)
  }

  /** Permits available now. */
  get value () { return load(this.#i32, 0) & MASK }

  /** Requests waiting, in all threads. */
  get waiting () { return g.binding.waiterCount(this.#i32, 0) }

  #fast (k) {
    let v = load(this.#i32, 0)
    while (!(v & g.WAITERS_BIT) && (v & MASK) >= k) {
      const seen = compareExchange(this.#i32, 0, v, v - k)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  /** Takes `k` permits if they are available without waiting. */
  tryAcquire (k) {
    return this.#fast(readPermits(k, 'tryAcquire'))
  }

  /** Blocks this thread until `k` permits are taken. */
  acquireSync (k, options) {
    const n = readPermits(k, 'acquireSync')
    const timeout = g.readSyncOptions(options, 'acquireSync')
    if (this.#fast(n)) return
    g.gateSync(this.#i32, 0, g.GATE_SEM, n, timeout, 'Semaphore.acquireSync')
  }

  /** Resolves with a release function once `k` permits are taken. */
  acquire (k, options) {
    let n, o
    try {
      n = readPermits(k, 'acquire')
      o = g.readAsyncOptions(options, 'acquire', true)
    } catch (err) {
      return Promise.reject(err)
    }
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(g.abortError(o.signal))
    const release = () => this.release(n)
    if (this.#fast(n)) return Promise.resolve(g.makeRelease(release, false))
    if (!o.blocking) return Promise.reject(g.busyError('Semaphore.acquire'))
    if (o.timeout === 0) return Promise.reject(g.timeoutError(0, 'Semaphore.acquire'))
    return g.gateAsync(this.#i32, 0, g.GATE_SEM, n, o, 'Semaphore.acquire')
      .then(() => g.makeRelease(release, false))
  }

  /** Returns `k` permits and grants waiting requests in order. */
  release (k) {
    const n = readPermits(k, 'release')
    let v = load(this.#i32, 0)
    while (!(v & g.WAITERS_BIT)) {
      if ((v & MASK) + n > MASK) throw new RangeError(`release: ${n} more permits would exceed ${MASK}`)
      const seen = compareExchange(this.#i32, 0, v, v + n)
      if (seen === v) return
      v = seen
    }
    g.gateRelease(this.#i32, 0, g.GATE_SEM, n, 'Semaphore.release')
  }

  /** Runs `callback` holding `options.permits` (1) permits. */
  async runExclusive (callback, options) {
    g.readCallback(callback, 'runExclusive')
    // A bad `options` must be reported as such by acquire(), not as bad
    // permits read from it.
    const permits = options !== null && typeof options === 'object' ? options.permits : undefined
    const release = await this.acquire(permits, options)
    try {
      return await callback()
    } finally {
      release()
    }
  }
}

module.exports = { Semaphore }
