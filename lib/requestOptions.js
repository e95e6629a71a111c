'use strict'

// The arguments of LockManager.request(name, [options], callback), read as
// the Web Locks spec reads them. Shared by threadlock.locks (lib/locks.js)
// and threadlock/postgres, so that code moving from threads to machines sees
// the same errors. Loads no addon.
//
// The interface every scope uses: parseRequest() returns
// `{ name, mode, ifAvailable, steal, signal, ref, timeout, callback }`, with
// `timeout` in milliseconds (Infinity when absent). A scope that queues the
// request starts requestTimer(r.timeout, onTimeout) once the request waits,
// and on expiry takes it out of its queue as an abort does and rejects with
// timeoutRequestError(r). The timeout is threadlock's addition: Web Locks
// has only the signal (AbortSignal.timeout() makes one that aborts with a
// DOMException named TimeoutError; this option rejects with the LockError
// ETIMEDOUT of every other threadlock primitive).

const { describe, readFlag } = require('./validate')
const { timeoutError } = require('./errors')
const { atDeadline } = require('./timer')

function notSupported (message) {
  return new DOMException(message, 'NotSupportedError')
}

// The arguments as WebIDL converts them for request(name, [options],
// callback): the name, then the options dictionary, then the callback. A
// dictionary's members are read once each, in lexicographic order
// (ifAvailable, mode, ref, signal, steal, timeout; `ref` and `timeout` are
// this package's own members), and each is converted as soon as it is read, so a bad member
// throws before the later ones are read. The checks of the method's own
// steps (NotSupportedError) come after every conversion.
function parseRequest (name, options, callback) {
  if (typeof name === 'symbol') {
    throw new TypeError('LockManager.request: name must be a string, received a symbol')
  }
  const n = `${name}`
  if (callback === undefined) {
    callback = options
    options = undefined
  }
  // Undefined and null mean every default, with nothing read; any other
  // object (functions included) is read member by member.
  if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
    throw new TypeError(`LockManager.request: options must be an object, received ${describe(options)}`)
  }
  let ifAvailable = false
  let mode = 'exclusive'
  let ref = true
  let signal
  let steal = false
  let timeout = Infinity
  if (options != null) {
    ifAvailable = Boolean(options.ifAvailable)
    const m = options.mode
    if (m !== undefined) {
      if (typeof m === 'symbol') {
        throw new TypeError("LockManager.request: options.mode must be 'exclusive' or 'shared', received a symbol")
      }
      mode = `${m}`
      if (mode !== 'exclusive' && mode !== 'shared') {
        // The value itself when it is a string (a misspelling shows), as
        // converted otherwise.
        const got = typeof m === 'string' ? `'${m}'` : `${describe(m)} ('${mode}')`
        throw new TypeError(`LockManager.request: options.mode must be 'exclusive' or 'shared', received ${got}`)
      }
    }
    ref = readFlag(options.ref, true, 'LockManager.request', 'ref')
    signal = options.signal
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError(`LockManager.request: options.signal must be an AbortSignal, received ${describe(signal)}`)
    }
    steal = Boolean(options.steal)
    const t = options.timeout
    if (t !== undefined) {
      // Strict as every other threadlock timeout: no coercion.
      if (typeof t !== 'number') {
        throw new TypeError(`LockManager.request: options.timeout must be a number of milliseconds, received ${describe(t)}`)
      }
      if (t !== t || t < 0) {
        throw new RangeError(`LockManager.request: options.timeout must be >= 0 (Infinity for none), received ${t}`)
      }
      timeout = t
    }
  }
  if (typeof callback !== 'function') {
    throw new TypeError(`LockManager.request: callback must be a function, received ${describe(callback)}`)
  }
  if (n.startsWith('-')) throw notSupported("LockManager.request: lock names starting with '-' are reserved")
  if (steal && ifAvailable) throw notSupported('LockManager.request: steal and ifAvailable cannot be combined')
  if (steal && mode !== 'exclusive') throw notSupported("LockManager.request: steal requires mode 'exclusive'")
  if (signal !== undefined && (steal || ifAvailable)) {
    throw notSupported('LockManager.request: signal cannot be combined with steal or ifAvailable')
  }
  // Neither waits, so a timeout could only be a mistake.
  if (timeout !== Infinity && (steal || ifAvailable)) {
    throw notSupported('LockManager.request: timeout cannot be combined with steal or ifAvailable')
  }
  return { name: n, mode, ifAvailable, steal, signal, ref, timeout, callback }
}

/**
 * Calls `onTimeout` once `timeout` ms have passed by performance.now(),
 * never earlier (lib/timer.js), also beyond setTimeout's 2^31 - 1 ms; never
 * for Infinity. The timer does not keep the process alive: the waiting
 * request does, unless it asked not to (`ref: false`). Returns the function
 * that stops it.
 */
function requestTimer (timeout, onTimeout) {
  if (timeout === Infinity) return () => {}
  let timer
  atDeadline(performance.now() + timeout, onTimeout, (t) => { timer = t })
  return () => clearTimeout(timer)
}

/** The LockError ETIMEDOUT of a request whose timeout ran out. */
function timeoutRequestError (r) {
  return timeoutError(r.timeout, `LockManager.request: lock ${JSON.stringify(r.name)}`)
}

module.exports = { parseRequest, notSupported, requestTimer, timeoutRequestError }
