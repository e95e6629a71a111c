'use strict'

// A crash of the server (kill -9 of the postmaster and of every process of
// the cluster, as a power cut looks to PostgreSQL) under configurations
// that tuned installations use: fencing tokens handed out before the crash
// are never handed out again. Runs only where the cluster may be crashed
// (see needRestart() in fixtures/pg-env.js).

const assert = require('assert')
const pg = require('pg')
const { createLockManager } = require('../postgres')
const { config, needServer, needRestart, crashServer, unique } = require('./fixtures/pg-env')
const { within } = require('./fixtures/threads')

describe('threadlock/postgres: a server crash', function () {
  this.timeout(120000)

  before(needServer())
  before(needRestart())

  /** Runs `fn(pool)` on a pool of one connection, then ends the pool. */
  async function withPool (fn) {
    const pool = new pg.Pool({ ...config(), max: 1 })
    pool.on('error', () => {})
    try {
      return await fn(pool)
    } finally {
      await pool.end()
    }
  }

  /**
   * Grants `name` in a loop until the server crashes, and returns every
   * token a callback saw, then the first token granted after the restart.
   */
  async function tokensAcrossCrash (name) {
    const manager = createLockManager(config())
    const tokens = []
    try {
      // Several loops at once, so that grants are always in flight.
      let crashed = false
      const loop = async () => {
        while (!crashed) {
          try {
            await manager.request(name, (lock) => { tokens.push(lock.token) })
          } catch {
            return
          }
        }
      }
      const loops = [loop(), loop(), loop()]
      const deadline = Date.now() + 20000
      while (tokens.length < 300) {
        if (Date.now() > deadline) throw new Error(`watchdog: only ${tokens.length} grants in 20 s`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await crashServer()
      crashed = true
      await within(Promise.all(loops), 30000, 'the grant loops ended')
      const after = await within(manager.request(name, (lock) => lock.token), 30000, 'a grant after the restart')
      return { tokens, after }
    } finally {
      await manager.close()
    }
  }

  it('with synchronous_commit = off for the role, a token handed out before the crash is not handed out again', async () => {
    await withPool((pool) => pool.query('ALTER ROLE CURRENT_USER SET synchronous_commit = off'))
    try {
      const { tokens, after } = await tokensAcrossCrash(unique('crash-async-commit'))
      const last = tokens.reduce((a, b) => (b > a ? b : a))
      assert.ok(after > last, `the first token after the crash, ${after}, repeats one handed out before it (up to ${last}; ${tokens.length} grants)`)
    } finally {
      await withPool((pool) => pool.query('ALTER ROLE CURRENT_USER RESET synchronous_commit'))
    }
  })
})
