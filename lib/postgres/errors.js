'use strict'

// Errors of threadlock/postgres. A SessionError carries a stable `code` and,
// as `cause`, the error of node-postgres or of the server behind it.

const codes = Object.freeze({
  // No session could be opened or prepared for the request (the server is
  // unreachable, refused the login, or the name table could not be read).
  ECONNECT: 'ECONNECT',
  // The session ended while the request waited for the lock: nothing is held.
  EWAITLOST: 'EWAITLOST',
  // The session ended while the lock was held: another client may hold it
  // now. The lock's signal aborts with this error, and the request rejects
  // with it once the callback has settled.
  ELOCKLOST: 'ELOCKLOST',
  // The manager was closed.
  ECLOSED: 'ECLOSED'
})

class SessionError extends Error {
  constructor (code, message, options = undefined) {
    super(message, options)
    this.name = 'SessionError'
    this.code = code
  }
}

SessionError.codes = codes

function notSupported (message) {
  return new DOMException(message, 'NotSupportedError')
}

module.exports = { SessionError, codes, notSupported }
