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
//
// On memory shared by processes (openSharedMemory) the same code works
// across processes: the sequence number's waits and wakes go through the
// file's waiter list there, and the lock may be an AsyncLock on such
// memory (lib/ShmLock.js), whose holds it keeps the same way. The bump and
// its wake are one native call (gate.casNotify), and on such memory a
// death in the file wakes the waits too (a notifier killed between the
// two: gate.watchedWaitSync), as a spurious wake-up.

const { SharedSlot } = require('./SharedSlot')
const { AsyncLock, hasQueued, holdOf, resumeHold } = require('./AsyncLock')
const { ShmLock, HELD, QUEUED, HOLD, RESUME } = require('./ShmLock')
const gate = require('./gate')
const native = require('./native')
const { describe, readSyncOptions, readAsyncOptions } = require('./validate')
const { notOwnerError, abortError, deadlockError } = require('./errors')

const { load } = Atomics

function readHeldLock (lock, where) {
  if (!(lock instanceof AsyncLock)) {
    throw new TypeError(`${where}: lock must be an AsyncLock, received ${describe(lock)}`)
  }
  // An AsyncLock on memory shared by processes (lib/ShmLock.js): its owner
  // is this thread's id in the file.
  if (lock instanceof ShmLock) {
    if (!lock[HELD]()) throw notOwnerError(where)
    return
  }
  if (lock.owner !== native.selfId - 1) throw notOwnerError(where)
}

// The caller's hold on `lock`, and its restoring after the wait took the
// lock back (gate.makeRelease: a release function ends its own hold).
function holdOfLock (lock) {
  return lock instanceof ShmLock ? lock[HOLD]() : holdOf(lock)
}

function resumeLock (lock, hold) {
  if (lock instanceof ShmLock) lock[RESUME](hold)
  else resumeHold(lock, hold)
}

class ConditionVariable extends SharedSlot {
  #i32
  #shm

  /**
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (buffer = undefined, byteOffset = undefined, options = undefined) {
    super({ type: 'ConditionVariable', words: 1, shm: true }, [buffer, byteOffset, options])
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#shm = native.shmSupported && native.shmContains(this.#i32)
  }

  /** Threads (and async waits) waiting now. */
  get waiting () { return native.waiterCount(this.#i32, 0) }

  /**
   * Releases `lock` (held by this thread), blocks until notified or timed
   * out, and takes `lock` again before returning 'ok' or 'timed-out'.
   */
  waitSync (lock, options) {
    readHeldLock(lock, 'ConditionVariable.waitSync')
    const timeout = readSyncOptions(options, 'ConditionVariable.waitSync')
    // A request of this thread queued for the lock (in the object, or in
    // the core through another object on the word) would be given the lock
    // that the wait releases, and the blocking lock() after the wait could
    // never take it back: refuse before anything changes.
    if (lock instanceof ShmLock ? lock[QUEUED]() : hasQueued(lock) || native.gateQueued(new Int32Array(lock.buffer, lock.byteOffset, 1), 0, native.selfId)) {
      throw deadlockError('ConditionVariable.waitSync', 'this thread has a request of its own queued for the lock, which would get the lock this wait releases, so the wait could never take it back')
    }
    let pokes = gate.pokesOf(this.#i32, this.#shm)
    const seq = load(this.#i32, 0)
    const hold = holdOfLock(lock)
    lock.unlock()
    let result
    try {
      const deadline = gate.deadlineOf(timeout)
      for (;;) {
        result = gate.watchedWaitSync(this.#i32, 0, seq, gate.remaining(deadline), 'ConditionVariable.waitSync', this.#shm, pokes)
        // A poke (a death or an arrival in the file) wakes it: it returns
        // if the number moved (a notifier killed before its wake), else
        // waits on.
        if (result !== 'poked') break
        pokes = gate.pokesOf(this.#i32, this.#shm)
        if (load(this.#i32, 0) !== seq) break
      }
    } finally {
      lock.lock()
      resumeLock(lock, hold) // still the caller's hold: its release function ends it
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
    readHeldLock(lock, 'ConditionVariable.wait')
    const o = readAsyncOptions(options, 'ConditionVariable.wait', false)
    if (o.signal !== undefined && o.signal.aborted) throw abortError(o.signal)
    let pokes = gate.pokesOf(this.#i32, this.#shm)
    const seq = load(this.#i32, 0)
    const hold = holdOfLock(lock)
    lock.unlock()
    let result
    try {
      const deadline = gate.deadlineOf(o.timeout)
      for (;;) {
        result = await gate.watchedWaitAsync(this.#i32, 0, seq, { ...o, timeout: gate.remaining(deadline) }, this.#shm, pokes)
        if (result !== 'poked') break
        pokes = gate.pokesOf(this.#i32, this.#shm)
        if (load(this.#i32, 0) !== seq) break
      }
    } finally {
      await lock.acquire({ ref: o.ref })
      resumeLock(lock, hold) // still the caller's hold: its release function ends it
    }
    return result === 'timed-out' ? 'timed-out' : 'ok'
  }

  /** Wakes the oldest waiter; returns how many were woken (0 or 1). */
  notifyOne () { return this.#notify(1) }

  /** Wakes every waiter; returns how many were woken. */
  notifyAll () { return this.#notify(Infinity) }

  // The bump and the wake in one native call (a worker terminated between
  // them would leave the waiters asleep).
  #notify (count) {
    for (;;) {
      const v = load(this.#i32, 0)
      const woken = gate.casNotify(this.#i32, 0, v, (v + 1) | 0, count)
      if (woken >= 0) return woken
    }
  }
}

module.exports = { ConditionVariable }
