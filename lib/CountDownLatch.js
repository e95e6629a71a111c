'use strict'

// CountDownLatch(n): waiters are released once countDown() brought the
// count to 0. The count lives in one Int32; it never goes below 0, and the
// call that reaches 0 wakes every waiter.

const g = require('./gate')
const { SharedSlot } = require('./SharedSlot')

const MAX = 0x7fffffff
const { compareExchange, load } = Atomics

class CountDownLatch extends SharedSlot {
  #i32

  /**
   * @param {number} count
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0]
   */
  constructor (count, buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    const attach = count === g.ATTACH
    if (!attach) g.readCount(count, 0, MAX, 'CountDownLatch', 'count')
    super(buffer, byteOffset, 1, 'CountDownLatch')
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
    if (!attach) Atomics.store(this.#i32, 0, count)
  }

  static from (handle) {
    const { buffer, byteOffset } = SharedSlot.open(handle, 1, 'CountDownLatch.from')
    return new CountDownLatch(g.ATTACH, buffer, byteOffset)
  }

  get count () { return load(this.#i32, 0) }

  /** Lowers the count by `k` (1), not below 0; returns the new count. */
  countDown (k) {
    const n = k === undefined ? 1 : g.readCount(k, 1, MAX, 'countDown', 'k')
    let v = load(this.#i32, 0)
    while (v > 0) {
      const next = v > n ? v - n : 0
      const seen = compareExchange(this.#i32, 0, v, next)
      if (seen === v) {
        if (next === 0) g.binding.notify(this.#i32, 0, Infinity)
        return next
      }
      v = seen
    }
    return 0
  }

  /** Blocks until the count is 0. */
  waitSync (options) {
    const timeout = g.readSyncOptions(options, 'waitSync')
    const deadline = g.deadlineOf(timeout)
    for (;;) {
      const v = load(this.#i32, 0)
      if (v === 0) return
      if (g.waitSync(this.#i32, 0, v, g.remaining(deadline)) === 'timed-out') {
        throw g.timeoutError(timeout, 'CountDownLatch.waitSync')
      }
    }
  }

  /** Resolves once the count is 0. */
  async wait (options) {
    const o = g.readAsyncOptions(options, 'wait', false)
    if (o.signal !== undefined && o.signal.aborted) throw g.abortError(o.signal)
    const deadline = g.deadlineOf(o.timeout)
    for (;;) {
      const v = load(this.#i32, 0)
      if (v === 0) return
      const r = await g.waitAsync(this.#i32, 0, v, { ...o, timeout: g.remaining(deadline) })
      if (r === 'timed-out') {
        throw g.timeoutError(o.timeout, 'CountDownLatch.wait')
      }
    }
  }
}

module.exports = { CountDownLatch }
