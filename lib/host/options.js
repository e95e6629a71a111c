'use strict'

// Argument checks of createLockManager(), request() and requestSync(). The
// request checks are those of threadlock.locks (lib/requestOptions.js), so
// that code moving between threads, processes and machines sees the same
// errors; the table's bound on name length is this scope's own. Loads no
// addon.

const path = require('path')
const { parseRequest: parseLocksRequest, notSupported } = require('../requestOptions')
const { describe } = require('../validate')

// The longest name the table stores inline (src/host/host.h,
// TL_HOST_NAME_MAX), in bytes of UTF-8.
const NAME_MAX = 255

function checkName (name, where) {
  const bytes = Buffer.byteLength(name, 'utf8')
  if (bytes > NAME_MAX) {
    throw new RangeError(`${where}: lock names of threadlock/host are limited to ${NAME_MAX} bytes of UTF-8, received ${bytes} bytes`)
  }
}

/** Checks request(name, [options], callback) as threadlock.locks does. */
function parseRequest (name, options, callback) {
  const r = parseLocksRequest(name, options, callback)
  checkName(r.name, 'LockManager.request')
  return r
}

function noop () {}

// The errors of the shared checks, worded for requestSync. Errors thrown by
// the caller's own code (a name's toString) pass unchanged.
function reword (err) {
  const prefix = 'LockManager.request:'
  if (!(err instanceof Error || err instanceof DOMException) || !String(err.message).startsWith(prefix)) return err
  const message = 'LockManager.requestSync:' + err.message.slice(prefix.length)
  if (err instanceof DOMException) return new DOMException(message, err.name)
  return new err.constructor(message)
}

/** Checks requestSync(name, [options]): the same members, plus timeout. */
function parseSyncRequest (name, options) {
  let r
  try {
    r = parseLocksRequest(name, options, noop)
  } catch (err) {
    throw reword(err)
  }
  // The calling thread is blocked while it waits: nothing could abort it.
  if (r.signal !== undefined) throw notSupported('LockManager.requestSync: signal is not supported (the thread is blocked while it waits); use timeout')
  // The shared parser read and checked options.timeout (once).
  const timeout = r.timeout === Infinity ? -1 : Math.min(Math.ceil(r.timeout), Number.MAX_SAFE_INTEGER)
  checkName(r.name, 'LockManager.requestSync')
  return { ...r, timeout }
}

/**
 * The per-user default directory of the scope: one fixed place per
 * effective user, read from nothing in the environment (XDG_RUNTIME_DIR,
 * TMPDIR and HOME differ between a login shell, cron and a service of the
 * same user, and two of them must not get two tables). /run/user/<uid>
 * exists only while the user has a session, so it is not used either.
 */
function defaultPath () {
  // Where there is no effective user id (Windows), threadlock/host is not
  // supported and createLockManager says so (ENOTSUP) right after this.
  if (typeof process.geteuid !== 'function') return path.join(require('os').tmpdir(), 'threadlock')
  return `/tmp/threadlock-${process.geteuid()}`
}

/** Checks createLockManager(options). */
function parseManager (options) {
  if (options !== undefined && options !== null && typeof options !== 'object') {
    throw new TypeError(`createLockManager: options must be an object, received ${describe(options)}`)
  }
  const o = options == null ? {} : options
  let dir = o.path
  if (dir === undefined) {
    dir = defaultPath()
  } else {
    if (typeof dir !== 'string' && !(dir instanceof URL)) {
      throw new TypeError(`createLockManager: options.path must be a string or a file URL, received ${describe(dir)}`)
    }
    if (dir instanceof URL) dir = require('url').fileURLToPath(dir)
    if (dir === '' || dir.includes('\0')) {
      throw new RangeError('createLockManager: options.path must be a non-empty path without NUL characters')
    }
  }
  return { path: path.resolve(dir), isDefault: o.path === undefined }
}

module.exports = { parseRequest, parseSyncRequest, parseManager, defaultPath, NAME_MAX }
