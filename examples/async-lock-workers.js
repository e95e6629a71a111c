'use strict'

// One AsyncLock shared by the main thread and several workers.
//
// Each worker increments a shared counter many times with a plain, non-
// atomic read-modify-write, guarded by the blocking lock() / unlock(). The
// main thread must not block its event loop, so it takes the same lock with
// the promise-based executeLocked(). No increment is lost.
// Run: node examples/async-lock-workers.js

const { Worker, isMainThread, workerData, threadId } = require('worker_threads')
const { AsyncLock } = require('threadlock')

const WORKERS = 3
const ROUNDS = 10000

if (isMainThread) {
  main()
} else {
  // Reopen the lock from its handle: same memory, same lock.
  const lock = AsyncLock.from(workerData.lock)
  const counter = new Int32Array(workerData.counter)
  for (let i = 0; i < ROUNDS; i++) {
    lock.lock()
    try {
      counter[0] = counter[0] + 1
    } finally {
      lock.unlock()
    }
  }
  console.log(`worker ${threadId}: done`)
}

async function main () {
  const lock = new AsyncLock()
  const counter = new Int32Array(new SharedArrayBuffer(4))
  const workers = []
  for (let i = 0; i < WORKERS; i++) {
    const worker = new Worker(__filename, {
      workerData: { lock: lock.handle, counter: counter.buffer }
    })
    workers.push(new Promise((resolve, reject) => {
      worker.once('error', reject)
      worker.once('exit', resolve)
    }))
  }

  // The main thread joins in without ever blocking.
  for (let i = 0; i < ROUNDS; i++) {
    await lock.executeLocked(() => {
      counter[0] = counter[0] + 1
    })
  }
  console.log('main: done')

  await Promise.all(workers)
  const expected = (WORKERS + 1) * ROUNDS
  console.log(`counter: ${counter[0]} (expected ${expected})`)
  if (counter[0] !== expected) process.exitCode = 1
}
