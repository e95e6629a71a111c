'use strict'

// Allocation failure through the public API: for n = 1, 2, 3... a fresh
// worker runs scenario.js with the nth allocation (counted from its start)
// made to fail, until a pass no longer reaches n. Every pass must end with
// each step either done or failed with code ENOMEM, no waiter or name left
// in the process-wide tables, every lock word free, and, once the worker
// is gone, exactly as many blocks allocated as before it.

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { root, binding } = require('./root')

const SCENARIO = path.join(__dirname, 'scenario.js')
const MAX_N = 2000

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

// Runs one pass; resolves with what the worker posted (or the error it
// died of) once it has exited.
function pass () {
  const worker = new Worker(SCENARIO, { workerData: { root } })
  let result = null
  worker.on('message', (m) => { result = m })
  worker.on('error', (err) => { result = { error: { code: err && err.code, message: String(err && err.stack) } } })
  return new Promise((resolve) => {
    worker.once('exit', (code) => resolve({ code, result }))
  })
}

// The blocks of a worker's thread are freed by its teardown, which may end
// just after the exit event: wait a little for the count to settle.
async function settledLive (expected) {
  let live = binding.allocLive()
  for (let i = 0; i < 100 && live !== expected; i++) {
    await sleep(10)
    live = binding.allocLive()
  }
  return live
}

describe('fault injection: every allocation of a pass over the API fails in turn', function () {
  this.timeout(600000)

  it('ends each pass in success or a clean ENOMEM, leaving nothing behind', async function () {
    // A first pass without a failure: every step works, and the process
    // keeps what it keeps for good (the owner registry's array).
    binding.faultArm(0)
    const warm = await pass()
    assert.strictEqual(warm.code, 0)
    assert.ok(warm.result && warm.result.steps, JSON.stringify(warm.result))
    for (const [name, outcome] of Object.entries(warm.result.steps)) {
      assert.strictEqual(outcome, 'ok', `${name} without a failure`)
    }
    const baseline = await settledLive(binding.allocLive())

    const outcomes = new Set()
    let n
    for (n = 1; n <= MAX_N; n++) {
      binding.faultArm(n)
      const { code, result } = await pass()
      const fired = binding.faultFired()
      binding.faultArm(0)
      const where = `n=${n}: ${JSON.stringify(result)}`

      assert.ok(result !== null, `${where}: the worker posted nothing (exit code ${code})`)
      if (result.error) {
        // Only loading the addon may fail as a whole.
        assert.strictEqual(result.error.code, 'ENOMEM', where)
        outcomes.add('load:ENOMEM')
      } else {
        assert.deepStrictEqual(result.words, result.words.map(() => 0), `${where}: a gate word is not back to free`)
        assert.strictEqual(result.waiters, 0, `${where}: waiters left`)
        assert.strictEqual(result.names, 0, `${where}: names left`)
        for (const [name, outcome] of Object.entries(result.steps)) outcomes.add(`${name}:${outcome}`)
        if (fired) {
          assert.ok(Object.values(result.steps).includes('ENOMEM'),
            `${where}: an allocation failed but no step reported it`)
        }
      }
      assert.strictEqual(binding.totalWaiters(), 0, `${where}: waiters left after exit`)
      assert.strictEqual(binding.namedCount(), 0, `${where}: names left after exit`)
      assert.strictEqual(await settledLive(baseline), baseline, `${where}: blocks leaked`)
      if (!fired) break
    }
    assert.ok(n <= MAX_N, 'the pass never ran out of allocations to fail')
    console.log(`      (${n - 1} allocations failed in turn)`)
    // Each step met a failure in at least one pass.
    for (const name of Object.keys(warm.result.steps)) {
      assert.ok(outcomes.has(`${name}:ENOMEM`), `${name} never met a failure: ${[...outcomes]}`)
    }
    assert.ok(outcomes.has('load:ENOMEM'), 'loading never met a failure')
  })
})
