// The main thread awaits a condition that workers make true: each of four
// workers finishes a job and counts it under the lock, then notifies; the
// main thread waits with `await cv.wait(lock)` (it never blocks its event
// loop), in a loop that checks the condition.
const { Worker, isMainThread, workerData } = require('node:worker_threads')
const { AsyncLock, ConditionVariable } = require('threadlock')

// CommonJS has no top-level await: the program runs in an async function.
;(async () => {
  if (isMainThread) {
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const done = new Int32Array(new SharedArrayBuffer(4))
    for (let i = 0; i < 4; i++) {
      new Worker(__filename, { workerData: { lock: lock.handle, cv: cv.handle, done, ms: 5 * i } })
    }
    const ticking = setInterval(() => {}, 1) // the event loop stays free meanwhile
    const release = await lock.acquire()
    while (done[0] < 4) await cv.wait(lock, { timeout: 10000 })
    release()
    clearInterval(ticking)
    console.log(`all ${done[0]} jobs done`)
  } else {
    const lock = AsyncLock.from(workerData.lock)
    const cv = ConditionVariable.from(workerData.cv)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms) // the job
    lock.lock()
    workerData.done[0]++
    cv.notifyAll()
    lock.unlock()
  }
})()
