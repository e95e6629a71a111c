'use strict'

// The requests that the primitives make of the native core, in one place:
// a gate (lock, semaphore, rwlock word) asked for at once, blocking or by
// promise; a plain wait on one Int32; the skeleton that every lock's promise
// form follows; and the helper that runs a callback while holding a lock.

const { performance } = require('perf_hooks')
const native = require('./native')
const { selfId } = native
const { timeoutError, busyError, deadlockError, notOwnerError, abortError, stopTerminated } = require('./errors')
const { readCallback } = require('./validate')
const shmWait = require('./shmWait')

const {
  RESULT_OK, RESULT_NOT_EQUAL, RESULT_TIMED_OUT, RESULT_INTERRUPTED: INTERRUPTED,
  RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED,
  EDEADLK, ENOTOWNER, EOVERFLOW
} = native.constants
const SHM_ROUTE = native.shmConstants === undefined ? -1 : native.shmConstants.ROUTE
const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

// What a plain wait returns, by native result code.
const RESULTS = { [RESULT_OK]: 'ok', [RESULT_NOT_EQUAL]: 'not-equal', [RESULT_TIMED_OUT]: 'timed-out' }

// Blocking gate request; returns whether the previous owner died.
function gateSync (i32, index, gate, amount, timeout, where) {
  const r = native.gateAcquire(i32, index, gate, selfId, amount, timeout)
  if (r === ACQUIRED) return false
  if (r === OWNER_DIED) return true
  if (r === RESULT_TIMED_OUT) throw timeoutError(timeout, where)
  if (r === EDEADLK) throw deadlockError(where)
  if (r === INTERRUPTED) stopTerminated(where)
  throw new Error(`${where}: unexpected result ${r} of the core`)
}

// Non-blocking gate request: undefined when it cannot be granted at once,
// otherwise whether the previous owner died.
function gateTry (i32, index, gate, amount) {
  const r = native.gateAcquire(i32, index, gate, selfId, amount, 0)
  if (r === ACQUIRED) return false
  if (r === OWNER_DIED) return true
  return undefined
}

// Waits for a pending native request: `r` is its promise, or [promise,
// token] when a signal may withdraw it. A request granted before the abort
// cannot be withdrawn and resolves, as Node's APIs ignore a late abort.
function settle (r, signal, onCode) {
  if (signal === undefined) return r.then(onCode)
  const [promise, token] = r
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      if (native.cancel(token)) reject(abortError(signal))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then((code) => {
      signal.removeEventListener('abort', onAbort)
      if (code === INTERRUPTED) return
      try {
        resolve(onCode(code))
      } catch (err) {
        reject(err)
      }
    })
  })
}

// Promise gate request; resolves with whether the previous owner died.
// `waited`: milliseconds it has waited in its thread's queue already (it
// takes its place in the core's queue by its first arrival); `shown`: the
// timeout its error names (the request's own, where `o.timeout` is what
// was left of it).
function gateAsync (i32, index, gate, amount, o, where, waited = 0, shown = o.timeout) {
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  const r = native.gateAcquireAsync(i32, index, gate, selfId, amount, o.timeout, o.ref, o.signal !== undefined, waited)
  if (typeof r === 'number') return Promise.resolve(r === OWNER_DIED)
  return settle(r, o.signal, (code) => {
    if (code === ACQUIRED) return false
    if (code === OWNER_DIED) return true
    throw timeoutError(shown, where)
  })
}

// Releases through the core; throws for a caller that holds nothing.
// Returns the core's answer: 0, or RESULT_ACQUIRED when a LOCK_KEEP
// release kept the lock.
function gateRelease (i32, index, gate, amount, where) {
  const r = native.gateRelease(i32, index, gate, selfId, amount)
  if (r === ENOTOWNER) throw notOwnerError(where)
  if (r === EOVERFLOW) throw new RangeError(`${where}: releasing ${amount} would exceed the maximum count`)
  return r
}

// Blocking plain wait on one Int32: 'ok', 'not-equal' or 'timed-out'.
function waitSync (i32, index, value, timeout, where) {
  const r = native.wait(i32, index, value, timeout)
  if (r === INTERRUPTED) stopTerminated(where)
  return RESULTS[r]
}

// Promise plain wait, withdrawn from the list if the signal fires.
function waitAsync (i32, index, value, o) {
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  const r = native.waitAsync(i32, index, value, o.timeout, o.ref, o.signal !== undefined)
  if (r === SHM_ROUTE) return shmWaitAsync(i32, index, value, o)
  if (typeof r === 'number') return Promise.resolve(RESULTS[r])
  return settle(r, o.signal, (result) => result)
}

// The same on memory shared by processes (openSharedMemory): a promise
// waiter in the file's list (lib/shmWait.js), which the primitives built on
// plain waits (Barrier, CountDownLatch) use there unchanged.
function shmWaitAsync (i32, index, value, o) {
  if (o.timeout === 0) return Promise.resolve(Atomics.load(i32, index) === value ? 'timed-out' : 'not-equal')
  const r = shmWait.waitAsync(i32, index, value, o)
  return typeof r === 'number' ? Promise.resolve(RESULTS[r]) : r
}

// Waits of the primitives built on plain waits (Barrier, CountDownLatch,
// ConditionVariable) that re-check their state after every wake. On memory
// shared by processes the process that should wake them (the last party,
// the last count-down, a notifier) may be killed between its change of the
// word and its notify: these waits are lock waiters of the file there
// (poked when any process of the file dies, which this process watches),
// so a death makes them look again. `pokes` is the file's poke counter
// read before the caller looked at the word (pokesOf); a poke returns
// 'poked' (a death, or a process that opened the file), after which the
// caller looks at its word again. Other memory: the plain waits.
function pokesOf (i32, shm) {
  return shm ? native.shmPokes(i32) : 0
}

function watchedWaitSync (i32, index, value, timeout, where, shm, pokes) {
  if (!shm) return waitSync(i32, index, value, timeout, where)
  native.shmWatch(i32)
  const r = native.shmWaitLock(i32, index, value, timeout, pokes, 0)
  if (r === INTERRUPTED) stopTerminated(where)
  return RESULTS[r] || 'poked'
}

function watchedWaitAsync (i32, index, value, o, shm, pokes) {
  if (!shm) return waitAsync(i32, index, value, o)
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  if (o.timeout === 0) return Promise.resolve(Atomics.load(i32, index) === value ? 'timed-out' : 'not-equal')
  native.shmWatch(i32)
  const r = shmWait.waitAsync(i32, index, value, { ...o, pokes })
  return typeof r === 'number' ? Promise.resolve(RESULTS[r] || 'poked') : r
}

// Changes element `index` of `i32` from `expected` to `replacement` and, if
// it did, wakes `count` waiters of it, in one native call (a worker
// terminated between the two would leave the waiters asleep). Returns how
// many were woken, or -1 when the element was not `expected`.
function casNotify (i32, index, expected, replacement, count) {
  return native.casNotify(i32, index, expected, replacement, count)
}

// A deadline for loops that may wait several times within one timeout.
function deadlineOf (timeout) {
  return timeout === Infinity ? Infinity : performance.now() + timeout
}

function remaining (deadline) {
  if (deadline === Infinity) return Infinity
  const left = deadline - performance.now()
  return left > 0 ? left : 0
}

/**
 * The release function a promise form resolves with: idempotent,
 * disposable. A lock whose holds have an identity gives `fn.hold()`, which
 * names the hold granted now; `fn` is then called with it and releases that
 * hold or nothing, so that a release function whose hold ended another way
 * never releases a later one.
 */
function makeRelease (fn, ownerDied) {
  let released = false
  const hold = fn.hold === undefined ? undefined : fn.hold()
  const release = () => {
    if (released) return
    released = true
    fn(hold)
  }
  release[dispose] = release
  release.ownerDied = ownerDied
  return release
}

/**
 * One kind of request on one gate word (the lock, a read or write lock,
 * permits), as the acquire skeleton sees it. `take(amount)` is the word's
 * own compare-exchange path: undefined when it cannot grant, otherwise
 * whether the previous owner died. The core's non-blocking attempt and
 * queued request are `attempt` and `queue`; a primitive with requests of
 * its own (AsyncLock) gives its own.
 */
class Gate {
  constructor (i32, kind, take) {
    this.i32 = i32
    this.kind = kind
    this.take = take
  }

  attempt (amount) {
    return gateTry(this.i32, 0, this.kind, amount)
  }

  /** A request that waits in the core; resolves with the release function. */
  queue (amount, o, where, release) {
    return gateAsync(this.i32, 0, this.kind, amount, o, where)
      .then((ownerDied) => makeRelease(release, ownerDied))
  }
}

/** The try form: granted at once, by the word or by the core. */
function tryAcquire (gate, amount) {
  return gate.take(amount) !== undefined || gate.attempt(amount) !== undefined
}

/** The blocking form; returns whether the previous owner died. */
function acquireSync (gate, amount, timeout, where) {
  const ownerDied = gate.take(amount)
  if (ownerDied !== undefined) return ownerDied
  return gateSync(gate.i32, 0, gate.kind, amount, timeout, where)
}

/**
 * The promise form, once its options `o` are read: an aborted signal
 * rejects at once; then the word's fast path; a non-blocking request or a
 * zero timeout makes one attempt through the core and fails with EBUSY or
 * ETIMEDOUT; any other request queues. Resolves with a release function
 * that calls `release`.
 */
function acquire (gate, amount, o, where, release) {
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  let ownerDied = gate.take(amount)
  if (ownerDied === undefined) {
    if (o.blocking && o.timeout !== 0) return gate.queue(amount, o, where, release)
    ownerDied = gate.attempt(amount)
    if (ownerDied === undefined) return Promise.reject(o.blocking ? timeoutError(0, where) : busyError(where))
  }
  return Promise.resolve(makeRelease(release, ownerDied))
}

/**
 * Calls `fn`, which returns a promise, and turns what it throws (bad
 * options, a wrong receiver) into a rejection: a promise-returning method
 * reports every failure through its promise.
 */
function rejecting (fn) {
  try {
    return fn()
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * Runs `callback` while holding what `take()` resolves with (a release
 * function) and settles with the callback's result; the release happens
 * however the callback ends. Every failure, a bad callback included,
 * rejects the returned promise.
 */
async function runHolding (callback, where, take) {
  readCallback(callback, where)
  const release = await take()
  try {
    return await callback()
  } finally {
    release()
  }
}

/**
 * Runs `callback` holding a lock that this thread took at once (one
 * compare-exchange, no release function or acquire promise in between),
 * and calls `release(hold)` however the callback ends. Not an async
 * function: a callback that returns a plain value (the common case) costs
 * one resolved promise, without an async function's frame and without a
 * closure for the release (`hold` is passed through).
 */
function runHeld (callback, release, hold) {
  let result
  try {
    result = callback()
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      return runHeldAwait(result, release, hold)
    }
  } catch (err) {
    release(hold)
    return Promise.reject(err)
  }
  release(hold)
  return Promise.resolve(result)
}

// runHeld's callback returned a thenable: release once it settles.
async function runHeldAwait (result, release, hold) {
  try {
    return await result
  } finally {
    release(hold)
  }
}

module.exports = {
  RESULTS,
  pokesOf,
  watchedWaitSync,
  watchedWaitAsync,
  casNotify,
  gateSync,
  gateTry,
  gateAsync,
  gateRelease,
  waitSync,
  waitAsync,
  deadlineOf,
  remaining,
  makeRelease,
  Gate,
  tryAcquire,
  acquireSync,
  acquire,
  rejecting,
  runHolding,
  runHeld
}
