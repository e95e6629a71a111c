'use strict'

// AsyncLock's default policy under real threads: barging with one woken
// waiter in flight, slices that end in a hand-off, a thread's own requests
// in order, and the promise-API reservation. Mutual exclusion is checked
// with a non-atomic counter in every shape of issue 11 (all promise
// requests on 4 and 8 threads; the main thread's promise requests against
// blocking workers), with random pauses inside and outside the lock.

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { AsyncLock } = require('..')
const { within, until, sleep, finished } = require('./fixtures/threads')

const WORKER = path.join(__dirname, 'fixtures', 'policy-worker.js')

// Starts `n` workers in `style` and resolves with their reports once each
// has exited; every listener is attached before a worker can post or exit.
function startWorkers (lock, shared, n, rounds, style, jitter) {
  return Array.from({ length: n }, () => {
    return finished(new Worker(WORKER, { workerData: { handle: lock.handle, shared, rounds, style, jitter } }))
  })
}

async function shape (threads, style, rounds, jitter) {
  const lock = new AsyncLock()
  const shared = new SharedArrayBuffer(12)
  const counter = new Int32Array(shared)
  const reports = startWorkers(lock, shared, threads - 1, rounds, style, jitter)
  await until(() => Atomics.load(counter, 1) === threads - 1, 'the workers did not start', 20000)
  Atomics.store(counter, 2, 1)
  let longest = 0
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now()
    await lock.executeLocked(async () => {
      longest = Math.max(longest, performance.now() - t0)
      const v = counter[0]
      if (jitter && Math.random() < 0.01) await null
      counter[0] = v + 1
    })
    if (jitter && Math.random() < 0.001) await sleep(1)
  }
  const done = await within(Promise.all(reports), 60000, 'the workers did not finish')
  assert.strictEqual(counter[0], threads * rounds, 'lost updates: the lock did not exclude')
  assert.strictEqual(lock.locked, false)
  assert.strictEqual(lock.waiting, 0)
  return Math.max(longest, ...done.map((r) => r.longest))
}

describe('AsyncLock default policy under contention', function () {
  this.timeout(120000)

  for (const [name, threads, style] of [
    ['A: main + 3 workers, all executeLocked', 4, 'async'],
    ['B: main + 7 workers, all executeLocked', 8, 'async'],
    ['C: main executeLocked + 3 workers blocking lock()', 4, 'sync'],
    ['main + 3 workers alternating lock() and executeLocked', 4, 'mixed']
  ]) {
    it(`${name}: an exact non-atomic counter, and no request waits for seconds`, async () => {
      const longest = await shape(threads, style, 20000, true)
      // Generous: a slice is 0.3 ms; seconds would mean a starved request.
      assert.ok(longest < 5000, `a request waited ${longest.toFixed(0)} ms`)
    })
  }

  it('a holder that releases once and stops does not leave a woken waiter stranded', async () => {
    // Each round: a worker blocks in lock() behind the main thread, which
    // releases once and then takes nothing; the worker must get the lock at
    // once, whatever the woken bit said when the release happened.
    const lock = new AsyncLock()
    const shared = new SharedArrayBuffer(12)
    const counter = new Int32Array(shared)
    const rounds = 200
    const reports = startWorkers(lock, shared, 1, rounds, 'step', false)
    await until(() => Atomics.load(counter, 1) === 1, 'the worker did not start', 20000)
    for (let i = 0; i < rounds; i++) {
      lock.lock()
      Atomics.store(counter, 2, i + 1)
      Atomics.notify(counter, 2)
      await until(() => lock.waiting === 1, `round ${i}: the worker did not queue`)
      lock.unlock()
      await until(() => counter[0] === i + 1, `round ${i}: the worker never got the lock`)
    }
    await within(Promise.all(reports), 20000, 'the worker did not finish')
    assert.strictEqual(counter[0], rounds)
  })

  it('a thread\'s promise requests are granted in the order it made them while other threads hammer', async () => {
    const lock = new AsyncLock()
    const shared = new SharedArrayBuffer(12)
    const counter = new Int32Array(shared)
    const reports = startWorkers(lock, shared, 2, 20000, 'sync', false)
    await until(() => Atomics.load(counter, 1) === 2, 'the workers did not start', 20000)
    Atomics.store(counter, 2, 1)
    const order = []
    const runs = []
    for (let i = 0; i < 200; i++) {
      runs.push(lock.runExclusive(() => { order.push(i) }))
      if (i % 17 === 0) await null
    }
    await within(Promise.all(runs), 20000, 'the main thread\'s requests were not all granted')
    await within(Promise.all(reports), 60000, 'the workers did not finish')
    assert.deepStrictEqual(order, Array.from({ length: 200 }, (_, i) => i))
  })

  it('a promise-API release reserves the word only while others wait, and never beyond this thread\'s microtasks', async () => {
    const lock = new AsyncLock()
    const word = new Int32Array(lock.buffer)
    // Uncontended: the release frees the word at once.
    const release = await lock.acquire()
    release()
    assert.strictEqual(Atomics.load(word, 0), 0)
    // Contended, as seen from a worker: whatever the main thread does with
    // its microtasks, the word is free once they have run out.
    const shared = new SharedArrayBuffer(12)
    const counter = new Int32Array(shared)
    const reports = startWorkers(lock, shared, 1, 5000, 'sync', false)
    await until(() => Atomics.load(counter, 1) === 1, 'the worker did not start', 20000)
    Atomics.store(counter, 2, 1)
    for (let i = 0; i < 2000; i++) await lock.executeLocked(() => { counter[0]++ })
    // A macrotask later the main thread holds nothing, reserved or not.
    await new Promise((resolve) => setImmediate(resolve))
    assert.notStrictEqual(Atomics.load(word, 0) & 0x1fffffff, 1, 'the main thread still holds the word')
    assert.throws(() => lock.unlock(), (err) => err.code === 'ENOTOWNER')
    await within(Promise.all(reports), 60000, 'the worker did not finish')
    assert.strictEqual(counter[0], 7000)
  })
})
