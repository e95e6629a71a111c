'use strict'

// Named locks with the behaviour of the Web Locks API (LockManager): one
// table of names for the whole process, shared by every thread without
// passing any buffer. `locks.request(name, [options], callback)` runs the
// callback while holding the lock and resolves with its result;
// `locks.query()` describes what is held and pending. A thread that ends
// while holding a named lock releases it, so the next request is granted.

const native = require('./native')
const { parseRequest, requestTimer, timeoutRequestError } = require('./requestOptions')
const { Lock, createLock } = require('./Lock')

// Phases of the native table (src/names.h).
const { NAMED_QUEUED: QUEUED, NAMED_HELD: HELD, NAMED_STOLEN: STOLEN } = native.constants

function stolenError () {
  return new DOMException('LockManager.request: the lock was stolen by another request', 'AbortError')
}

// Requests of this thread that are queued or held, by id, so that a steal
// from any thread can reject the right request. An entry exists from the
// request until its lock is released or its request withdrawn (and, for a
// stolen lock, until the steal was reported): a lock may be stolen between
// its grant and the moment its callback runs, and that steal must not be
// lost.
const requests = new Map()

native.namedInit((id) => {
  const entry = requests.get(id)
  if (entry === undefined) return
  requests.delete(id)
  // Web Locks "request a lock", steal: the released promise of every lock
  // taken away rejects with an AbortError DOMException. A lock whose
  // callback task is still to run gets it first, as the task was queued
  // before the steal; runGranted() then finds the lock stolen and rejects.
  if (entry.started) entry.reject(stolenError())
})

// Releases the lock (or withdraws the request) of `token` and returns the
// phase it had. A lock that was stolen before this thread heard of the steal
// still has a steal report queued for this thread, and the report refers to
// the native node that the token's finalizer frees: the entry left in
// `requests` keeps the token reachable until the report arrives and removes
// the entry.
function release (id, token) {
  const phase = native.namedRelease(token)
  if (phase === STOLEN && requests.has(id)) requests.set(id, { reject () {}, started: true, token })
  else requests.delete(id)
  return phase
}

// Runs the callback of a granted lock and settles the request with its
// result once the lock is released, or rejects it with an AbortError if the
// lock was stolen first (the steal may be reported by the table only when
// the lock is released, if it came before this thread heard of it).
function runGranted (r, token, id, resolve, reject) {
  let result
  try {
    result = Promise.resolve(r.callback(createLock(r.name, r.mode)))
  } catch (err) {
    result = Promise.reject(err)
  }
  const settle = (ok, value) => {
    if (release(id, token) === STOLEN) reject(stolenError())
    else if (ok) resolve(value)
    else reject(value)
  }
  result.then((value) => settle(true, value), (err) => settle(false, err))
}

// Web Locks "process the lock request queue": a granted request's callback
// is invoked from steps enqueued on the event loop, that is, from a task of
// its own, so every microtask queued before it runs first: those queued
// right after request(), and those of a callback that ran just before it.
// A lock granted inside request() gets that task from setImmediate, Node's
// cheapest task (this turn of the event loop, no timer's minimum delay).
// A queued request learns of its grant in a task already: the threadsafe
// call that delivers a batch of grants settles their promises together,
// before any script runs in that task. The first callback of the batch
// runs straight from its handler, which saves a turn of the loop on every
// hand-off; the others get a setImmediate each, so that the microtasks of
// the one before come first. The flag is cleared by a microtask queued
// behind the batch's handlers, that is, once they all ran. (The same
// delivery may settle promises of the other primitives too; microtasks that
// their handlers queue run after that first callback.)
let grantTaskUsed = false

function endGrantBatch () {
  grantTaskUsed = false
}

function fromGrantTask (fn, ok) {
  if (grantTaskUsed) {
    setImmediate(fn, ok)
    return
  }
  grantTaskUsed = true
  queueMicrotask(endGrantBatch)
  fn(ok)
}

class LockManager {
  /**
   * Requests the lock `name` and runs `callback(lock)` once it is granted
   * (or `callback(null)` with ifAvailable when it is not available now).
   */
  async request (name, options, callback) {
    const r = parseRequest(name, options, callback)
    const signal = r.signal
    if (signal !== undefined && signal.aborted) throw signal.reason
    const [phase, token, id, granted] = native.namedRequest(r.name, r.mode === 'exclusive', r.ifAvailable, r.steal, r.ref)
    if (phase !== HELD && phase !== QUEUED) {
      // ifAvailable and not grantable now: the callback gets null, from a
      // task of its own as well.
      return new Promise((resolve, reject) => {
        setImmediate(() => {
          try {
            resolve(r.callback(null))
          } catch (err) {
            reject(err)
          }
        })
      })
    }
    return new Promise((resolve, reject) => {
      const entry = { reject, started: false }
      requests.set(id, entry)
      let onAbort
      // Whether the timeout ran out (or the signal aborted) first.
      let given = false
      // Web Locks "signal to abort the request": the request leaves the
      // queue (if still there) and rejects with the abort reason. If it was
      // granted already, its callback will not run and the lock is released
      // at that point (below). A timeout that runs out does the same with a
      // LockError ETIMEDOUT; a lock granted within request() has none.
      const giveUp = (reason) => {
        given = true
        stopTimer()
        if (signal !== undefined) signal.removeEventListener('abort', onAbort)
        if (native.namedCancel(token)) requests.delete(id)
        reject(reason)
      }
      const stopTimer = phase === QUEUED ? requestTimer(r.timeout, () => giveUp(timeoutRequestError(r))) : () => {}
      if (signal !== undefined) {
        onAbort = () => giveUp(signal.reason)
        signal.addEventListener('abort', onAbort, { once: true })
      }
      const onGrant = (ok) => {
        stopTimer()
        if (given) {
          if (ok) release(id, token)
          return
        }
        if (signal !== undefined) {
          signal.removeEventListener('abort', onAbort)
          // Web Locks "process the lock request queue": a lock granted to
          // an aborted request is released without running its callback.
          if (signal.aborted) {
            if (ok) release(id, token)
            return
          }
        }
        if (!ok) {
          requests.delete(id)
          reject(new Error('LockManager.request: the request was withdrawn'))
          return
        }
        entry.started = true
        runGranted(r, token, id, resolve, reject)
      }
      if (phase === HELD) setImmediate(onGrant, true)
      else granted.then((ok) => fromGrantTask(onGrant, ok))
    })
  }

  /** Resolves with the held and pending locks of every thread. */
  async query () {
    const snapshot = { held: [], pending: [] }
    for (const [name, exclusive, client, isHeld] of native.namedQuery()) {
      const info = { name, mode: exclusive ? 'exclusive' : 'shared', clientId: String(client - 1) }
      ;(isHeld ? snapshot.held : snapshot.pending).push(info)
    }
    return snapshot
  }
}

// As WebIDL shapes an interface with overloads: request.length is that of
// the shortest overload, request(name, callback).
Object.defineProperties(LockManager.prototype, {
  request: { enumerable: true },
  query: { enumerable: true },
  [Symbol.toStringTag]: { value: 'LockManager', writable: false, enumerable: false, configurable: true }
})
Object.defineProperty(LockManager.prototype.request, 'length', { value: 2 })

const locks = new LockManager()

module.exports = { locks, LockManager, Lock }
