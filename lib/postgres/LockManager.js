'use strict'

// A LockManager (Web Locks semantics) over PostgreSQL session-level advisory
// locks. Every request that goes to the server does so on a session of its
// own, since locks of one session never conflict with each other. Within
// one manager the requests of a name keep the order they were made in: a
// request goes to the server only once every earlier request of its name is
// held, so at most one request per name waits on the server while later
// ones wait here, without a connection. Across processes the server's lock
// queue decides, and it is first come, first served.

const { parseRequest, describe } = require('./options')
const { requestTimer, timeoutRequestError } = require('../requestOptions')
const { SessionError, codes, endsSession } = require('./errors')
const { Session, LIVENESS_EVERY_MS, LIVENESS_TICK_MS } = require('./session')
const { Slots } = require('./slots')
const { NameTable } = require('./names')
const { createLock } = require('./Lock')

// States of a request (an entry of its name's queue).
const LOCAL = 'local' // behind an earlier request of its name, here
const STARTING = 'starting' // taking a slot and a session, finding the key
const WAITING = 'waiting' // its lock statement runs on the server
const HELD = 'held'

// How long a clean session stays parked in the manager for the next
// request before it goes back to the pool.
const PARK_MS = 1000

// A request: an entry of its name's queue, from request() until it settles.
// Every field is the manager's (one thread); all are set here, so that
// every request has one shape.
class Request {
  constructor (r, resolve, reject) {
    this.name = r.name
    this.mode = r.mode
    this.ifAvailable = r.ifAvailable
    this.ref = r.ref
    this.signal = r.signal
    this.timeout = r.timeout
    this.callback = r.callback
    this.resolve = resolve
    this.reject = reject
    this.state = LOCAL
    // Set once it is out of its queue (granted and released, rejected).
    this.done = false
    // The session lent to it (from STARTING on), and the promise of its
    // lock statement while that runs on the server (WAITING).
    this.session = null
    this.running = null
    // Its place in the line for a slot (Slots.take()) when it had to wait
    // for one, and whether it owns a slot.
    this.ticket = null
    this.slot = false
    // The listener on `signal`, and the function that stops the timeout.
    this.onAbort = null
    this.stopTimer = null
    // The cancel of its lock statement (Session.cancel()) after an abort.
    this.cancelled = null
  }
}

class LockManager {
  #pg
  #pool
  #ownPool
  #slots
  #queues = new Map()
  // Requests started (#run) and not yet finished with their slot and
  // session, and the promise close() waits on until that count is 0.
  #active = 0
  #drain = null
  #closed = false
  // Sessions holding a lock, for the liveness tick (see #watch), and its
  // timer, which runs while any is held.
  #watched = []
  #ticker = null
  // Clean sessions parked between requests, newest last, so that a request
  // need not take a connection from the pool and prepare it (see #park).
  #idle = []
  #sweeper = null

  /** Use createLockManager(). */
  constructor (pg, pool, ownPool, settings) {
    this.#pg = pg
    this.#pool = pool
    this.#ownPool = ownPool
    this.#slots = new Slots(settings.maxConnections)
    this.namespace = settings.namespace
    this.names = new NameTable(settings.table, settings.namespace)
    this.maxConnections = settings.maxConnections
  }

  get pg () { return this.#pg }
  get pool () { return this.#pool }

  /**
   * Requests the lock `name` and runs `callback(lock)` once it is granted
   * (or `callback(null)` with ifAvailable when it is not available now).
   */
  request (name, options, callback) {
    // Not an async function: its promise would only pass on the one below,
    // a few more promise jobs per request.
    let r
    try {
      r = parseRequest(name, options, callback)
      if (this.#closed) throw new SessionError(codes.ECLOSED, 'LockManager.request: the lock manager is closed')
      if (r.signal !== undefined && r.signal.aborted) throw r.signal.reason
    } catch (err) {
      return Promise.reject(err)
    }
    let queue = this.#queues.get(r.name)
    if (r.ifAvailable && queue !== undefined && !grantableHere(queue, r.mode)) {
      return Promise.resolve().then(() => r.callback(null))
    }
    if (queue === undefined) {
      queue = []
      this.#queues.set(r.name, queue)
    }
    return new Promise((resolve, reject) => {
      const e = new Request(r, resolve, reject)
      if (r.signal !== undefined) {
        e.onAbort = () => this.#abort(e, r.signal.reason)
        r.signal.addEventListener('abort', e.onAbort, { once: true })
      }
      // The timeout runs from the request until the lock is held, through
      // every wait: here, for a session, and on the server.
      if (r.timeout !== Infinity) e.stopTimer = requestTimer(r.timeout, () => this.#abort(e, timeoutRequestError(r)))
      queue.push(e)
      this.#pump(r.name)
    })
  }

  /** Resolves with the held and pending locks of every client of the server. */
  async query () {
    if (this.#closed) throw new SessionError(codes.ECLOSED, 'query: the lock manager is closed')
    const version = await this.names.ensure(this.#pool)
    const snapshot = { held: [], pending: [] }
    for (const row of await this.names.locks(this.#pool, version)) {
      ;(row.held ? snapshot.held : snapshot.pending).push({ name: row.name, mode: row.mode, clientId: row.clientId })
    }
    // Requests of this manager that the server cannot see yet.
    for (const queue of this.#queues.values()) {
      for (const e of queue) {
        if (e.state === LOCAL || e.state === STARTING) snapshot.pending.push({ name: e.name, mode: e.mode, clientId: 'local' })
      }
    }
    return snapshot
  }

  /**
   * Refuses new requests, waits until every request made so far has
   * settled, and ends the pool if the manager created it. With
   * `options.timeout` (milliseconds, Infinity allowed), the requests not
   * yet granted are withdrawn at once (they reject with ECLOSED and leave
   * the server's queue), and the locks still held when the timeout runs
   * out are released by ending their sessions: their signals abort with
   * ECLOSED, and their requests reject with it once the callbacks settle.
   */
  async close (options) {
    const timeout = closeTimeout(options)
    this.#closed = true
    this.#releaseParked()
    if (timeout !== undefined) {
      const withdrawn = new SessionError(codes.ECLOSED, 'LockManager.close: the lock manager was closed before the lock was granted')
      for (const queue of [...this.#queues.values()]) {
        for (const e of [...queue]) {
          if (e.state !== HELD) this.#abort(e, withdrawn)
        }
      }
      if (timeout !== Infinity && !(await this.#settledWithin(timeout))) {
        const ended = new SessionError(codes.ECLOSED, `LockManager.close: the lock manager was closed and its timeout of ${timeout} ms ran out before the callback settled: the lock was released`)
        for (const queue of [...this.#queues.values()]) {
          for (const e of queue) {
            if (e.state === HELD && e.session !== null) e.session.end(ended)
          }
        }
        // The requests of those locks settle when their callbacks do; what
        // is left to wait for is their cleanup, which needs no server.
        this.#releaseParked()
        this.#stopTicker()
        if (this.#ownPool && !this.#pool.ended) await this.#pool.end()
        return
      }
    }
    await this.#drained()
    this.#releaseParked()
    this.#stopTicker()
    if (this.#ownPool && !this.#pool.ended) await this.#pool.end()
  }

  // Resolves once no request is started (#active is 0).
  #drained () {
    if (this.#active === 0) return Promise.resolve()
    if (this.#drain === null) {
      let resolve
      const promise = new Promise((_resolve) => { resolve = _resolve })
      this.#drain = { promise, resolve }
    }
    return this.#drain.promise
  }

  // A started request is finished with its slot and session.
  #finished () {
    if (--this.#active === 0 && this.#drain !== null) {
      this.#drain.resolve()
      this.#drain = null
    }
  }

  // Resolves with whether every request settled within `ms`.
  async #settledWithin (ms) {
    let timer
    const expired = new Promise((resolve) => { timer = setTimeout(resolve, ms, false) })
    const settled = this.#drained().then(() => true)
    try {
      return await Promise.race([settled, expired])
    } finally {
      clearTimeout(timer)
    }
  }

  // Starts the first request of `name` that is not held, if it waits here.
  #pump (name) {
    const queue = this.#queues.get(name)
    if (queue === undefined) return
    if (queue.length === 0) {
      this.#queues.delete(name)
      return
    }
    for (const e of queue) {
      if (e.state === HELD) continue
      if (e.state === LOCAL) {
        e.state = STARTING
        this.#active++
        this.#run(e)
      }
      return
    }
  }

  // Takes `e` out of its queue; the next request of its name may start.
  #retire (e) {
    e.done = true
    if (e.stopTimer !== null) e.stopTimer()
    if (e.onAbort !== null) e.signal.removeEventListener('abort', e.onAbort)
    const queue = this.#queues.get(e.name)
    const i = queue === undefined ? -1 : queue.indexOf(e)
    if (i !== -1) queue.splice(i, 1)
    this.#pump(e.name)
  }

  // Web Locks "signal to abort the request": the request rejects at once
  // with the reason and leaves every queue. A lock statement still running
  // on the server is cancelled there, by #run. A timeout that runs out
  // does the same with its LockError.
  #abort (e, reason) {
    if (e.done) return
    const session = e.session
    const running = e.running
    this.#retire(e)
    e.reject(reason)
    if (e.ticket !== null) e.ticket.withdraw()
    if (running !== null && e.state === WAITING) e.cancelled = session.cancel(running)
  }

  // One request from its start to its release. This function owns the
  // request's slot and session and gives both back on every path; it
  // never rejects. The steps that need no server (a free slot, a parked
  // session, a known key, a token the marker covers) run without a promise
  // job between them.
  async #run (e) {
    let held = false
    try {
      if (!this.#slots.tryTake()) {
        e.ticket = this.#slots.take()
        if (!(await e.ticket.granted)) return
      }
      e.slot = true
      if (e.done) return
      e.session = this.#unpark()
      if (e.session === null) e.session = await Session.open(this)
      else if (this.names.ready === null || this.names.oid === null) await this.#prepare(e.session)
      e.session.ref(e.ref)
      if (e.done) return
      const session = e.session
      let key = this.names.cachedKey(e.name)
      if (key === undefined) {
        key = await this.names.keyOf(session.client, e.name)
        if (e.done) return
      }
      const statements = this.names.statements[e.mode]
      const oid = this.names.oid
      let rows
      if (e.ifAvailable) {
        rows = await session.run(statements.try, [this.namespace, key, oid])
        if (rows.length === 0) throw this.#recreated(e)
        if (!rows[0].ok) {
          this.#retire(e)
          settle(e, () => e.callback(null))
          return
        }
      } else {
        e.state = WAITING
        e.running = session.run(statements.lock, [this.namespace, key, oid])
        rows = await e.running
        e.running = null
        if (rows.length === 0) throw this.#recreated(e)
      }
      held = true
      if (e.done) return
      session.heardAt = Date.now()
      let token = this.names.coveredToken(session.client, rows[0].n)
      if (token === undefined) {
        token = await this.names.token(session.client, rows[0].n)
        if (e.done) return
      }
      e.state = HELD
      if (e.stopTimer !== null) e.stopTimer()
      if (e.onAbort !== null) e.signal.removeEventListener('abort', e.onAbort)
      this.#pump(e.name)
      this.#watch(session)
      const lease = session.lease
      let ok = true
      let value
      try {
        value = await e.callback(createLock(e.name, e.mode, token, lease))
      } catch (error) {
        ok = false
        value = error
      }
      this.#unwatch(session)
      // The lock is released before the request settles, as in Web Locks.
      const lost = lease.reason !== null
      if (!lost) held = !(await this.#unlock(session, statements.unlock, key))
      this.#retire(e)
      if (lost) e.reject(lease.reason)
      else if (ok) e.resolve(value)
      else e.reject(value)
    } catch (err) {
      if (!e.done) {
        this.#retire(e)
        e.reject(this.#explain(e, err))
      }
      held = true
    } finally {
      if (e.cancelled !== null) await e.cancelled
      if (e.session !== null) {
        // A session that holds (or may hold) a lock is ended, not reused.
        if (held || e.session.lostReason !== null || e.cancelled !== null) e.session.destroy()
        else this.#park(e.session)
      }
      if (e.slot) this.#slots.give()
      this.#finished()
    }
  }

  // Watches a session that holds a lock (see LIVENESS_EVERY_MS in
  // session.js): one timer per manager ticks every LIVENESS_TICK_MS while
  // any session is watched and probes those quiet for long enough, instead
  // of a timer per grant. The list is an array with each session's index
  // in it, so that adding and removing are O(1) without a Set's or Map's
  // reallocation as it empties.
  #watch (session) {
    session.watchIndex = this.#watched.length
    this.#watched.push(session)
    if (this.#ticker === null) {
      this.#ticker = setInterval(() => this.#tick(), LIVENESS_TICK_MS)
      this.#ticker.unref()
    }
  }

  #unwatch (session) {
    const i = session.watchIndex
    if (i === -1) return
    const last = this.#watched.pop()
    if (last !== session) {
      this.#watched[i] = last
      last.watchIndex = i
    }
    session.watchIndex = -1
  }

  #tick () {
    if (this.#watched.length === 0) {
      this.#stopTicker()
      return
    }
    const quiet = Date.now() - (LIVENESS_EVERY_MS - LIVENESS_TICK_MS)
    for (const session of this.#watched) {
      if (!session.probing && session.heardAt <= quiet && !session.released && session.lostReason === null) session.probe()
    }
  }

  #stopTicker () {
    if (this.#ticker !== null) clearInterval(this.#ticker)
    this.#ticker = null
  }

  // Parks a clean session for the next request. Bound: a session is
  // parked just before its request gives its slot back, and a request that
  // takes a slot takes a parked session if there is one (synchronously,
  // #unpark) and opens one only if there is none; so parked sessions never
  // outnumber free slots, and sessions in use plus parked ones never
  // exceed maxConnections. Sessions parked for over PARK_MS go back to the
  // pool, and close() gives back all of them.
  #park (session) {
    if (this.#closed || session.dead) {
      session.release()
      return
    }
    session.park()
    session.parkedAt = Date.now()
    this.#idle.push(session)
    if (this.#sweeper === null) {
      this.#sweeper = setInterval(() => {
        const cutoff = Date.now() - PARK_MS
        const keep = []
        for (const s of this.#idle) {
          if (s.parkedAt >= cutoff && !s.dead) keep.push(s)
          else s.release()
        }
        this.#idle = keep
        if (keep.length === 0) this.#stopSweeper()
      }, PARK_MS)
      this.#sweeper.unref()
    }
  }

  // Prepares the name table again (after reset()) on a parked session.
  async #prepare (session) {
    try {
      await this.names.ensure(session.client)
    } catch (err) {
      if (err instanceof SessionError) throw err
      throw new SessionError(codes.ECONNECT, `LockManager.request: could not prepare a PostgreSQL session: ${err.message}`, { cause: err })
    }
  }

  // Takes the newest parked session that did not fail, or returns null.
  #unpark () {
    while (this.#idle.length > 0) {
      const session = this.#idle.pop()
      if (session.dead) {
        session.destroy()
        continue
      }
      session.lend()
      return session
    }
    return null
  }

  #releaseParked () {
    for (const s of this.#idle.splice(0)) s.release()
    this.#stopSweeper()
  }

  #stopSweeper () {
    if (this.#sweeper !== null) clearInterval(this.#sweeper)
    this.#sweeper = null
  }

  // Releases a lock; resolves with whether the session is clean again.
  async #unlock (session, statement, key) {
    try {
      const [{ ok }] = await session.run(statement, [this.namespace, key])
      return ok === true
    } catch {
      return false
    }
  }

  // The name table is not the one whose keys this manager knows: the next
  // request prepares it again.
  #recreated (e) {
    this.names.reset()
    return new SessionError(codes.ETABLE,
      `LockManager.request: the name table ${this.names.table} was dropped and created again while in use; lock ${JSON.stringify(e.name)} was not taken (the next request reads the new table)`)
  }

  // The error a failed request rejects with.
  #explain (e, err) {
    if (err instanceof SessionError) return err
    if (err && err.code === '42P01') {
      this.names.reset()
      return new SessionError(codes.ETABLE,
        `LockManager.request: the name table ${this.names.table} is missing (dropped while in use?); lock ${JSON.stringify(e.name)} was not taken: ${err.message}`, { cause: err })
    }
    if (e.session !== null && (e.session.lostReason !== null || endsSession(err))) {
      return new SessionError(codes.EWAITLOST,
        `LockManager.request: the PostgreSQL session ended while requesting lock ${JSON.stringify(e.name)}: ${err.message}`, { cause: err })
    }
    return err
  }
}

// Checks close()'s options; returns the timeout, or undefined for none.
function closeTimeout (options) {
  if (options === undefined) return undefined
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`LockManager.close: options must be an object, received ${describe(options)}`)
  }
  const t = options.timeout
  if (t === undefined) return undefined
  if (typeof t !== 'number') throw new TypeError(`LockManager.close: options.timeout must be a number of milliseconds, received ${describe(t)}`)
  if (!(t >= 0)) throw new RangeError(`LockManager.close: options.timeout must be 0 or more (Infinity allowed), received ${t}`)
  return t
}

// Whether an ifAvailable request could be granted as far as this manager
// knows: its name has no request waiting, and none held that conflicts.
function grantableHere (queue, mode) {
  for (const e of queue) {
    if (e.state !== HELD) return false
    if (e.mode === 'exclusive' || mode === 'exclusive') return false
  }
  return true
}

// Settles a request with the outcome of `fn()` (an ifAvailable null callback).
async function settle (e, fn) {
  try {
    e.resolve(await fn())
  } catch (error) {
    e.reject(error)
  }
}

Object.defineProperties(LockManager.prototype, {
  request: { enumerable: true },
  query: { enumerable: true },
  [Symbol.toStringTag]: { value: 'LockManager', writable: false, enumerable: false, configurable: true }
})
Object.defineProperty(LockManager.prototype.request, 'length', { value: 2 })

module.exports = { LockManager }
