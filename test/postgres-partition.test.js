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
const { config, needServer, needNft, cut, heal, unique } = require('./fixtures/pg-env')
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
