'use strict'

// One PostgreSQL session (one connection) lent to one lock request, from the
// moment the request goes to the server until its lock is released. Advisory
// locks belong to the session, so a session ends its locks when it ends: a
// process that dies or a connection that drops frees them at once. A session
// whose state is uncertain (cancelled, failed, lost) is never given back to
// the pool: it is destroyed, which frees whatever it held or waited for.

const crypto = require('crypto')
const { SessionError, codes } = require('./errors')

// Settings given once to every connection the manager uses. The server
// probes an idle client with TCP keepalives, so that a session behind a
// half-open connection (a machine that vanished) ends after about a minute
// instead of the system default of over two hours; and, from PostgreSQL 14
// on, a backend waiting for a lock checks every second that its client is
// still there, so that a killed waiter leaves the lock's queue promptly.
// synchronous_commit = on whatever the role, database or server says: a
// fencing token is handed out only once its write is on disk, so that a
// crash of the server never hands the same token out twice.
// The server's timeouts, which a role, database or server may set, are
// switched off on the manager's sessions: a session that holds a lock sits
// idle, or runs one long lock statement, for as long as the callback
// runs, and a timeout ending it would free the lock while the callback
// still runs (a request's own `timeout` ends a wait from the client).
const SETTINGS = [
  'SET synchronous_commit = on',
  'SET statement_timeout = 0',
  'SET lock_timeout = 0',
  'SET idle_in_transaction_session_timeout = 0',
  'SET tcp_keepalives_idle = 30',
  'SET tcp_keepalives_interval = 10',
  'SET tcp_keepalives_count = 3'
]
const CHECK_INTERVAL = 'SET client_connection_check_interval = 1000'
// From PostgreSQL 12 on: a reply the client does not acknowledge within a
// minute ends the session too. Without it a session cut off while the
// server had a reply in flight is ended only by TCP's retransmission
// limit, about fifteen minutes, since keepalive probes are not sent while
// data waits for an acknowledgement.
const USER_TIMEOUT = 'SET tcp_user_timeout = 60000'

/** The settings of every session, for server_version_num `version`. */
function settingsFor (version) {
  const settings = [...SETTINGS]
  if (version >= 120000) settings.push(USER_TIMEOUT)
  if (version >= 140000) settings.push(CHECK_INTERVAL, 'SET idle_session_timeout = 0')
  return settings
}
const prepared = new WeakSet()

// How often a cancel request is repeated while the statement it targets has
// not ended (a cancel that reaches the backend before the statement starts is
// ignored by the server), and when to give up and drop the connection.
const CANCEL_RETRY_MS = 250
const CANCEL_GIVE_UP_MS = 10000

// A session that holds a lock is asked `SELECT 1` once it has been quiet
// (no answer from the server) for LIVENESS_EVERY_MS, give or take a tick
// of the manager's liveness timer (LockManager#tick, one timer per manager
// every LIVENESS_TICK_MS rather than one per grant), and counts as lost
// when an answer takes longer than LIVENESS_WAIT_MS. Without it a holder
// cut off from the server (a network partition, a half-open connection)
// would hear of it only through the client's TCP keepalive, which a pool
// the user passes may not have and which takes minutes with the system's
// probe interval, while the server ends the session, and grants the lock
// to the next client, about a minute after it last heard from it (the
// tcp_keepalives_* settings above: 30 s + 3 x 10 s). The holder is told
// within LIVENESS_EVERY_MS + LIVENESS_WAIT_MS (10 s) of its last exchange
// with the server, well before that: a tick probes a session quiet for
// LIVENESS_EVERY_MS - LIVENESS_TICK_MS or more, so the probe leaves 4 to 5 s
// after the last exchange.
const LIVENESS_EVERY_MS = 5000
const LIVENESS_TICK_MS = 1000
const LIVENESS_WAIT_MS = 5000

/**
 * What a session lent to one request says about its loss: `reason` is set
 * once (the SessionError ELOCKLOST, or the reason given to end()), and the
 * AbortSignal of the lock held on the session (lock.signal) is made only
 * when it is first read, aborted with the reason if it came first: most
 * callbacks never read it, and making an AbortController and its signal
 * was 6% of the manager's own time per grant in a profile. Each lend makes a new lease, so a lock
 * released long ago never sees the loss of a later holder of the session.
 */
class Lease {
  constructor () {
    this.reason = null
    this.controller = null
  }

  /** The lock's signal, made on first read. */
  signal () {
    if (this.controller === null) {
      this.controller = new AbortController()
      if (this.reason !== null) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }

  /** Records the loss (the first reason counts) and aborts the signal if made. */
  abort (reason) {
    if (this.reason !== null) return
    this.reason = reason
    if (this.controller !== null) this.controller.abort(reason)
  }
}

class Session {
  /**
   * Takes a connection from the pool and prepares it. Runs on the manager's
   * thread; rejects with a SessionError (ECONNECT).
   */
  static async open (manager) {
    let client
    try {
      client = await manager.pool.connect()
    } catch (err) {
      throw new SessionError(codes.ECONNECT, `LockManager.request: could not connect to PostgreSQL: ${err.message}`, { cause: err })
    }
    const session = new Session(manager, client)
    try {
      const version = await manager.names.ensure(client)
      if (!prepared.has(client)) {
        await client.query(settingsFor(version).join('; '))
        prepared.add(client)
      }
    } catch (err) {
      session.destroy()
      if (session.lostReason !== null) throw session.lostReason
      if (err instanceof SessionError) throw err
      throw new SessionError(codes.ECONNECT, `LockManager.request: could not prepare a PostgreSQL session: ${err.message}`, { cause: err })
    }
    return session
  }

  constructor (manager, client) {
    this.manager = manager
    this.client = client
    // Protected by the manager's thread, as every field: the lease of the
    // request the session is lent to (a new one per lend).
    this.lease = new Lease()
    this.released = false
    // Lent to a request (true) or parked in the manager between requests
    // (false, see LockManager#park); a parked session that fails is dead.
    this.lent = true
    this.dead = false
    // Liveness (see LIVENESS_EVERY_MS): when the server last answered on
    // this session while it held a lock (Date.now()), whether a probe is
    // under way, and the session's index in the manager's list of watched
    // sessions (-1 when not watched).
    this.heardAt = 0
    this.probing = false
    this.watchIndex = -1
    // A connection error or its end while the session is lent out means
    // the session, and every lock it held, is gone. The listeners stay on
    // until the session is released, so an error never goes unheard (an
    // unheard 'error' event would end the process).
    this.onError = (err) => this.#lose(err)
    this.onEnd = () => this.#lose(new Error('the connection ended'))
    client.on('error', this.onError)
    client.on('end', this.onEnd)
  }

  /**
   * Asks the server `SELECT 1` (see LIVENESS_EVERY_MS): an answer renews
   * heardAt; no answer within LIVENESS_WAIT_MS, or an error, loses the
   * session. Called by the manager's liveness tick for a session that holds
   * a lock and has been quiet; a probe under way when the lock is released
   * still counts.
   */
  probe () {
    this.probing = true
    const timer = setTimeout(() => {
      this.#lose(new Error(`no answer from the server to a liveness query within ${LIVENESS_WAIT_MS} ms`))
      // The connection is of no use any more: end it, so that nothing
      // waits on it.
      const stream = this.client.connection && this.client.connection.stream
      if (stream) stream.destroy()
    }, LIVENESS_WAIT_MS)
    timer.unref()
    this.client.query('SELECT 1').then(() => {
      clearTimeout(timer)
      this.probing = false
      this.heardAt = Date.now()
    }, (err) => {
      clearTimeout(timer)
      this.probing = false
      this.#lose(err)
    })
  }

  /**
   * Ends the session now, on purpose: the signal aborts with `reason`, and
   * the connection is closed, which frees the session's locks on the
   * server.
   */
  end (reason) {
    if (!this.released) this.lease.abort(reason)
    this.destroy()
  }

  /** Why the session ended while lent out, or null while it has not. */
  get lostReason () { return this.lease.reason }

  /** Lends a parked session to a new request, with a lease of its own. */
  lend () {
    this.lease = new Lease()
    this.lent = true
  }

  /**
   * Parks a clean session (it holds nothing) in the manager between
   * requests: it does not keep the process alive, and a failure then marks
   * it dead instead of aborting the signal of the lock it held last.
   */
  park () {
    this.lent = false
    this.ref(false)
  }

  #lose (err) {
    if (!this.lent) {
      this.dead = true
      return
    }
    if (this.released || this.lease.reason !== null) return
    this.lease.abort(new SessionError(codes.ELOCKLOST, `the PostgreSQL session ended: ${err.message}`, { cause: err }))
  }

  /** The server process id of this session (pg_locks.pid). */
  get pid () { return this.client.processID }

  /**
   * Runs one named statement ({ name, text }, see prepare()) and resolves
   * with its rows. A named statement is parsed and planned once per
   * connection. It is passed to pg as a Query made from its text, with the
   * name set on it, not as a configuration object: pg copies such an
   * object through its property descriptors (Object.defineProperties),
   * which took 10-20 us per statement here, as much as the rest of the
   * manager's work per grant. A client without a Query class (not
   * node-postgres's JavaScript client) gets the configuration object.
   */
  run (statement, values) {
    const client = this.client
    const Query = client.constructor.Query
    if (typeof Query !== 'function') {
      return client.query({ name: statement.name, text: statement.text, values }).then(rowsOf)
    }
    return new Promise((resolve, reject) => {
      const query = new Query(statement.text, values)
      query.name = statement.name
      client.query(query, (err, result) => {
        if (err) reject(err)
        else resolve(result.rows)
      })
    })
  }

  /** Whether the socket keeps the process alive. */
  ref (on) {
    const stream = this.client.connection && this.client.connection.stream
    if (stream && typeof stream.ref === 'function') {
      if (on) stream.ref()
      else stream.unref()
    }
  }

  /**
   * Cancels the statement `running` (a promise of this session's current
   * query) with PostgreSQL's cancel request, repeating it until the
   * statement ends, and then destroys the session. Resolves with the
   * statement's outcome: { ok: true } if it completed before the cancel took
   * effect. Never rejects.
   */
  async cancel (running) {
    let settled = false
    const outcome = running.then(() => ({ ok: true }), (error) => ({ ok: false, error }))
    outcome.then(() => { settled = true })
    const started = Date.now()
    while (!settled && this.lease.reason === null) {
      if (Date.now() - started > CANCEL_GIVE_UP_MS) break
      await sendCancel(this.manager.pg, this.client).catch(() => {})
      await Promise.race([outcome, delay(CANCEL_RETRY_MS)])
    }
    // Ending the connection ends the session and whatever it holds or waits
    // for, even if the statement completed after all.
    this.destroy()
    return outcome
  }

  /** Gives a healthy connection back to the pool. */
  release () {
    if (this.released) return
    this.#detach()
    this.ref(true)
    this.client.release()
  }

  /** Closes the connection: the session and its locks end. */
  destroy () {
    if (this.released) return
    this.#detach()
    // A discarded connection may still report an error as it closes.
    this.client.on('error', ignore)
    this.ref(true)
    this.client.release(new Error('threadlock/postgres: session discarded'))
  }

  #detach () {
    this.released = true
    this.client.removeListener('error', this.onError)
    this.client.removeListener('end', this.onEnd)
  }
}

function ignore () {}

function rowsOf (result) {
  return result.rows
}

/**
 * A statement for Session.run(): its text and its prepared statement name,
 * threadlock_ and a digest of the text, made once per statement (the
 * manager makes its statements when it is created) rather than per run.
 */
function prepare (text) {
  return { name: `threadlock_${crypto.createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text }
}

function delay (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/**
 * Sends the protocol's CancelRequest for `client`'s current statement on a
 * connection of its own, which needs no login and no connection slot.
 */
function sendCancel (pg, client) {
  return new Promise((resolve, reject) => {
    const con = new pg.Connection()
    const timer = setTimeout(() => { con.stream.destroy(); reject(new Error('cancel timed out')) }, 2000)
    con.on('error', (err) => { clearTimeout(timer); con.stream.destroy(); reject(err) })
    con.on('end', () => { clearTimeout(timer); resolve() })
    con.once('connect', () => con.cancel(client.processID, client.secretKey))
    const host = client.host
    if (typeof host === 'string' && host.startsWith('/')) con.connect(`${host}/.s.PGSQL.${client.port}`)
    else con.connect(client.port, host)
  })
}

module.exports = { Session, prepare, LIVENESS_EVERY_MS, LIVENESS_TICK_MS }
