'use strict'

// Named locks with the behaviour of the Web Locks API (LockManager): one
// table of names for the whole process, shared by every thread without
// passing any buffer. `locks.request(name, [options], callback)` runs the
// callback while holding the lock and resolves with its result;
// `locks.query()` describes what is held and pending. A thread that ends
// while holding a named lock releases it, so the next request is granted.

const { binding } = require('./native')
const { describe } = require('./atomics')

// Phases of the native table (src/names.h).
const HELD = 2
const QUEUED = 1

function notSupported (message) {
  return new DOMException(message, 'NotSupportedError')
}

/** A granted lock, as passed to the callback. */
class Lock {
  #name
  #mode
  constructor (name, mode) {
    this.#name = name
    this.#mode = mode
  }

  get name () { return this.#name }
  get mode () { return this.#mode }
  get [Symbol.toStringTag] () { return 'Lock' }
}

// Held locks of this thread by id, so that a steal from any thread can
// reject the right request.
const held = new Map()

binding.namedInit((id) => {
  const entry = held.get(id)
  if (entry === undefined) return
  held.delete(id)
  entry.stolen = true
  entry.reject(new DOMException('The lock was stolen by another request', 'AbortError'))
})

function parseRequest (name, options, callback) {
  if (typeof name === 'symbol') {
    throw new TypeError('request: name must be a string, received a symbol')
  }
  const n = `${name}`
  if (callback === undefined) {
    callback = options
    options = undefined
  }
  if (typeof callback !== 'function') {
    throw new TypeError(`request: callback must be a function, received ${describe(callback)}`)
  }
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new TypeError(`request: options must be an object, received ${describe(options)}`)
  }
  const o = options || {}
  const mode = o.mode === undefined ? 'exclusive' : `${o.mode}`
  if (mode !== 'exclusive' && mode !== 'shared') {
    throw new TypeError(`request: options.mode must be 'exclusive' or 'shared', received ${describe(o.mode)}`)
  }
  const ifAvailable = Boolean(o.ifAvailable)
  const steal = Boolean(o.steal)
  const signal = o.signal
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`request: options.signal must be an AbortSignal, received ${describe(signal)}`)
  }
  const ref = o.ref === undefined ? true : o.ref
  if (typeof ref !== 'boolean') {
    throw new TypeError(`request: options.ref must be a boolean, received ${describe(ref)}`)
  }
  if (n.startsWith('-')) throw notSupported("request: lock names starting with '-' are reserved")
  if (steal && ifAvailable) throw notSupported('request: steal and ifAvailable cannot be combined')
  if (steal && mode !== 'exclusive') throw notSupported("request: steal requires mode 'exclusive'")
  if (signal !== undefined && (steal || ifAvailable)) {
    throw notSupported('request: signal cannot be combined with steal or ifAvailable')
  }
  return { name: n, mode, ifAvailable, steal, signal, ref, callback }
}

// Runs the callback with the granted lock and settles the request with its
// result, or with an AbortError if the lock is stolen first.
function runGranted (r, token, id) {
  return new Promise((resolve, reject) => {
    const entry = { stolen: false, reject }
    held.set(id, entry)
    let result
    try {
      result = Promise.resolve(r.callback(new Lock(r.name, r.mode)))
    } catch (err) {
      result = Promise.reject(err)
    }
    result.then((value) => {
      held.delete(id)
      binding.namedRelease(token)
      resolve(value)
    }, (err) => {
      held.delete(id)
      binding.namedRelease(token)
      reject(err)
    })
  })
}

class LockManager {
  /**
   * Requests the lock `name` and runs `callback(lock)` once it is granted
   * (or `callback(null)` with ifAvailable when it is not available now).
   */
  async request (name, options, callback) {
    const r = parseRequest(name, options, callback)
    if (r.signal !== undefined && r.signal.aborted) throw r.signal.reason
    const [phase, token, id, granted] = binding.namedRequest(r.name, r.mode === 'exclusive', r.ifAvailable, r.steal, r.ref)
    if (phase !== HELD && phase !== QUEUED) {
      // ifAvailable and not grantable now.
      await null
      return r.callback(null)
    }
    if (phase === QUEUED) {
      let ok
      if (r.signal === undefined) {
        ok = await granted
      } else {
        const signal = r.signal
        ok = await new Promise((resolve, reject) => {
          const onAbort = () => {
            if (binding.namedCancel(token)) reject(signal.reason)
          }
          signal.addEventListener('abort', onAbort, { once: true })
          granted.then((value) => {
            signal.removeEventListener('abort', onAbort)
            if (value) resolve(true)
          })
        })
      }
      if (!ok) throw new Error('threadlock: named lock request withdrawn')
    } else {
      await null
    }
    return runGranted(r, token, id)
  }

  /** Resolves with the held and pending locks of every thread. */
  async query () {
    const snapshot = { held: [], pending: [] }
    for (const [name, exclusive, client, isHeld] of binding.namedQuery()) {
      const info = { name, mode: exclusive ? 'exclusive' : 'shared', clientId: String(client - 1) }
      ;(isHeld ? snapshot.held : snapshot.pending).push(info)
    }
    return snapshot
  }
}

const locks = new LockManager()

module.exports = { locks, LockManager, Lock }
