// Producer/consumer: the main thread produces 100 jobs into a bounded queue
// in shared memory; two workers consume them. An AsyncLock guards the
// queue, two ConditionVariables say "not empty" and "not full". Workers
// block (lock(), waitSync()); the main thread awaits (acquire(), wait()).
import { Worker, isMainThread, workerData } from 'node:worker_threads'
import { AsyncLock, ConditionVariable } from 'threadlock'

const SIZE = 8 // slots in the ring; state: [head, count, done, sum]

if (isMainThread) {
  const lock = new AsyncLock()
  const notEmpty = new ConditionVariable()
  const notFull = new ConditionVariable()
  const ring = new Int32Array(new SharedArrayBuffer(4 * SIZE))
  const state = new Int32Array(new SharedArrayBuffer(16))
  const data = { lock: lock.handle, notEmpty: notEmpty.handle, notFull: notFull.handle, ring, state }
  const workers = [0, 1].map(() => new Worker(new URL(import.meta.url), { workerData: data }))
  for (let job = 1; job <= 100; job++) {
    const release = await lock.acquire()
    while (state[1] === SIZE) await notFull.wait(lock) // releases, waits, takes it back
    ring[(state[0] + state[1]) % SIZE] = job
    state[1]++
    notEmpty.notifyOne()
    release()
  }
  const release = await lock.acquire()
  state[2] = 1 // no more jobs
  notEmpty.notifyAll()
  release()
  await Promise.all(workers.map((w) => new Promise((resolve) => w.on('exit', resolve))))
  console.log(`consumed 100 jobs, sum ${state[3]}`)
} else {
  const lock = AsyncLock.from(workerData.lock)
  const notEmpty = ConditionVariable.from(workerData.notEmpty)
  const notFull = ConditionVariable.from(workerData.notFull)
  const { ring, state } = workerData
  for (;;) {
    lock.lock()
    while (state[1] === 0 && state[2] === 0) notEmpty.waitSync(lock)
    if (state[1] === 0) { lock.unlock(); break } // done and drained
    const job = ring[state[0]]
    state[0] = (state[0] + 1) % SIZE
    state[1]--
    state[3] += job
    notFull.notifyOne()
    lock.unlock()
  }
}
