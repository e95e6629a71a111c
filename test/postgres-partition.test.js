'use strict'

// A holder cut off from the server by a network partition (nftables drops
// every packet of its connection, both ways), on a pg.Pool the user made
// without TCP keepalive (pg's default): the holder's lock.signal fires
// before the server, which ends the session after its own keepalive
// probes, grants the lock to the next client. Two holders that each
// believe they hold is the failure.

const assert = require('assert')
const pg = require('pg')
const { createLockManager, SessionError } = require('../postgres')
const { config, needServer, needNft, cut, blackhole, heal, unique, unusedPort } = require('./fixtures/pg-env')
const { within } = require('./fixtures/threads')
const { outcome, deferred } = require('./fixtures/named-locks-harness')

describe('threadlock/postgres: a partition between a holder and the server', function () {
  this.timeout(150000)
  before(needServer())
  before(needNft())
  afterEach(heal)

  it('a holder on a pool without keepalive is told through lock.signal before another client is granted', async () => {
    const userPool = new pg.Pool({ ...config() }) // no keepAlive
    userPool.on('error', () => {})
    const holder = createLockManager(userPool)
    const waiter = createLockManager(config())
    const admin = new pg.Pool({ ...config(), max: 1 })
    const name = unique('partition')
    const release = deferred()
    const granted = deferred()
    let lostAt = null
    const held = outcome(holder.request(name, async (lock) => {
      lock.signal.addEventListener('abort', () => { lostAt = Date.now() })
      granted.resolve(lock)
      await release.promise
    }))
    try {
      const lock = await within(granted.promise, 10000, 'the holder granted')
      const { rows: [row] } = await admin.query(
        `SELECT a.client_port, current_setting('port')::int AS port FROM pg_stat_activity a
          WHERE a.pid = (SELECT clientId::int FROM (SELECT $1::text AS clientId) x)`, [(await holder.query()).held.find((l) => l.name === name).clientId])
      cut(row.client_port, row.port)
      const cutAt = Date.now()
      let waiterAt = null
      const waited = outcome(waiter.request(name, () => { waiterAt = Date.now() }))
      // The server ends the cut session after about a minute (its
      // keepalive settings) and grants the waiter.
      await within(waited, 120000, 'the waiter granted once the server ended the cut session')
      assert.ok(waiterAt !== null)
      assert.ok(lostAt !== null, `the waiter was granted ${waiterAt - cutAt} ms after the cut while the holder's signal had not fired: two holders`)
      assert.ok(lostAt < waiterAt, `the holder's signal fired ${lostAt - waiterAt} ms after the waiter was granted`)
      assert.ok(lock.signal.reason instanceof SessionError)
      assert.strictEqual(lock.signal.reason.code, 'ELOCKLOST')
      release.resolve()
      const h = await within(held, 10000, 'the holder settled')
      assert.strictEqual(h.error, lock.signal.reason)
    } finally {
      heal()
      release.resolve()
      await within(held, 20000, 'the holder settled').catch(() => {})
      await holder.close()
      await waiter.close()
      await userPool.end()
      await admin.end()
    }
  })
})

describe('threadlock/postgres: a server that does not answer', function () {
  this.timeout(60000)
  before(needServer())
  before(needNft())
  afterEach(heal)

  it('a request fails with ECONNECT within the pool\'s connection timeout (10 s by default), and close() returns at once', async () => {
    const port = unusedPort()
    blackhole(port)
    const m = createLockManager({ host: '127.0.0.1', port, user: 'nobody', password: 'x', database: 'nothing' })
    try {
      const started = Date.now()
      let ran = false
      const got = await within(outcome(m.request(unique('unreachable'), () => { ran = true })), 30000,
        'the request settled (without a connection timeout it waits about two minutes)')
      assert.strictEqual(ran, false)
      assert.ok(got.error instanceof SessionError, String(got.error))
      assert.strictEqual(got.error.code, 'ECONNECT')
      assert.match(got.error.message, /^LockManager.request: could not connect to PostgreSQL: /)
      assert.ok(Date.now() - started >= 5000, `the request failed after ${Date.now() - started} ms, before the timeout`)
      // A shorter timeout of the configuration is kept.
      const quick = createLockManager({ host: '127.0.0.1', port, user: 'nobody', database: 'nothing', connectionTimeoutMillis: 500 })
      const q = await within(outcome(quick.request(unique('unreachable'), () => {})), 10000, 'the request settled')
      assert.strictEqual(q.error.code, 'ECONNECT')
      await within(quick.close(), 5000, 'close()')
    } finally {
      await within(m.close(), 5000, 'close()')
    }
  })
})
