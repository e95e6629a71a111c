'use strict'

// The server stops and starts again while one request holds a lock and
// another waits for it: both hear of it with a clear error, requests made
// while it is down fail with ECONNECT, and afterwards nothing is locked and
// new requests are granted. Stopping the cluster is allowed only where
// THREADLOCK_PG_RESTART=1 says so (.ci/run does, for the cluster it started,
// named by THREADLOCK_PG_CLUSTER as "<version> <name>"). Where the server
// tests are required (CI or THREADLOCK_PG_REQUIRED=1), a run that may not
// restart the cluster fails instead of skipping.

const assert = require('assert')
const { execFileSync } = require('child_process')
const pg = require('pg')
const { createLockManager, SessionError } = require('../postgres')
const { config, needServer, unique, leftovers, REQUIRED } = require('./fixtures/pg-env')
const { within } = require('./fixtures/threads')
const { deferred, outcome } = require('./fixtures/named-locks-harness')

const ALLOWED = process.env.THREADLOCK_PG_RESTART === '1'
const CLUSTER = (process.env.THREADLOCK_PG_CLUSTER || '').split(/\s+/).filter(Boolean)

function pgCtlCluster (action) {
  execFileSync('pg_ctlcluster', [...CLUSTER, action], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 60000 })
}

describe('threadlock/postgres: a server restart in the middle', function () {
  this.timeout(90000)

  before(needServer())
  before(function () {
    if (!ALLOWED || CLUSTER.length !== 2) {
      if (REQUIRED) {
        throw new Error('the server restart test is required here (CI or THREADLOCK_PG_REQUIRED is set) but may not run: set THREADLOCK_PG_RESTART=1 and THREADLOCK_PG_CLUSTER="<version> <name>" (.ci/run does)')
      }
      process.stderr.write('\n  !!! SKIPPING the server restart test: set THREADLOCK_PG_RESTART=1 and THREADLOCK_PG_CLUSTER="<version> <name>" to allow it to restart that cluster !!!\n\n')
      this.skip()
    }
  })

  it('the holder is told through its signal, the waiter and new requests get clear errors, and nothing stays locked', async () => {
    const holderManager = createLockManager(config())
    const waiterManager = createLockManager(config())
    const pool = new pg.Pool({ ...config(), max: 1 })
    pool.on('error', () => {})
    let stopped = false
    try {
      const name = unique('restart')
      const granted = deferred()
      const release = deferred()
      const held = outcome(holderManager.request(name, async (lock) => {
        granted.resolve(lock)
        await release.promise
        return 'finished'
      }))
      const lock = await within(granted.promise, 10000, 'the holder granted')
      const lost = new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)))
      let waiterRan = false
      const waiting = outcome(waiterManager.request(name, () => { waiterRan = true }))
      const deadline = Date.now() + 10000
      while ((await leftovers(pool)).filter((r) => r.name === name && !r.granted).length !== 1) {
        if (Date.now() > deadline) throw new Error('watchdog: the waiter never reached the server')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }

      pgCtlCluster('stop')
      stopped = true
      const reason = await within(lost, 10000, "the holder's signal aborted")
      assert.ok(reason instanceof SessionError)
      assert.strictEqual(reason.code, 'ELOCKLOST')
      const w = await within(waiting, 10000, 'the waiter settled')
      assert.ok(w.error instanceof SessionError, String(w.error && w.error.stack))
      assert.strictEqual(w.error.code, 'EWAITLOST')
      assert.match(w.error.message, /^LockManager.request: the PostgreSQL session ended while requesting lock /)
      assert.strictEqual(waiterRan, false)
      const down = await outcome(waiterManager.request(name, () => 'ran'))
      assert.ok(down.error instanceof SessionError)
      assert.strictEqual(down.error.code, 'ECONNECT')

      pgCtlCluster('start')
      stopped = false
      // The holder's callback ends after the lock was lost: its request
      // rejects with the same error as its signal.
      release.resolve()
      const h = await held
      assert.strictEqual(h.error, reason)
      assert.deepStrictEqual(await leftovers(pool), [])
      const token = await waiterManager.request(name, (l) => l.token)
      assert.ok(token > lock.token)
      assert.strictEqual(await holderManager.request(name, { ifAvailable: true }, (l) => l !== null), true)
      assert.deepStrictEqual((await holderManager.query()).held.filter((l) => l.name === name), [])
    } finally {
      if (stopped) pgCtlCluster('start')
      await holderManager.close()
      await waiterManager.close()
      await pool.end()
    }
  })
})
