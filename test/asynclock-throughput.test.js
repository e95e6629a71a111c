'use strict'

// AsyncLock's default policy (running threads may barge, slices end in a
// hand-off): still a lock (exact counts across threads), still owner-aware,
// and no waiter starves.

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { AsyncLock, LockError } = require('..')
const { finished } = require('./fixtures/threads')

const WORKER = path.join(__dirname, 'fixtures', 'throughput-worker.js')
const { asyncIncrement } = require(WORKER)

describe('AsyncLock default policy', () => {
  it('is the default; { fifo: true } picks strict FIFO, and the handle carries the choice', () => {
    const lock = new AsyncLock(new SharedArrayBuffer(4), 0, { fifo: true })
    assert.strictEqual(lock.fifo, true)
    assert.strictEqual(lock.handle.fifo, true)
    assert.strictEqual(AsyncLock.from(structuredClone(lock.handle)).fifo, true)
    assert.strictEqual(new AsyncLock().fifo, false)
    assert.strictEqual(AsyncLock.from({ buffer: lock.buffer }).fifo, false)
    assert.throws(() => new AsyncLock(new SharedArrayBuffer(4), 0, { fifo: 'no' }), TypeError)
    assert.throws(() => new AsyncLock(new SharedArrayBuffer(4), 0, null), TypeError)
  })

  it('keeps the owner checks of the FIFO mode', async () => {
    const lock = new AsyncLock()
    assert.throws(() => lock.unlock(), (err) => err instanceof LockError && err.code === 'ENOTOWNER')
    lock.lock()
    assert.throws(() => lock.lock(), (err) => err.code === 'EDEADLK')
    assert.strictEqual(lock.tryLock(), false)
    await assert.rejects(lock.acquire({ blocking: false }), (err) => err.code === 'EBUSY')
    const queued = lock.acquire()
    assert.strictEqual(lock.waiting, 1)
    lock.unlock()
    const release = await queued
    assert.strictEqual(lock.locked, true)
    release()
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(lock.waiting, 0)
  })

  it('excludes: a non-atomic counter of the main thread and 3 workers ends exact, and nobody starves', async function () {
    this.timeout(60000)
    const lock = new AsyncLock(new SharedArrayBuffer(4))
    const shared = new Int32Array(new SharedArrayBuffer(12))
    const threads = 4
    const max = 4000
    const workers = [1, 2, 3].map(() => new Worker(WORKER, {
      workerData: { handle: lock.handle, shared: shared.buffer, threads, max }
    }))
    const results = workers.map(finished)
    Atomics.add(shared, 2, 1)
    while (Atomics.load(shared, 2) < threads) await new Promise((resolve) => setTimeout(resolve, 1))
    let mine = 0
    let longest = 0
    while (mine < max) {
      longest = Math.max(longest, await asyncIncrement(lock, shared))
      mine++
    }
    const counts = await Promise.all(results)
    const total = counts.reduce((sum, r) => sum + r.mine, mine)
    assert.strictEqual(shared[0], total, 'lost updates: the lock did not exclude')
    assert.strictEqual(total, threads * max)
    // Generous: a thread that waited seconds for one grant starved.
    const worst = Math.max(longest, ...counts.map((r) => r.longest))
    assert.ok(worst < 5000, `a request waited ${worst.toFixed(0)} ms`)
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(lock.waiting, 0)
  })
})
