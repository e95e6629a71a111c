'use strict'

// wait / notify / waitAsync between the main thread and a worker.
//
// The worker blocks in wait() until the main thread stores a new value and
// calls notify(); then the main thread waits without blocking (waitAsync)
// for the worker's answer. Run: node examples/wait-notify.js

const { Worker, isMainThread, workerData } = require('worker_threads')
const { wait, notify, waitAsync, waiterCount } = require('threadlock')

const READY = 0 // the worker's answer, written by the worker
const VALUE = 1 // the main thread's message, written by the main thread

if (isMainThread) {
  main()
} else {
  const ta = new Int32Array(workerData)
  // Block this worker thread while VALUE still holds 0.
  const result = wait(ta, VALUE, 0, 5000)
  console.log(`worker: wait() returned '${result}', value is ${Atomics.load(ta, VALUE)}`)
  Atomics.store(ta, READY, Atomics.load(ta, VALUE) * 2)
  notify(ta, READY)
}

async function main () {
  const ta = new Int32Array(new SharedArrayBuffer(8))
  const worker = new Worker(__filename, { workerData: ta.buffer })
  // Listen for the end now: the worker may be gone before the answer is read.
  const exited = new Promise((resolve, reject) => {
    worker.once('error', reject)
    worker.once('exit', resolve)
  })

  // Start waiting for the answer before the worker can give it.
  const answer = waitAsync(ta, READY, 0, 5000)

  // Wake the worker once it is blocked in wait(). Storing earlier would be
  // just as safe: wait() compares the value first and returns 'not-equal'
  // at once, so a notify that comes before the wait is never lost.
  const poll = setInterval(() => {
    if (waiterCount(ta, VALUE) === 0) return
    clearInterval(poll)
    Atomics.store(ta, VALUE, 21)
    const woken = notify(ta, VALUE)
    console.log(`main: stored 21, notify() woke ${woken} waiter(s)`)
  }, 5)

  const outcome = answer.async ? await answer.value : answer.value
  await exited
  console.log(`main: waitAsync() settled with '${outcome}', the worker answered ${Atomics.load(ta, READY)}`)
}
