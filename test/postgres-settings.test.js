'use strict'

// Role settings that tuned installations use, which would end or cut short
// the manager's sessions: idle_session_timeout (PostgreSQL 14+),
// idle_in_transaction_session_timeout, statement_timeout and lock_timeout.
// The manager switches them off on its sessions, so a lock stays held for
// as long as its callback runs and a wait lasts as long as the request's
// own timeout says. Each test sets the role's default and resets it.

const assert = require('assert')
const pg = require('pg')
const { createLockManager } = require('../postgres')
const { config, needServer, unique } = require('./fixtures/pg-env')
const { within, sleep } = require('./fixtures/threads')
const { outcome, deferred } = require('./fixtures/named-locks-harness')

describe('threadlock/postgres: role timeouts do not end the lock', function () {
  this.timeout(60000)
  let admin
  before(needServer())
  before(() => {
    admin = new pg.Pool({ ...config(), max: 1 })
  })
  after(async () => {
    if (admin) await admin.end()
  })

  async function withRoleSetting (setting, value, fn) {
    await admin.query(`ALTER ROLE CURRENT_USER SET ${setting} = '${value}'`)
    try {
      return await fn()
    } finally {
      await admin.query(`ALTER ROLE CURRENT_USER RESET ${setting}`)
    }
  }

  /**
   * Holds a lock on one manager for `ms` while another process's manager
   * asks for it with ifAvailable every 200 ms: no grant may come while the
   * first callback runs.
   */
  async function holdWhileOthersTry (ms) {
    const a = createLockManager(config())
    const b = createLockManager(config())
    try {
      const name = unique('timeouts')
      let running = false
      const stolen = []
      const granted = deferred()
      const held = outcome(a.request(name, async (lock) => {
        running = true
        granted.resolve(lock)
        await sleep(ms)
        running = false
        return lock.signal.aborted
      }))
      const lock = await within(granted.promise, 10000, 'the first callback runs')
      while (running) {
        await b.request(name, { ifAvailable: true }, (l) => { if (l !== null && running) stolen.push(Date.now()) })
        await sleep(200)
      }
      const h = await within(held, 10000, 'the first request settled')
      assert.deepStrictEqual(stolen, [], 'another manager was granted the lock while the first callback ran')
      assert.strictEqual(lock.signal.aborted, false, String(lock.signal.reason))
      assert.strictEqual(h.error, undefined, String(h.error))
    } finally {
      await a.close()
      await b.close()
    }
  }

  it("idle_session_timeout = '1s' on the role: no other client is granted while the first callback runs (3 s)", async function () {
    const { rows: [{ v }] } = await admin.query("SELECT current_setting('server_version_num')::int AS v")
    if (v < 140000) {
      process.stderr.write('\n  !!! SKIPPING the idle_session_timeout test: PostgreSQL 14 or later has it !!!\n\n')
      this.skip()
    }
    await withRoleSetting('idle_session_timeout', '1s', () => holdWhileOthersTry(3000))
  })

  it("statement_timeout = '1s' and lock_timeout = '1s' on the role: a request waits for as long as the lock is held (3 s)", async () => {
    await withRoleSetting('statement_timeout', '1s', () => withRoleSetting('lock_timeout', '1s', async () => {
      const a = createLockManager(config())
      const b = createLockManager(config())
      try {
        const name = unique('wait')
        const release = deferred()
        const granted = deferred()
        const held = a.request(name, async () => { granted.resolve(); await release.promise })
        await within(granted.promise, 10000, 'the holder granted')
        const waited = outcome(b.request(name, (lock) => lock.token))
        await sleep(3000)
        release.resolve()
        await held
        const w = await within(waited, 10000, 'the waiter settled')
        assert.strictEqual(w.error, undefined, String(w.error))
        assert.strictEqual(typeof w.value, 'bigint')
      } finally {
        await a.close()
        await b.close()
      }
    }))
  })
})
