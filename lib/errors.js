'use strict'

// Errors of threadlock's primitives. Every LockError carries a stable `code`.

const codes = Object.freeze({
  ETIMEDOUT: 'ETIMEDOUT', // the timeout ran out before the lock was granted
  ENOTOWNER: 'ENOTOWNER', // release by a thread that does not hold the lock
  EDEADLK: 'EDEADLK', // a blocking acquire that could never succeed
  EBUSY: 'EBUSY', // a non-blocking attempt found the lock held
  EOWNERDEAD: 'EOWNERDEAD' // reserved: the previous owner died holding it
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

module.exports = { LockError, AbortError, codes }
