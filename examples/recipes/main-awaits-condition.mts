// The main thread awaits a condition that workers make true: each of four
// workers finishes a job and counts it under the lock, then notifies; the
// main thread waits with `await cv.wait(lock)` (it never blocks its event
// loop), in a loop that checks the condition.
import { Worker, isMainThread, workerData } from 'node:worker_threads'
import { AsyncLock, ConditionVariable, type AsyncLockHandle, type ConditionVariableHandle } from 'threadlock'

interface Shared { lock: AsyncLockHandle, cv: ConditionVariableHandle, done: Int32Array, ms: number }

if (isMainThread) {
  const lock = new AsyncLock()
  const cv = new ConditionVariable()
  const done = new Int32Array(new SharedArrayBuffer(4))
  for (let i = 0; i < 4; i++) {
    new Worker(new URL(import.meta.url), { workerData: { lock: lock.handle, cv: cv.handle, done, ms: 5 * i } satisfies Shared })
  }
  const ticking = setInterval(() => {}, 1) // the event loop stays free meanwhile
  const release = await lock.acquire()
  while (done[0] < 4) await cv.wait(lock, { timeout: 10000 })
  release()
  clearInterval(ticking)
  console.log(`all ${done[0]} jobs done`)
} else {
  const shared = workerData as Shared
  const lock = AsyncLock.from(shared.lock)
  const cv = ConditionVariable.from(shared.cv)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, shared.ms) // the job
  lock.lock()
  shared.done[0]++
  cv.notifyAll()
  lock.unlock()
}
