'use strict'

// A pg.Pool shared by the manager and the callbacks' own queries, as the
// fencing example of docs/api.md does: the manager never takes every
// connection of a pool it is given, so callbacks that write through that
// pool cannot wait for a connection for ever.

const assert = require('assert')
const pg = require('pg')
const { createLockManager } = require('../postgres')
const { config, needServer, unique } = require('./fixtures/pg-env')
const { within } = require('./fixtures/threads')

describe('threadlock/postgres: a pool shared with the callbacks', function () {
  this.timeout(60000)
  before(needServer())

  it("the docs' fencing example with pg's default max 10 and 10 requests on distinct names: every callback writes and finishes", async () => {
    // As docs/api.md: new pg.Pool({ connectionString }), createLockManager(pool).
    const pool = new pg.Pool({ ...config() })
    pool.on('error', () => {})
    const locks = createLockManager(pool)
    const table = `tl_fence_${process.pid}`
    // What the pool holds, for a failure's message: a close() that hangs
    // in the finally would otherwise hide why the try failed.
    const poolState = () => `pool: ${pool.totalCount} clients, ${pool.idleCount} idle, ${pool.waitingCount} waiting`
    let failed = null
    try {
      await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, body text, fence bigint NOT NULL)`)
      const save = async (id, body, token) => {
        await pool.query(`INSERT INTO ${table} VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET body = $2, fence = $3 WHERE ${table}.fence < $3`, [id, body, token.toString()])
      }
      let finished = 0
      const names = Array.from({ length: 10 }, (_, i) => unique(`doc${i}`))
      const all = Promise.all(names.map((name) => locks.request(name, async (lock) => {
        await save(name, 'body', lock.token)
        finished++
      })))
      // Before: every connection held a lock and every callback waited for
      // one: 0 of 10 finished.
      await within(all, 20000, `the 10 callbacks finished (${finished} of 10 did; ${poolState()})`)
      assert.strictEqual(finished, 10)
      assert.strictEqual(locks.maxConnections, 9)
    } catch (err) {
      failed = err
      throw err
    } finally {
      await within(pool.query(`DROP TABLE IF EXISTS ${table}`), 20000, `DROP TABLE (${poolState()})`).catch(() => {})
      await within(locks.close(), 20000, `close() (${poolState()})${failed === null ? '' : `, after: ${failed.message}`}`)
      await pool.end()
    }
  })

  it('a pool of one connection is refused, and so is a maxConnections that leaves the callbacks no connection', () => {
    const one = new pg.Pool({ ...config(), max: 1 })
    const ten = new pg.Pool({ ...config() })
    try {
      assert.throws(() => createLockManager(one), {
        name: 'RangeError',
        message: /^createLockManager: the pg.Pool has max 1: the manager needs one connection per held lock and leaves one at least/
      })
      assert.throws(() => createLockManager(ten, { maxConnections: 10 }), {
        name: 'RangeError',
        message: /^createLockManager: options.maxConnections \(10\) must be less than the pg.Pool's max \(10\)/
      })
      assert.strictEqual(createLockManager(ten, { maxConnections: 9 }).maxConnections, 9)
    } finally {
      one.end()
      ten.end()
    }
  })
})
