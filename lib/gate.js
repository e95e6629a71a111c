'use strict'

// Plumbing shared by the primitives built on the native gates and waits:
// option parsing, the blocking and promise forms of a request, timeouts,
// AbortSignal withdrawal and release functions.

const { types } = require('util')
const { binding, selfId } = require('./native')
const { LockError, AbortError, codes } = require('./errors')
const { describe } = require('./atomics')

// Gate kinds, result codes and the waiters bit of the native core, written
// once in src/waiters.h.
const {
  GATE_LOCK, GATE_SEM, GATE_READ, GATE_WRITE,
  RESULT_OK: OK, RESULT_TIMED_OUT: TIMED_OUT, RESULT_INTERRUPTED: INTERRUPTED,
  RESULT_ACQUIRED: ACQUIRED, RESULT_OWNER_DIED: OWNER_DIED,
  EDEADLK, ENOTOWNER, EOVERFLOW,
  GATE_WAITERS: WAITERS_BIT
} = binding.constants
const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

// Marks a constructor call made by `from()`: attach, do not initialize.
const ATTACH = Symbol('attach')

function validateSlot (buffer, byteOffset, bytes, where) {
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
  if (byteOffset < 0 || byteOffset % 4 !== 0 || byteOffset + bytes > buffer.byteLength) {
    throw new RangeError(`${where}: byteOffset must be a multiple of 4 with ${bytes} bytes available in the buffer (byteLength ${buffer.byteLength}), received ${byteOffset}`)
  }
}

function readHandle (handle, where) {
  if (handle === null || typeof handle !== 'object') {
    throw new TypeError(`${where}: handle must be an object { buffer, byteOffset }, received ${describe(handle)}`)
  }
  const { buffer, byteOffset = 0 } = handle
  return { buffer, byteOffset }
}

function readCount (value, min, max, where, name) {
  if (typeof value !== 'number') {
    throw new TypeError(`${where}: ${name} must be an integer, received ${describe(value)}`)
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${where}: ${name} must be an integer from ${min} to ${max}, received ${value}`)
  }
  return value
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

function readObject (options, where) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  return options
}

// { timeout } of the blocking forms.
function readSyncOptions (options, where) {
  return readTimeout(readObject(options, where).timeout, where)
}

// { blocking = true, timeout, signal, ref = true } of the promise forms;
// `blocking` only where a non-blocking attempt makes sense.
function readAsyncOptions (options, where, allowBlocking) {
  const o = readObject(options, where)
  const { blocking = true, timeout, signal, ref = true } = o
  if (typeof blocking !== 'boolean') {
    throw new TypeError(`${where}: options.blocking must be a boolean, received ${describe(blocking)}`)
  }
  if (!allowBlocking && o.blocking !== undefined) {
    throw new TypeError(`${where}: options.blocking is not supported here`)
  }
  const t = readTimeout(timeout, where)
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`${where}: options.signal must be an AbortSignal, received ${describe(signal)}`)
  }
  if (typeof ref !== 'boolean') {
    throw new TypeError(`${where}: options.ref must be a boolean, received ${describe(ref)}`)
  }
  // As in the promise lock of "JavaScriptでロックを実装する": a timeout
  // applies to blocking requests only; a non-blocking attempt ignores it.
  return { blocking, timeout: blocking ? t : 0, signal, ref }
}

function readCallback (callback, where) {
  if (typeof callback !== 'function') {
    throw new TypeError(`${where}: callback must be a function, received ${describe(callback)}`)
  }
}

function timeoutError (timeout, where) {
  return new LockError(codes.ETIMEDOUT, `${where}: not acquired within ${timeout} ms`)
}

function busyError (where) {
  return new LockError(codes.EBUSY, `${where}: not available (non-blocking attempt)`)
}

function deadlockError (where) {
  return new LockError(codes.EDEADLK, `${where}: this thread holds or waits for it already, so a blocking wait would never return`)
}

function notOwnerError (where) {
  return new LockError(codes.ENOTOWNER, `${where}: this thread does not hold it`)
}

function abortError (signal) {
  return new AbortError('The operation was aborted', { cause: signal.reason })
}

function interrupted () {
  return new Error('threadlock: the wait was interrupted because the thread is terminating')
}

// Blocking gate request; returns whether the previous owner died.
function gateSync (i32, index, gate, amount, timeout, where) {
  const r = binding.gateAcquire(i32, index, gate, selfId, amount, timeout)
  if (r === ACQUIRED) return false
  if (r === OWNER_DIED) return true
  if (r === TIMED_OUT) throw timeoutError(timeout, where)
  if (r === EDEADLK) throw deadlockError(where)
  throw interrupted()
}

// Non-blocking gate request: undefined when it cannot be granted at once,
// otherwise whether the previous owner died.
function gateTry (i32, index, gate, amount) {
  const r = binding.gateAcquire(i32, index, gate, selfId, amount, 0)
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
      if (binding.cancel(token)) reject(abortError(signal))
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
function gateAsync (i32, index, gate, amount, o, where) {
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  const r = binding.gateAcquireAsync(i32, index, gate, selfId, amount, o.timeout, o.ref, o.signal !== undefined)
  if (typeof r === 'number') return Promise.resolve(r === OWNER_DIED)
  return settle(r, o.signal, (code) => {
    if (code === ACQUIRED) return false
    if (code === OWNER_DIED) return true
    throw timeoutError(o.timeout, where)
  })
}

// Releases through the core; throws for a caller that holds nothing.
function gateRelease (i32, index, gate, amount, where) {
  const r = binding.gateRelease(i32, index, gate, selfId, amount)
  if (r === ENOTOWNER) throw notOwnerError(where)
  if (r === EOVERFLOW) throw new RangeError(`${where}: releasing ${amount} would exceed the maximum count`)
}

// Blocking plain wait on one Int32: 'ok', 'not-equal' or 'timed-out'.
const RESULTS = ['ok', 'not-equal', 'timed-out']
function waitSync (i32, index, value, timeout) {
  const r = binding.wait(i32, index, value, timeout)
  if (r === INTERRUPTED) throw interrupted()
  return RESULTS[r]
}

// Promise plain wait, withdrawn from the list if the signal fires.
function waitAsync (i32, index, value, o) {
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  const r = binding.waitAsync(i32, index, value, o.timeout, o.ref, o.signal !== undefined)
  if (typeof r === 'number') return Promise.resolve(RESULTS[r])
  return settle(r, o.signal, (result) => result)
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

function makeRelease (fn, ownerDied) {
  let released = false
  const release = () => {
    if (released) return
    released = true
    fn()
  }
  release[dispose] = release
  release.ownerDied = ownerDied
  return release
}

module.exports = {
  GATE_LOCK,
  GATE_SEM,
  GATE_READ,
  GATE_WRITE,
  OK,
  WAITERS_BIT,
  ATTACH,
  selfId,
  binding,
  validateSlot,
  readHandle,
  readCount,
  readTimeout,
  readSyncOptions,
  readAsyncOptions,
  readCallback,
  timeoutError,
  busyError,
  deadlockError,
  notOwnerError,
  abortError,
  gateSync,
  gateTry,
  gateAsync,
  gateRelease,
  waitSync,
  waitAsync,
  deadlineOf,
  remaining,
  makeRelease
}
