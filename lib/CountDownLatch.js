'use strict'

// CountDownLatch(n): waiters are released once countDown() brought the
// count to 0. The count lives in one Int32; it never goes below 0, and the
// call that reaches 0 wakes every waiter. On memory shared by processes
// (openSharedMemory) the same code works across processes: its waits and
// wakes go through the file's waiter list there.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readCount, readSyncOptions, readAsyncOptions } = require('./validate')
const { timeoutError, abortError } = require('./errors')

const MAX = 0x7fffffff
const { compareExchange, load, store } = Atomics

class CountDownLatch extends SharedSlot {
  #i32
  #shm

  /**
   * @param {number} count
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (count, buffer = undefined, byteOffset = undefined, options = undefined) {
    super({ type: 'CountDownLatch', words: 1, shm: true }, [buffer, byteOffset, options], (i32, handle) => {
      if (handle === undefined) store(i32, 0, readCount(count, 0, MAX, 'CountDownLatch', 'count'))
    })
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    // Memory shared by processes: the waits are woken by any death in the
    // file too (the last count-down's process killed before its wake).
    this.#shm = native.shmSupported && native.shmContains(this.#i32)
  }

  get count () { return load(this.#i32, 0) }

  /** Lowers the count by `k` (1), not below 0; returns the new count. */
  countDown (k) {
    const n = k === undefined ? 1 : readCount(k, 1, MAX, 'CountDownLatch.countDown', 'k')
    let v = load(this.#i32, 0)
    while (v > 0) {
      const next = v > n ? v - n : 0
      // The count's end and its wake are one native call (a worker
      // terminated between them would leave the waiters asleep).
      if (next === 0) {
        if (gate.casNotify(this.#i32, 0, v, 0, Infinity) >= 0) return 0
        v = load(this.#i32, 0)
        continue
      }
      const seen = compareExchange(this.#i32, 0, v, next)
      if (seen === v) return next
      v = seen
    }
    return 0
  }

  /** Blocks until the count is 0. */
  waitSync (options) {
    const timeout = readSyncOptions(options, 'CountDownLatch.waitSync')
    const deadline = gate.deadlineOf(timeout)
    for (;;) {
      const pokes = gate.pokesOf(this.#i32, this.#shm)
      const v = load(this.#i32, 0)
      if (v === 0) return
      if (gate.watchedWaitSync(this.#i32, 0, v, gate.remaining(deadline), 'CountDownLatch.waitSync', this.#shm, pokes) === 'timed-out') {
        throw timeoutError(timeout, 'CountDownLatch.waitSync')
      }
    }
  }

  /** Resolves once the count is 0. */
  async wait (options) {
    const o = readAsyncOptions(options, 'CountDownLatch.wait', false)
    if (o.signal !== undefined && o.signal.aborted) throw abortError(o.signal)
    const deadline = gate.deadlineOf(o.timeout)
    for (;;) {
      const pokes = gate.pokesOf(this.#i32, this.#shm)
      const v = load(this.#i32, 0)
      if (v === 0) return
      const r = await gate.watchedWaitAsync(this.#i32, 0, v, { ...o, timeout: gate.remaining(deadline) }, this.#shm, pokes)
      if (r === 'timed-out') {
        throw timeoutError(o.timeout, 'CountDownLatch.wait')
      }
    }
  }
}

module.exports = { CountDownLatch }
