'use strict'

// A LockManager (Web Locks semantics) whose locks are shared by every
// process (and every manager) attached to the same directory. The queue of
// each name lives in the table file (src/host/), where grants follow
// AsyncLock's default policy across processes (barging for at most 1 ms,
// src/host/lists.c). A request waiting here costs no
// thread of its own: the process's helper thread sleeps on its doorbell and
// calls #onDoorbell on the event loop when a grant or a steal concerns one
// of its requests. requestSync() waits in the kernel on the calling thread.

const native = require('../native')
const { parseRequest, parseSyncRequest } = require('./options')
const { requestTimer, timeoutRequestError } = require('../requestOptions')
const { HostError, codes } = require('./errors')
const { isMainThread } = require('worker_threads')
const { LockError, codes: lockCodes, timeoutError, deadlockError, stopTerminated } = require('../errors')
const { createLock } = require('./Lock')
const { createHeldLock } = require('./HeldLock')

const C = native.hostConstants || {}

function noop () {}

// How often an idle manager checks whether its watcher threads may end.
const PRUNE_MS = 150

// Barging (src/host/lists.c, B1-B3): a waiting request becomes old this
// long after it started waiting, and nobody barges ahead of it from then
// on: the table's TL_BARGE_MS.
const BARGE_MS = 1

function stolenError (where) {
  return new DOMException(`${where}: the lock was stolen by another request`, 'AbortError')
}

// The hook the table's doorbell calls (lib/host/index.js), kept off the
// public surface.
const kDoorbell = Symbol('kDoorbell')

// Managers with requests waiting or locks held: kept reachable while they
// have promises to settle, even if the script dropped them. A manager
// with neither may be collected, which detaches it from the table.
const busy = new Set()

// A held lock's signal, made when it is first read: most callbacks never
// read it, and an AbortController cost more than the rest of a grant (16%
// of an uncontended request + release in a profile). An abort that comes
// first is kept (`aborted`, `abortReason`), and the signal made later is
// aborted with it: what a reader sees is the same either way.
function signalOf (e) {
  if (e.controller === null) {
    e.controller = new AbortController()
    if (e.aborted) e.controller.abort(e.abortReason)
  }
  return e.controller.signal
}

// Aborts a held lock's signal (at once if it was made, else when it is).
function abortHeld (e, reason) {
  if (e.aborted) return
  e.aborted = true
  e.abortReason = reason
  if (e.controller !== null) e.controller.abort(reason)
}

// A manager's requests by node index (0 to C.NODES - 1): a Map's delete of
// its last entry shrinks and reallocates its table, on every release of an
// uncontended loop (6% of its time in a profile), so an array of the
// table's size is used instead.
class NodeMap {
  #items = new Array(C.NODES).fill(undefined)
  size = 0
  get (node) { return this.#items[node] }
  has (node) { return this.#items[node] !== undefined }
  set (node, e) {
    if (this.#items[node] === undefined) this.size++
    this.#items[node] = e
  }

  delete (node) {
    if (this.#items[node] === undefined) return false
    this.#items[node] = undefined
    this.size--
    return true
  }

  // A copy: callers change the map while they walk it.
  values () {
    const out = []
    // Up to the last entry in use, not the whole table's length (4,096):
    // the age timer walks it once per BARGE_MS while requests wait.
    for (let i = 0; out.length < this.size && i < this.#items.length; i++) {
      const e = this.#items[i]
      if (e !== undefined) out.push(e)
    }
    return out
  }
}

// Web Locks: a granted request's callback runs from a task of its own.
function later (fn, ...args) {
  setImmediate(fn, ...args)
}

class LockManager {
  #handle
  #path
  // Requests of this manager that are waiting or held, by node index.
  #entries = new NodeMap()
  // Waiting async requests with `ref`, which keep the event loop alive.
  #refs = 0
  // Names held by this manager: name -> number of held locks (0 kept for
  // a few names, see #hold).
  #held = new Map()
  #closed = false
  // hostRequest's token, when the answer is one number (see #attempted).
  #out = new Float64Array(1)
  // Calls handed to the worker thread: id -> continuation.
  #deferred = new Map()
  #nextId = 1
  // A poll, a rewatch or a claim of offered names handed to the worker and
  // not answered yet.
  #pollDeferred = false
  #rewatchDeferred = false
  #offerDeferred = false
  // Async requests waiting in the table that have not been made old yet,
  // and the timer that makes them old (B2).
  #young = 0
  #ageTimer = null
  // Names with requests of this manager waiting in the table or handed to
  // the worker on their way there: name -> count (a request granted at once
  // never enters it). A later request of such a name must not
  // barge ahead of them (C.NO_BARGE): one manager's requests keep their
  // order.
  #queued = new Map()
  // The timer that ends the watcher threads once nothing waits (unref'd).
  #pruneTimer = null

  /** Use createLockManager(). */
  constructor (handle, path) {
    this.#handle = handle
    this.#path = path
  }

  /** The directory whose processes share these locks. */
  get path () { return this.#path }

  /**
   * Requests the lock `name` and runs `callback(lock)` once it is granted
   * (or `callback(null)` with ifAvailable when it is not available now).
   */
  async request (name, options, callback) {
    const r = parseRequest(name, options, callback)
    this.#open('LockManager.request')
    const signal = r.signal
    if (signal !== undefined && signal.aborted) throw signal.reason
    const flags = (r.mode === 'exclusive' ? C.EXCLUSIVE : 0) |
      (r.ifAvailable ? C.IF_AVAILABLE : 0) | (r.steal ? C.STEAL : 0) |
      (this.#queued.has(r.name) ? C.NO_BARGE : 0)
    return new Promise((resolve, reject) => {
      // 'attempting' until the table answers: at once, or from the worker
      // thread when another process holds the table's critical section.
      const e = { r, node: -1, sync: false, state: 'attempting', resolve, reject, controller: null, aborted: false, abortReason: undefined, onAbort: null, stopTimer: null, lost: null, counted: false, young: false, queued: false }
      // Leaves the queue (if it is still there) and rejects with `err`.
      const giveUp = (err) => {
        if (e.state === 'attempting') {
          // The node, if the attempt makes one, is released when it ends.
          this.#unlisten(e)
          this.#unqueue(e)
          e.state = 'abandoned'
          reject(err)
          return
        }
        if (e.state !== 'waiting') return
        this.#forget(e)
        this.#releaseNode(e.node)
        reject(err)
      }
      if (signal !== undefined) {
        // Web Locks "signal to abort the request": rejects with the reason.
        e.onAbort = () => giveUp(signal.reason)
        signal.addEventListener('abort', e.onAbort, { once: true })
      }
      // threadlock's `timeout`, as in threadlock.locks: ETIMEDOUT.
      e.stopTimer = requestTimer(r.timeout, () => giveUp(timeoutRequestError(r)))
      // At once when nothing waits at the worker (no closures: the common
      // case); else through #run, which keeps the order.
      // (A call that got EAGAIN is not tried again by #run.)
      if (this.#deferred.size === 0) {
        const res = native.hostRequest(this.#handle, r.name, flags, 0, this.#out)
        if (res !== C.EAGAIN) {
          this.#attempted(e, res)
          return
        }
      }
      if (this.#run(C.OP_REQUEST, () => C.EAGAIN, r.name, flags, (res) => this.#attempted(e, res))) this.#enqueue(e)
    })
  }

  // The table's answer to request() (`res`: hostRequest's result).
  // `res`: an array [state, node, token, ownerDied] (from the worker), a
  // negative error, or from a direct call one number, state | ownerDied
  // << 3 | node << 4, with the token in #out[0].
  #attempted (e, res) {
    let state, node, token, ownerDied
    if (typeof res !== 'number') {
      [state, node, token, ownerDied] = res
    } else if (res >= 0) {
      state = res & 7
      ownerDied = (res & 8) !== 0
      node = res >>> 4
      token = BigInt(this.#out[0])
    } else {
      if (e.state === 'abandoned') return
      this.#unqueue(e)
      this.#unlisten(e)
      e.state = 'done'
      e.reject(this.#error(res, 'LockManager.request'))
      return
    }
    e.node = node
    if (e.state === 'abandoned') {
      if (state !== C.UNAVAILABLE) this.#releaseNode(node)
      return
    }
    if (state === C.UNAVAILABLE) {
      this.#unqueue(e)
      this.#unlisten(e)
      e.state = 'done'
      later(() => {
        try {
          e.resolve(e.r.callback(null))
        } catch (err) {
          e.reject(err)
        }
      })
      return
    }
    e.state = 'waiting'
    this.#track(e)
    if (state === C.HELD) {
      this.#grant(e, token, ownerDied)
      return
    }
    if (e.r.ref) this.#ref(1)
    e.counted = e.r.ref
    if (!e.queued) this.#enqueue(e)
    e.young = true
    this.#young++
    this.#armAge()
  }

  // B2: once a request has waited BARGE_MS, the table is told (a claim
  // with `age`), and no request barges ahead of it from then on. One timer
  // for the manager: it makes old every request waiting when it fires
  // (some sooner than BARGE_MS, which only bounds their wait closer).
  #armAge () {
    if (this.#ageTimer !== null || this.#closed) return
    this.#ageTimer = setTimeout(() => {
      this.#ageTimer = null
      if (this.#closed || this.#young === 0) return
      for (const e of this.#entries.values()) this.#aged(e)
      this.#claim(true)
    }, BARGE_MS)
    this.#ageTimer.unref()
  }

  // A request is on its way to the table or waits there (#queued).
  #enqueue (e) {
    e.queued = true
    this.#queued.set(e.r.name, (this.#queued.get(e.r.name) || 0) + 1)
  }

  #unqueue (e) {
    if (!e.queued) return
    e.queued = false
    const n = this.#queued.get(e.r.name) - 1
    if (n > 0) this.#queued.set(e.r.name, n)
    else this.#queued.delete(e.r.name)
  }

  // A request leaves the young ones (made old, granted or gone).
  #aged (e) {
    if (!e.young) return
    e.young = false
    this.#young--
  }

  // Visits the table for the waiting requests: with `age`, they become
  // old; else a release rang one of them (OFFERED) to take its name, left
  // free for whoever came first. Either takes a free name. Calls with
  // `age` are never dropped (the bound of B2 depends on them); a claim of
  // offers is not repeated while one waits at the worker.
  #claim (age) {
    if (this.#closed || (!age && this.#offerDeferred)) return
    const deferred = this.#run(C.OP_CLAIM, () => native.hostClaim(this.#handle, age ? 1 : 0, 0), 0, age ? 1 : 0, (changes) => {
      if (!age) this.#offerDeferred = false
      this.#changes(changes)
    })
    if (!age) this.#offerDeferred = deferred
  }

  // Removes a request's abort listener and timer.
  #unlisten (e) {
    if (e.onAbort) e.r.signal.removeEventListener('abort', e.onAbort)
    if (e.stopTimer) e.stopTimer()
    e.onAbort = null
    e.stopTimer = null
  }

  // Runs a call of the table without waiting for its critical section
  // (`attempt` passes critMs 0); when another process holds it (EAGAIN),
  // hands the call to the attachment's worker thread, which waits, and
  // `cont` gets the result from the doorbell. While any call waits there,
  // later requests go there too, so that they keep their order, and so do
  // polls: a request the worker made is in the table (and in what a poll
  // compares with) from the moment the worker leaves the critical section,
  // but in #entries only once its result came back through hostTake. A
  // poll run here in between would report the request's grant for a node
  // this manager does not know yet, and mark it seen: the grant would be
  // dropped and the request would wait for ever. Queued behind the
  // request on the worker, the poll's result comes back after the
  // request's. Returns whether the call was handed over.
  #run (kind, attempt, arg, flags, cont) {
    const ordered = kind === C.OP_REQUEST || kind === C.OP_POLL || kind === C.OP_CLAIM
    if (!ordered || this.#deferred.size === 0) {
      const res = attempt()
      if (res !== C.EAGAIN) {
        cont(res)
        return false
      }
    }
    const id = this.#nextId
    this.#nextId = (this.#nextId + 1) & 0x3fffffff
    if (native.hostDefer(this.#handle, kind, id, arg, flags) !== 0) {
      cont(C.ETHREAD)
      return false
    }
    this.#deferred.set(id, cont)
    busy.add(this)
    this.#ref(1)
    return true
  }

  // Releases (or withdraws) a node, then calls `cont` with the state it
  // had.
  #releaseNode (node, cont = noop) {
    const res = native.hostRelease(this.#handle, node, 0)
    if (res !== C.EAGAIN) cont(res)
    else this.#run(C.OP_RELEASE, () => C.EAGAIN, node, 0, cont)
  }

  /**
   * Requests the lock `name` and blocks the calling thread until it is
   * granted; returns a HeldLock to release(), or null with ifAvailable
   * when it is not available now.
   */
  requestSync (name, options) {
    const r = parseSyncRequest(name, options)
    this.#open('LockManager.requestSync')
    const flags = (r.mode === 'exclusive' ? C.EXCLUSIVE : 0) | C.SYNC |
      (r.steal ? C.STEAL : 0) | (this.#queued.has(r.name) ? C.NO_BARGE : 0)
    // A lock this manager holds already can only be granted at once: any
    // request that must wait would wait for this very thread.
    const holding = this.#involved(r.name)
    const ask = r.ifAvailable || (holding && !r.steal) ? flags | C.IF_AVAILABLE : flags
    // The timeout bounds the wait for the table's critical section too
    // (a process may be stopped inside it), and then the wait for the
    // lock with what is left.
    const started = Date.now()
    const res = native.hostRequest(this.#handle, r.name, ask, r.timeout)
    if (res === C.ETIMEDOUT) throw timeoutError(r.timeout, `LockManager.requestSync: lock ${JSON.stringify(r.name)}`)
    if (typeof res === 'number') throw this.#error(res, 'LockManager.requestSync')
    let [state, node, token, ownerDied] = res
    if (state === C.UNAVAILABLE) {
      if (r.ifAvailable) return null
      throw deadlockError('LockManager.requestSync', `this thread holds lock ${JSON.stringify(r.name)} already, so a blocking wait would never return`)
    }
    if (state === C.WAITING) {
      // A worker thread's wait asks now and then whether the worker is
      // being terminated; the main thread's sleeps undisturbed.
      const left = r.timeout < 0 ? -1 : Math.max(0, r.timeout - (Date.now() - started))
      const waited = native.hostWait(this.#handle, node, left, !isMainThread)
      if (waited === C.EAGAIN) {
        // Timed out or interrupted while another process holds the
        // table's critical section: the worker withdraws the request
        // (or releases it, if it was granted meanwhile).
        this.#releaseNode(node)
        if (r.timeout >= 0 && Date.now() - started >= r.timeout) throw timeoutError(r.timeout, `LockManager.requestSync: lock ${JSON.stringify(r.name)}`)
        stopTerminated('LockManager.requestSync')
      }
      if (waited === C.ETIMEDOUT) throw timeoutError(r.timeout, `LockManager.requestSync: lock ${JSON.stringify(r.name)}`)
      if (waited === C.EINTR) stopTerminated('LockManager.requestSync')
      if (typeof waited === 'number') throw this.#error(waited, 'LockManager.requestSync')
      ;[state, token, ownerDied] = waited
    }
    const e = { r, node, sync: true, state: 'held', controller: null, aborted: false, abortReason: undefined, lost: null }
    this.#track(e)
    this.#hold(r.name, 1)
    if (state === C.STOLEN) e.lost = stolenError('LockManager.requestSync')
    return createHeldLock(r.name, r.mode, token, ownerDied, () => signalOf(e), () => {
      if (!this.#entries.has(node)) return false
      this.#forget(e)
      // A synchronous call: it may wait for the table's critical section.
      const was = this.#closed ? C.STOLEN : native.hostRelease(this.#handle, node, -1)
      return was === C.HELD
    })
  }

  /** Resolves with the held and pending locks of every process. */
  async query () {
    this.#open('LockManager.query')
    return new Promise((resolve, reject) => {
      this.#run(C.OP_QUERY, () => native.hostQuery(this.#handle, 0), 0, 0, (rows) => {
        if (typeof rows === 'number') {
          reject(this.#error(rows, 'LockManager.query'))
          return
        }
        const snapshot = { held: [], pending: [] }
        for (const [name, exclusive, held, clientId, pid] of rows) {
          ;(held ? snapshot.held : snapshot.pending).push({ name, mode: exclusive ? 'exclusive' : 'shared', clientId, pid })
        }
        resolve(snapshot)
      })
    })
  }

  /**
   * Releases what the manager holds (the signals of its locks abort),
   * rejects what it waits for, and detaches from the table.
   */
  async close () {
    if (this.#closed) return
    this.#closed = true
    const err = new HostError(codes.ECLOSED, 'LockManager.close: the lock manager was closed')
    for (const e of [...this.#entries.values()]) {
      if (e.state === 'waiting') {
        this.#forget(e)
        e.reject(err)
      } else {
        e.lost = err
        abortHeld(e, err)
      }
    }
    this.#refs = 0
    busy.delete(this)
    if (this.#pruneTimer !== null) clearTimeout(this.#pruneTimer)
    if (this.#ageTimer !== null) clearTimeout(this.#ageTimer)
    native.hostClose(this.#handle)
    // Calls still with the worker end with ECLOSED (it was joined).
    const deferred = [...this.#deferred.values()]
    this.#deferred.clear()
    for (const cont of deferred) cont(C.ECLOSED)
  }

  /** Diagnostics for the tests: the table's counts. */
  stats () {
    this.#open('LockManager.stats')
    const res = native.hostStats(this.#handle)
    if (typeof res === 'number') throw this.#error(res, 'LockManager.stats')
    const [slot, nodes, slots, names, walked] = res
    return { slot, nodes, slots, names, walked }
  }

  // Called on the event loop when the doorbell rang: applies every grant
  // and steal of this manager's requests.
  [kDoorbell] () {
    if (this.#closed) return
    // First the answers of the worker (requests it made enter the books
    // before their grants are polled), then the grants and steals.
    // (Only calls handed to the worker have results there.)
    const taken = this.#deferred.size === 0 ? [] : native.hostTake(this.#handle)
    for (const [id, , res] of taken) {
      const cont = this.#deferred.get(id)
      if (cont === undefined) continue
      this.#deferred.delete(id)
      this.#ref(-1)
      if (this.#deferred.size === 0 && this.#entries.size === 0) busy.delete(this)
      cont(res)
      if (this.#closed) return
    }
    // One poll at a time with the worker: one that runs there later
    // covers every ring before it.
    if (!this.#pollDeferred) {
      this.#pollDeferred = this.#run(C.OP_POLL, () => native.hostPoll(this.#handle, 0), 0, 0, (changes) => {
        this.#pollDeferred = false
        this.#changes(changes)
      })
    }
  }

  // After a steal put another process ahead of this manager's waiting
  // requests (a poll said REWATCH): the watchers of the processes now
  // ahead start. One at a time with the worker.
  #rewatch () {
    if (!this.#rewatchDeferred && !this.#closed) {
      this.#rewatchDeferred = this.#run(C.OP_REWATCH, () => native.hostRewatch(this.#handle, 0), 0, 0, (res) => {
        this.#rewatchDeferred = false
        // A watcher a steal asked for could not start: the waiting
        // requests could no longer learn of a death ahead of them, so
        // they are withdrawn with the error rather than left to hang.
        if (res === C.ETHREAD) this.#withdrawAll(this.#error(res, 'LockManager.request'))
      })
    }
  }

  // Applies hostPoll's result: the grants and steals of this manager's
  // requests since the last poll.
  #changes (changes) {
    if (this.#closed) return
    if (typeof changes === 'number') {
      this.#lost(this.#error(changes, 'LockManager.request'))
      return
    }
    // The doorbell's call is a task of its own, so the first callback of
    // the batch runs from it directly (it saves a turn of the event loop on
    // every hand-off); the others get a task each, as in threadlock.locks.
    let direct = true
    let offered = false
    let rewatch = false
    for (const [node, state, token, ownerDied] of changes) {
      if (state === C.REWATCH) {
        rewatch = true
        continue
      }
      const e = this.#entries.get(node)
      if (e === undefined) continue
      if (state === C.OFFERED) {
        offered ||= e.state === 'waiting'
      } else if (state === C.HELD && e.state === 'waiting') {
        this.#grant(e, token, ownerDied, direct)
        direct = false
      } else if (state === C.STOLEN) {
        this.#stolen(e)
      }
    }
    if (offered) this.#claim(false)
    if (rewatch) this.#rewatch()
  }

  // The table can no longer be used (the file shrank or was rebuilt):
  // waiting requests reject with `err`, held locks' signals abort with it
  // and their requests reject with it when they end.
  #lost (err) {
    for (const e of [...this.#entries.values()]) {
      if (e.state === 'waiting') {
        this.#forget(e)
        e.reject(err)
      } else if (e.lost === null) {
        e.lost = err
        abortHeld(e, err)
      }
    }
  }

  // Withdraws every waiting request of the manager, rejecting it with
  // `err`.
  #withdrawAll (err) {
    for (const e of [...this.#entries.values()]) {
      if (e.state !== 'waiting' || e.sync) continue
      this.#forget(e)
      this.#releaseNode(e.node)
      e.reject(err)
    }
  }

  #open (where) {
    if (this.#closed) throw new HostError(codes.ECLOSED, `${where}: the lock manager is closed`)
  }

  #ref (delta) {
    const before = this.#refs
    this.#refs += delta
    if (before === 0 && this.#refs > 0) native.hostRef(this.#handle, true)
    else if (before > 0 && this.#refs === 0 && !this.#closed) native.hostRef(this.#handle, false)
  }

  // A name that drops to 0 keeps its entry while the map is small: a
  // Map's delete of its last entry reallocates, on every release of a
  // loop on one name.
  #hold (name, delta) {
    const n = (this.#held.get(name) || 0) + delta
    if (n > 0 || this.#held.size <= 16) this.#held.set(name, n)
    else this.#held.delete(name)
  }

  // Whether this manager holds `name` or waits for it.
  #involved (name) {
    return this.#held.get(name) > 0 || this.#queued.has(name)
  }

  #track (e) {
    this.#entries.set(e.node, e)
    busy.add(this)
  }

  // Ends the watcher threads (which follow the processes ahead of this
  // manager's waiting requests) once it has waited for nothing for a
  // while: checked from an unref'd timer, again while some remain.
  #schedulePrune () {
    if (this.#pruneTimer !== null || this.#closed) return
    this.#pruneTimer = setTimeout(() => {
      this.#pruneTimer = null
      // Let go here rather than at every release (a Set's delete of its
      // last member reallocates): a manager with nothing pending may be
      // collected up to PRUNE_MS later.
      if (this.#entries.size === 0 && this.#deferred.size === 0) busy.delete(this)
      if (!this.#closed && native.hostPrune(this.#handle) === 1) this.#schedulePrune()
    }, PRUNE_MS)
    this.#pruneTimer.unref()
  }

  // Takes an entry out of the manager's books.
  #forget (e, prune = true) {
    if (prune) this.#schedulePrune()
    if (!this.#entries.delete(e.node)) return
    if (e.state === 'waiting') {
      if (e.counted) this.#ref(-1)
      if (e.onAbort) e.r.signal.removeEventListener('abort', e.onAbort)
      if (e.stopTimer) e.stopTimer()
      this.#aged(e)
      this.#unqueue(e)
    } else {
      this.#hold(e.r.name, -1)
    }
    e.state = 'done'
  }

  // A grant: the callback runs from a task of its own (`direct`: the
  // current one).
  #grant (e, token, ownerDied, direct = false) {
    if (e.state === 'waiting') {
      if (e.counted) this.#ref(-1)
      if (e.onAbort) e.r.signal.removeEventListener('abort', e.onAbort)
      if (e.stopTimer) e.stopTimer()
      this.#aged(e)
    }
    this.#unqueue(e)
    e.state = 'held'
    this.#hold(e.r.name, 1)
    const signal = e.r.signal
    const run = () => {
      // Web Locks: a lock granted to an aborted request is released
      // without running its callback.
      if (signal !== undefined && signal.aborted) {
        if (this.#entries.has(e.node)) this.#finish(e)
        e.reject(signal.reason)
        return
      }
      if (e.state !== 'held') return
      const lock = createLock(e.r.name, e.r.mode, token, ownerDied, () => signalOf(e))
      let result
      try {
        result = Promise.resolve(e.r.callback(lock))
      } catch (err) {
        result = Promise.reject(err)
      }
      result.then((value) => this.#settle(e, true, value), (err) => this.#settle(e, false, err))
    }
    if (direct) run()
    else later(run)
  }

  // Releases the node of a finished lock; `cont` gets the state it had
  // (at once, or from the worker when another process holds the table's
  // critical section).
  #finish (e, cont = noop) {
    // The prune timer is set after the release: its setup would delay
    // the next holder's wake-up.
    this.#forget(e, false)
    if (this.#closed) cont(C.STOLEN)
    else this.#releaseNode(e.node, cont)
    this.#schedulePrune()
  }

  #settle (e, ok, value) {
    // The lock is released before the request settles, as in Web Locks.
    const stolen = e.stolen === true
    if (this.#entries.has(e.node)) this.#finish(e, (was) => this.#settled(e, stolen, ok, value, was))
    else this.#settled(e, stolen, ok, value, C.HELD)
  }

  #settled (e, stolen, ok, value, was) {
    if (stolen) return // rejected already
    if (was === C.ECLOSED && e.lost === null) e.lost = new HostError(codes.ECLOSED, 'LockManager.close: the lock manager was closed')
    if (was < 0 && e.lost === null) e.lost = this.#error(was, 'LockManager.request')
    if (e.lost !== null) {
      e.reject(e.lost)
    } else if (was === C.STOLEN) {
      // Stolen before this process heard of it: the release finds out.
      e.stolen = true
      const err = stolenError('LockManager.request')
      abortHeld(e, err)
      e.reject(err)
    } else if (ok) {
      e.resolve(value)
    } else {
      e.reject(value)
    }
  }

  // Web Locks "request a lock", steal: the holder's request rejects with an
  // AbortError at once, and its lock's signal aborts; the callback keeps
  // running. A callback whose task was queued before the steal still runs,
  // with its signal aborted, as in threadlock.locks; its release then gives
  // the node back.
  #stolen (e) {
    if (e.stolen || e.state === 'done') return
    e.stolen = true
    const err = stolenError(e.sync ? 'LockManager.requestSync' : 'LockManager.request')
    if (e.sync) {
      e.lost = err
      abortHeld(e, err)
      return
    }
    if (e.state === 'waiting') {
      this.#finish(e)
      e.reject(err)
      return
    }
    abortHeld(e, err)
    e.reject(err)
  }

  // The error of a negative result of the core.
  #error (code, where) {
    switch (code) {
      case C.ECORRUPT:
        return new HostError(codes.ECORRUPT, `${where}: the table file in ${this.#path} is corrupt (an index or entry out of range, or the file shrank or was rebuilt under this process); it is rebuilt when no process uses it`)
      case C.ENAMES:
        return new HostError(codes.EFULL, `${where}: the table in ${this.#path} has no free name entry (${C.NAMES} names at most)`)
      case C.ENODES:
        return new HostError(codes.EFULL, `${where}: the table in ${this.#path} has no free request node (${C.NODES} requests at most)`)
      case C.ECLOSED:
        return new HostError(codes.ECLOSED, `${where}: the lock manager was closed`)
      case C.ETHREAD:
        return new HostError('EAGAIN', `${where}: cannot start a thread (the process or user reached its limit of threads); the request was withdrawn`)
      default:
        return new LockError(lockCodes.EBUSY, `${where}: unexpected result ${code} of the table`)
    }
  }
}

Object.defineProperties(LockManager.prototype, {
  request: { enumerable: true },
  requestSync: { enumerable: true },
  query: { enumerable: true },
  close: { enumerable: true },
  [Symbol.toStringTag]: { value: 'LockManager', writable: false, enumerable: false, configurable: true }
})
Object.defineProperty(LockManager.prototype.request, 'length', { value: 2 })

module.exports = { LockManager, kDoorbell }
