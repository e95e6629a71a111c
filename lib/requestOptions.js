'use strict'

// The arguments of LockManager.request(name, [options], callback), read as
// the Web Locks spec reads them. Shared by threadlock.locks (lib/locks.js)
// and threadlock/postgres, so that code moving from threads to machines sees
// the same errors. Loads no addon.

const { describe, readFlag } = require('./validate')

function notSupported (message) {
  return new DOMException(message, 'NotSupportedError')
}

// The arguments as WebIDL converts them for request(name, [options],
// callback): the name, then the options dictionary, then the callback. A
// dictionary's members are read once each, in lexicographic order
// (ifAvailable, mode, ref, signal, steal; `ref` is this package's own
// member), and each is converted as soon as it is read, so a bad member
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
  if (options != null) {
    ifAvailable = Boolean(options.ifAvailable)
    const m = options.mode
    if (m !== undefined) {
      if (typeof m === 'symbol') {
        throw new TypeError("LockManager.request: options.mode must be 'exclusive' or 'shared', received a symbol")
      }
      mode = `${m}`
      if (mode !== 'exclusive' && mode !== 'shared') {
        throw new TypeError(`LockManager.request: options.mode must be 'exclusive' or 'shared', received ${describe(m)}`)
      }
    }
    ref = readFlag(options.ref, true, 'LockManager.request', 'ref')
    signal = options.signal
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError(`LockManager.request: options.signal must be an AbortSignal, received ${describe(signal)}`)
    }
    steal = Boolean(options.steal)
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
  return { name: n, mode, ifAvailable, steal, signal, ref, callback }
}

module.exports = { parseRequest, notSupported }
