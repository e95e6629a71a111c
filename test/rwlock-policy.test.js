'use strict'

// RWLock writers under the barging policy, with real threads: writers
// exclude everyone (an exact non-atomic counter, and no reader ever sees a
// writer inside), readers still get in, nobody waits for seconds, and a
// thread's own write requests keep their order.

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { RWLock } = require('..')
const { within, until, finished } = require('./fixtures/threads')

const WORKER = path.join(__dirname, 'fixtures', 'rw-policy-worker.js')

function startWorkers (rw, shared, n, rounds, style) {
  return Array.from({ length: n }, () => {
    return finished(new Worker(WORKER, { workerData: { handle: rw.handle, shared, rounds, style } }))
  })
}

describe('RWLock writers under contention (barging policy)', function () {
  this.timeout(120000)

  for (const [name, style] of [
    ['main runWrite + 3 workers blocking', 'sync'],
    ['main + 3 workers, all promise forms', 'async'],
    ['main + 3 workers alternating forms', 'mixed']
  ]) {
    it(`${name}: writers exclude everyone, exact count, readers get in`, async () => {
      const rw = new RWLock()
      const shared = new SharedArrayBuffer(20)
      const counter = new Int32Array(shared)
      const rounds = 10000
      const reports = startWorkers(rw, shared, 3, rounds, style)
      await until(() => Atomics.load(counter, 1) === 3, 'the workers did not start', 20000)
      Atomics.store(counter, 2, 1)
      let mine = 0
      let longest = 0
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now()
        await rw.runWrite(async () => {
          longest = Math.max(longest, performance.now() - t0)
          assert.strictEqual(Atomics.add(counter, 3, 1), 0, 'two writers inside')
          const v = counter[0]
          if (Math.random() < 0.01) await null
          counter[0] = v + 1
          Atomics.sub(counter, 3, 1)
        })
        mine++
      }
      const done = await within(Promise.all(reports), 60000, 'the workers did not finish')
      const writes = done.reduce((sum, r) => sum + r.writes, mine)
      assert.strictEqual(counter[0], writes, 'lost updates: a writer was not alone')
      assert.ok(counter[4] > 0, 'no reader ever got in')
      assert.ok(longest < 5000, `a write request waited ${longest.toFixed(0)} ms`)
      assert.strictEqual(rw.writer, null)
      assert.strictEqual(rw.readers, 0)
      assert.strictEqual(rw.waiting, 0)
    })
  }

  it('a thread\'s write requests are granted in the order it made them while workers hammer', async () => {
    const rw = new RWLock()
    const shared = new SharedArrayBuffer(20)
    const counter = new Int32Array(shared)
    const reports = startWorkers(rw, shared, 2, 10000, 'sync')
    await until(() => Atomics.load(counter, 1) === 2, 'the workers did not start', 20000)
    Atomics.store(counter, 2, 1)
    const order = []
    const runs = []
    for (let i = 0; i < 100; i++) {
      runs.push(rw.runWrite(() => { order.push(i) }))
      if (i % 13 === 0) await null
    }
    await within(Promise.all(runs), 20000, 'the main thread\'s write requests were not all granted')
    await within(Promise.all(reports), 60000, 'the workers did not finish')
    assert.deepStrictEqual(order, Array.from({ length: 100 }, (_, i) => i))
  })
})
