'use strict'

// Errors of threadlock's primitives, and the one place that words them.
// Every LockError carries a stable `code`; every message starts with the
// public `Class.method` that failed (`where`).

const codes = Object.freeze({
  ETIMEDOUT: 'ETIMEDOUT', // the timeout ran out before the lock was granted
  ENOTOWNER: 'ENOTOWNER', // release by a thread that does not hold the lock
  EDEADLK: 'EDEADLK', // a blocking acquire that could never succeed
  EBUSY: 'EBUSY' // a non-blocking attempt found the lock held
})

class LockError extends Error {
  constructor (code, message) {
    super(message)
    this.name = 'LockError'
    this.code = code
  }
}

LockError.codes = codes

// The error Node's own APIs reject with when an AbortSignal fires: name
// 'AbortError', code 'ABORT_ERR', and the signal's reason as `cause`.
class AbortError extends Error {
  constructor (message = 'The operation was aborted', options = undefined) {
    super(message, options)
    this.name = 'AbortError'
    this.code = 'ABORT_ERR'
  }
}

// A class of errors told apart by a stable `code`, for what is not a
// lock's wait: threadlock/host's HostError and threadlock/postgres's
// SessionError. `new Class(code, message, { cause })`; `Class.codes` is the
// frozen table of its codes.
function codedErrorClass (name, codes) {
  const CodedError = class extends Error {
    constructor (code, message, options = undefined) {
      super(message, options)
      this.name = name
      this.code = code
    }
  }
  Object.defineProperty(CodedError, 'name', { value: name })
  CodedError.codes = codes
  return CodedError
}

function timeoutError (timeout, where) {
  return new LockError(codes.ETIMEDOUT, `${where}: not acquired within ${timeout} ms`)
}

function busyError (where) {
  return new LockError(codes.EBUSY, `${where}: not available (non-blocking attempt)`)
}

function deadlockError (where, message = 'this thread holds or waits for it already, so a blocking wait would never return') {
  return new LockError(codes.EDEADLK, `${where}: ${message}`)
}

function notOwnerError (where, message = 'this thread does not hold it') {
  return new LockError(codes.ENOTOWNER, `${where}: ${message}`)
}

function abortError (signal) {
  return new AbortError('The operation was aborted', { cause: signal.reason })
}

// What a blocking wait throws when it ends because its thread is being
// terminated. The thread's script stops right after, so hardly any code
// sees it; it exists so that the wait never pretends to have succeeded.
function interrupted (where) {
  return new Error(`${where}: the wait was interrupted because the thread is terminating`)
}

// Called by a blocking wait that its termination probe ended: the worker is
// being terminated (Node marks it stopping, then asks V8 to terminate it).
// V8 stops the thread only at its next interrupt check (a call, a loop's
// back edge), so a plain return would run the caller's next statements
// until then. A loop's back edge always checks: the thread ends inside this
// loop and no code of the caller runs. The bound and the throw are only
// for a stop that never asks V8 to terminate (an embedder's), so that it
// fails instead of hanging. (The tests, which stub a native answer with no
// termination coming, shorten the bound through `termination.graceMs`.)
const termination = { graceMs: 1000 }
function stopTerminated (where) {
  const end = Date.now() + termination.graceMs
  while (Date.now() < end);
  throw interrupted(where)
}

module.exports = {
  LockError,
  AbortError,
  codes,
  codedErrorClass,
  timeoutError,
  busyError,
  deadlockError,
  notOwnerError,
  abortError,
  interrupted,
  stopTerminated,
  termination
}
