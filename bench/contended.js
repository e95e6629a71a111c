'use strict'

// Row 5: one lock, the main thread and `threads - 1` workers all taking it in
// a loop for a fixed time.
//
// The critical section is tiny: it increments a shared counter with plain
// (non-atomic) reads and writes, which loses updates unless the lock really
// excludes, and counts the operation for its thread while the clock runs.
// Reported: throughput (operations per second, all threads) and fairness,
// the largest per-thread count divided by the smallest (Infinity when a
// thread got nothing).
//
// mode 'async': every thread calls `await lock.executeLocked(f)`;
// mode 'sync':  the main thread does that and the workers call the blocking
//               lock() / f() / unlock(), where the spin setting counts.

const { isMainThread, parentPort, workerData } = require('worker_threads')
const { AsyncLock } = require('..')
const { BlogLock } = require('./blog-lock')
const { STRIDE, nowNs, sleep, startWorkers, serve } = require('./common')

// Int32 slots, each on its own cache line.
const TL_WORD = 0 // threadlock's lock word (byte offset 0)
const BLOG_WORD = STRIDE // the blog lock's word
const DATA = 2 * STRIDE // the counter the lock protects
const STOP = 3 * STRIDE
const GO = 4 * STRIDE
const READY = 5 * STRIDE
const COUNTS = 6 * STRIDE // per thread: [windowed, total] at COUNTS + t * STRIDE

function layoutSize (threads) {
  return 4 * (COUNTS + STRIDE * threads)
}

// `fair`: threadlock's default FIFO hand-off, or (false) its throughput mode.
function openLocks (sab, fair) {
  return {
    threadlock: AsyncLock.from({ buffer: sab, byteOffset: 4 * TL_WORD, fair }),
    blog: new BlogLock(sab, 4 * BLOG_WORD)
  }
}

// The critical section of thread `t`.
function criticalSection (i32, t) {
  const win = COUNTS + t * STRIDE
  const total = win + 1
  return () => {
    i32[DATA] = i32[DATA] + 1
    i32[total]++
    if (Atomics.load(i32, STOP) === 0) i32[win]++
  }
}

async function loopAsync (i32, lock, f) {
  while (Atomics.load(i32, STOP) === 0) await lock.executeLocked(f)
}

function loopSync (i32, lock, f) {
  while (Atomics.load(i32, STOP) === 0) {
    lock.lock()
    f()
    lock.unlock()
  }
}

function workerMain () {
  const { sab, t, fair } = workerData
  const i32 = new Int32Array(sab)
  const locks = openLocks(sab, fair)
  const f = criticalSection(i32, t)
  serve(parentPort, async ({ impl, mode }) => {
    const lock = locks[impl]
    Atomics.add(i32, READY, 1)
    while (Atomics.load(i32, GO) === 0) Atomics.wait(i32, GO, 0)
    if (mode === 'sync') loopSync(i32, lock, f)
    else await loopAsync(i32, lock, f)
    return {}
  })
}

// sample(impl) -> { throughput, fairness }
async function open ({ threads = 4, durationMs = 500, mode = 'async', fair = false } = {}) {
  const sab = new SharedArrayBuffer(layoutSize(threads))
  const i32 = new Int32Array(sab)
  const locks = openLocks(sab, fair)
  const f = criticalSection(i32, 0)
  const workers = await startWorkers(__filename, threads - 1, (k) => ({
    bench: 'contended',
    sab,
    t: k + 1,
    fair
  }))

  async function sample (impl) {
    const lock = locks[impl]
    i32.fill(0)
    const done = Promise.all(workers.map((w) => w.request({ impl, mode })))
    while (Atomics.load(i32, READY) < workers.length) await sleep(1)

    let t1 = 0
    const stop = () => {
      if (t1 === 0) {
        t1 = nowNs()
        Atomics.store(i32, STOP, 1)
      }
    }
    const t0 = nowNs()
    const end = t0 + durationMs * 1e6
    // The timer stops the clock while this thread waits for the lock; the
    // check in the loop stops it while this thread keeps the lock to itself
    // through promise jobs alone and never returns to the event loop.
    const timer = setTimeout(stop, durationMs)
    Atomics.store(i32, GO, 1)
    Atomics.notify(i32, GO)
    let k = 0
    while (Atomics.load(i32, STOP) === 0) {
      await lock.executeLocked(f)
      if ((++k & 15) === 0 && nowNs() >= end) stop()
    }
    clearTimeout(timer)
    await done

    let sum = 0
    let totals = 0
    let max = 0
    let min = Infinity
    for (let t = 0; t < threads; t++) {
      const c = i32[COUNTS + t * STRIDE]
      sum += c
      totals += i32[COUNTS + t * STRIDE + 1]
      if (c > max) max = c
      if (c < min) min = c
    }
    if (i32[DATA] !== totals) {
      throw new Error(`${impl}: the lock let ${totals - i32[DATA]} updates get lost`)
    }
    const word = impl === 'threadlock' ? TL_WORD : BLOG_WORD
    if (Atomics.load(i32, word) !== 0) throw new Error(`${impl}: lock still held after the run`)
    return {
      throughput: sum / ((t1 - t0) / 1e9),
      fairness: min === 0 ? Infinity : max / min
    }
  }

  return {
    sample,
    close () {
      return Promise.all(workers.map((w) => w.terminate()))
    }
  }
}

if (!isMainThread && workerData && workerData.bench === 'contended') workerMain()

module.exports = { open }
