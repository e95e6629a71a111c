'use strict'

// The installed package on this platform, across threads: a wait runs out
// its timeout; the main thread and four workers add to one counter with a
// plain, non-atomic `+=` under one AsyncLock and reach the exact total; and
// a waitAsync of the main thread is woken by a worker's notify.

const assert = require('assert')
const { Worker, isMainThread, workerData } = require('worker_threads')
const { AsyncLock, wait, waitAsync, notify } = require('threadlock')

const WORKERS = 4
const ROUNDS = 2000

if (!isMainThread) {
  const lock = AsyncLock.from(workerData.handle)
  const counter = new Int32Array(workerData.counter)
  const done = new Int32Array(workerData.done)
  for (let i = 0; i < ROUNDS; i++) {
    lock.lock()
    counter[0] += 1
    lock.unlock()
  }
  Atomics.add(done, 0, 1)
  notify(done, 0)
} else {
  const started = Date.now()
  assert.strictEqual(wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50), 'timed-out')
  assert.ok(Date.now() - started >= 40, 'the wait lasted its timeout')

  const lock = new AsyncLock()
  const counter = new Int32Array(new SharedArrayBuffer(4))
  const done = new Int32Array(new SharedArrayBuffer(4))
  // Listens before any worker can notify.
  const woken = waitAsync(done, 0, 0, 60000)
  assert.strictEqual(woken.async, true)
  const exits = []
  for (let i = 0; i < WORKERS; i++) {
    const worker = new Worker(__filename, {
      workerData: { handle: lock.handle, counter: counter.buffer, done: done.buffer }
    })
    exits.push(new Promise((resolve, reject) => {
      worker.once('error', reject)
      worker.once('exit', (code) => code === 0 ? resolve() : reject(new Error(`worker exit ${code}`)))
    }))
  }
  ;(async () => {
    for (let i = 0; i < ROUNDS; i++) {
      await lock.runExclusive(() => { counter[0] += 1 })
    }
    assert.strictEqual(await woken.value, 'ok')
    await Promise.all(exits)
    assert.strictEqual(counter[0], (WORKERS + 1) * ROUNDS)
    console.log(`threads: ${WORKERS} workers and the main thread counted to ${counter[0]} on ` +
      `${process.platform}-${process.arch}`)
  })().catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
}
