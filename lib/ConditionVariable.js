'use strict'

// ConditionVariable: waits for a change announced under an AsyncLock.
//
// The variable is a sequence number in one Int32. A waiter reads it while
// still holding the lock, releases the lock and waits for the number to
// change; a notifier bumps it before waking. A notify that lands between the
// release and the wait changes the number, so the wait returns at once: no
// wakeup is lost. As with every condition variable, a waiter may also wake
// without a matching notify (two waiters can pass on one notifyOne when one
// of them had not yet gone to sleep), so always wait in a loop that checks
// the condition.

const g = require('./gate')
const { SharedSlot } = require('./SharedSlot')
const { AsyncLock } = require('./AsyncLock')
const { describe } = require('./atomics')

const { add, load } = Atomics

function readLock (lock, where) {
  if (!(lock instanceof AsyncLock)) {
    throw new TypeError(`${where}: lock must be an AsyncLock, received ${describe(lock)}`)
  }
  if (lock.owner !== g.selfId - 1) throw g.notOwnerError(where)
}

class ConditionVariable extends SharedSlot {
  #i32

  /**
   * @param {SharedArrayBuffer} [buffer] a new 4-byte buffer by default
   * @param {number} [byteOffset=0]
   */
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    super(buffer, byteOffset, 1, 'ConditionVariable')
    this.#i32 = new Int32Array(buffer, byteOffset, 1)
  }

  static from (handle) {
    const { buffer, byteOffset } = SharedSlot.open(handle, 1, 'ConditionVariable.from')
    return new ConditionVariable(buffer, byteOffset)
  }

  /** Threads (and async waits) waiting now. */
  get waiting () { return g.binding.waiterCount(this.#i32, 0) }

  /**
   * Releases `lock` (held by this thread), blocks until notified or timed
   * out, and takes `lock` again before returning 'ok' or 'timed-out'.
   */
  waitSync (lock, options) {
    readLock(lock, 'waitSync')
    const timeout = g.readSyncOptions(options, 'waitSync')
    const seq = load(this.#i32, 0)
    lock.unlock()
    let result
    try {
      result = g.waitSync(this.#i32, 0, seq, timeout)
    } finally {
      lock.lock()
    }
    return result === 'timed-out' ? 'timed-out' : 'ok'
  }

  /**
   * The promise form of waitSync: resolves with 'ok' or 'timed-out' once
   * `lock` is held by this thread again. An abort through `options.signal`
   * withdraws the wait, takes the lock again, then rejects with an
   * AbortError.
   */
  async wait (lock, options) {
    readLock(lock, 'wait')
    const o = g.readAsyncOptions(options, 'wait', false)
    if (o.signal !== undefined && o.signal.aborted) throw g.abortError(o.signal)
    const seq = load(this.#i32, 0)
    lock.unlock()
    let result
    try {
      result = await g.waitAsync(this.#i32, 0, seq, o)
    } finally {
      await lock.acquire({ ref: o.ref })
    }
    return result === 'timed-out' ? 'timed-out' : 'ok'
  }

  /** Wakes the oldest waiter; returns how many were woken (0 or 1). */
  notifyOne () {
    add(this.#i32, 0, 1)
    return g.binding.notify(this.#i32, 0, 1)
  }

  /** Wakes every waiter; returns how many were woken. */
  notifyAll () {
    add(this.#i32, 0, 1)
    return g.binding.notify(this.#i32, 0, Infinity)
  }
}

module.exports = { ConditionVariable }
