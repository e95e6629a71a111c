'use strict'

// close() with a timeout bounds a shutdown: requests not yet granted are
// withdrawn at once (here and from the server's queue) instead of waiting
// for other processes to release, and locks whose callbacks have not
// settled when the timeout runs out are released by ending their sessions.

const assert = require('assert')
const pg = require('pg')
const { createLockManager, SessionError } = require('../postgres')
const { config, needServer, unique, serverLocks } = require('./fixtures/pg-env')
const { within, until, sleep } = require('./fixtures/threads')
const { outcome, deferred } = require('./fixtures/named-locks-harness')

describe('threadlock/postgres: close() with a timeout', function () {
  this.timeout(30000)
  let pool
  before(needServer())
  before(() => { pool = new pg.Pool({ ...config(), max: 1 }) })
  after(async () => { if (pool) await pool.end() })

  it('withdraws the requests waiting for a lock another client holds, here and on the server, at once', async () => {
    const other = createLockManager(config())
    const m = createLockManager(config())
    const name = unique('close-queued')
    const release = deferred()
    const granted = deferred()
    const held = other.request(name, async () => { granted.resolve(); await release.promise })
    try {
      await within(granted.promise, 10000, 'the other client holds the lock')
      let ran = 0
      const onServer = outcome(m.request(name, () => { ran++ }))
      const behind = outcome(m.request(name, () => { ran++ }))
      await until(async () => (await serverLocks(pool, name)).some((r) => !r.granted), 'the first request waits on the server', 10000)
      // Before: close() waited until the other client released.
      await within(m.close({ timeout: 5000 }), 3000, 'close({ timeout }) returned while another client holds the lock')
      for (const r of [await onServer, await behind]) {
        assert.ok(r.error instanceof SessionError, String(r.error))
        assert.strictEqual(r.error.code, 'ECLOSED')
        assert.match(r.error.message, /^LockManager.close: the lock manager was closed before the lock was granted/)
      }
      assert.strictEqual(ran, 0)
      await until(async () => (await serverLocks(pool, name)).every((r) => r.granted), 'the wait left the server', 10000)
    } finally {
      release.resolve()
      await held
      await other.close()
      await m.close()
    }
  })

  it('a callback that has not settled when the timeout runs out: its session ends, its signal aborts with ECLOSED, and the lock is free', async () => {
    const m = createLockManager(config())
    const other = createLockManager(config())
    const name = unique('close-held')
    const release = deferred()
    const granted = deferred()
    const held = outcome(m.request(name, async (lock) => { granted.resolve(lock); await release.promise; return 'late' }))
    try {
      const lock = await within(granted.promise, 10000, 'granted')
      const started = Date.now()
      await within(m.close({ timeout: 300 }), 5000, 'close({ timeout: 300 }) returned')
      assert.ok(Date.now() - started >= 250, 'close() returned before its timeout')
      assert.strictEqual(lock.signal.aborted, true)
      assert.ok(lock.signal.reason instanceof SessionError)
      assert.strictEqual(lock.signal.reason.code, 'ECLOSED')
      await until(() => other.request(name, { ifAvailable: true }, (l) => l !== null), 'the lock is free for another client', 10000)
      release.resolve()
      const h = await within(held, 5000, 'the request settled')
      assert.strictEqual(h.error, lock.signal.reason)
    } finally {
      release.resolve()
      await other.close()
    }
  })

  it('a callback that settles within the timeout releases as usual, and its request resolves', async () => {
    const m = createLockManager(config())
    const name = unique('close-in-time')
    const granted = deferred()
    const held = m.request(name, async (lock) => { granted.resolve(); await sleep(300); return lock.signal.aborted })
    await within(granted.promise, 10000, 'granted')
    await within(m.close({ timeout: 10000 }), 5000, 'close() returned once the callback settled')
    assert.strictEqual(await held, false)
    assert.deepStrictEqual(await serverLocks(pool, name), [])
  })

  it('bad options reject with TypeError or RangeError, and change nothing', async () => {
    const m = createLockManager(config())
    try {
      await assert.rejects(m.close(5), { name: 'TypeError', message: 'LockManager.close: options must be an object, received type number' })
      await assert.rejects(m.close({ timeout: '1s' }), { name: 'TypeError', message: /^LockManager.close: options.timeout must be a number of milliseconds, received / })
      await assert.rejects(m.close({ timeout: -1 }), { name: 'RangeError', message: 'LockManager.close: options.timeout must be 0 or more (Infinity allowed), received -1' })
      await assert.rejects(m.close({ timeout: NaN }), { name: 'RangeError' })
      assert.strictEqual(await m.request(unique('still-open'), () => 'open'), 'open')
    } finally {
      await m.close()
    }
  })
})
