'use strict'

// Errors of threadlock/postgres. A SessionError carries a stable `code` and,
// as `cause`, the error of node-postgres or of the server behind it.

const { codedErrorClass } = require('../errors')

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
  ECLOSED: 'ECLOSED',
  // The name table cannot serve the request: another table serves its
  // namespace, it serves another namespace, or it was dropped or created
  // again while in use. Nothing is held.
  ETABLE: 'ETABLE'
})

const SessionError = codedErrorClass('SessionError', codes)

// Whether `err` says the session is gone: the server ended it (57P01-57P03,
// shutdown or restart), the connection failed (class 08), or the socket
// closed under node-postgres.
function endsSession (err) {
  if (err === null || typeof err !== 'object') return false
  const code = typeof err.code === 'string' ? err.code : ''
  return code.startsWith('57P') || code.startsWith('08') ||
    ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED'].includes(code) ||
    /Connection terminated/.test(String(err.message))
}

module.exports = { SessionError, codes, endsSession }
