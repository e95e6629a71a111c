'use strict'

// Many short-lived processes through one threadlock/host table: closing,
// exiting while holding, killed while holding or waiting. Afterwards the
// table holds no slot and no request node of theirs. 30 processes in the
// normal suite; 1,000 under `npm run stress` (THREADLOCK_STRESS_SCALE=10).

const assert = require('assert')
const path = require('path')
const { spawn: spawnProcess } = require('child_process')
const { scopeDir } = require('./fixtures/host-harness')
const { createLockManager } = require('../host')

const SCALE = Math.max(1, Number(process.env.THREADLOCK_STRESS_SCALE) || 1)
const SHORT = path.join(__dirname, 'fixtures', 'host-short.js')
const WAYS = ['close', 'exit', 'hang']

function one (dir, how) {
  return new Promise((resolve, reject) => {
    const p = spawnProcess(process.execPath, [SHORT, dir, how], { stdio: ['ignore', 'pipe', 'inherit'] })
    p.stdout.on('data', (d) => {
      if (String(d).includes('holding')) p.kill('SIGKILL')
    })
    p.once('error', reject)
    p.once('exit', (code, signal) => {
      if (how === 'hang' ? signal === 'SIGKILL' : code === 0) resolve()
      else reject(new Error(`a '${how}' process ended with code ${code}, signal ${signal}`))
    })
  })
}

describe('threadlock/host stress: short-lived processes', function () {
  const total = SCALE === 1 ? 30 : 100 * SCALE
  this.timeout(60000 + total * 500)

  it(`${total} processes (closing, exiting, killed -9) leave no slot and no node behind`, async () => {
    const dir = scopeDir()
    // An observer stays attached throughout, so the table is never rebuilt.
    const observer = createLockManager({ path: dir })
    let next = 0
    async function lane () {
      while (next < total) {
        const i = next++
        await one(dir, WAYS[i % WAYS.length])
      }
    }
    await Promise.all([lane(), lane(), lane(), lane()])
    // The last deaths are noticed by the observer's query.
    const snap = await observer.query()
    assert.deepStrictEqual(snap, { held: [], pending: [] })
    const stats = observer.stats()
    assert.strictEqual(stats.slots, 1, 'only the observer is attached')
    assert.strictEqual(stats.nodes, 0, 'no request node left')
    assert.ok(stats.names <= 2, `${stats.names} name entries`)
    // And the lock works.
    assert.strictEqual(await observer.request('life', (lock) => lock.mode), 'exclusive')
    await observer.close()
  })
})
