'use strict'

// Row 2: the main thread awaits a waitAsync promise that a worker's notify
// resolves.
//
// Each iteration the main thread starts waitAsync on its word F (which is 0,
// so the wait is always pending), then raises the worker's word G; the worker
// sees G, clears it, stores 1 in F and notifies F. The iteration ends when the
// main thread's await resumes. Two ways for the worker to see G:
//   poll: it spins on Atomics.load, so the time is the main thread's
//         waitAsync, the notify and the promise's resolution, and nothing else;
//   wait: it sleeps in the implementation's own sync wait, and the main
//         thread notifies G (a full round trip, where the spin setting counts).
// With `workers` > 1 the main thread waits on one word per worker in each
// iteration; the wake-ups of one iteration may then reach it as one batch.

const { isMainThread, parentPort, workerData } = require('worker_threads')
const { IMPLS, STRIDE, nowNs, startWorkers, serve } = require('./common')

function workerMain () {
  const { sab, slot } = workerData
  const i32 = new Int32Array(sab)
  const F = slot
  const G = slot + STRIDE
  serve(parentPort, ({ impl, n, mode }) => {
    const { wait, notify } = IMPLS[impl]
    for (let k = 0; k < n; k++) {
      if (mode === 'wait') {
        while (Atomics.load(i32, G) === 0) wait(i32, G, 0)
      } else {
        while (Atomics.load(i32, G) === 0);
      }
      Atomics.store(i32, G, 0)
      Atomics.store(i32, F, 1)
      notify(i32, F, 1)
    }
    return {}
  })
}

// Runs `n` iterations on the main thread; returns µs per iteration.
async function mainLoop (impl, i32, slots, n, mode) {
  const { waitAsync, notify } = IMPLS[impl]
  const k = slots.length
  const results = new Array(k)
  let sync = 0
  const t0 = nowNs()
  for (let it = 0; it < n; it++) {
    for (let j = 0; j < k; j++) results[j] = waitAsync(i32, slots[j], 0)
    for (let j = 0; j < k; j++) {
      const G = slots[j] + STRIDE
      Atomics.store(i32, G, 1)
      if (mode === 'wait') notify(i32, G, 1)
    }
    for (let j = 0; j < k; j++) {
      const r = results[j]
      if (r.async) await r.value
      else sync++
      Atomics.store(i32, slots[j], 0)
    }
  }
  const ns = nowNs() - t0
  if (sync !== 0) throw new Error(`${sync} waitAsync calls did not wait`)
  return ns / n / 1e3
}

// sample(impl, n) -> µs per iteration.
async function open ({ workers: count = 1, mode = 'poll' } = {}) {
  const sab = new SharedArrayBuffer(4 * STRIDE * 2 * count)
  const i32 = new Int32Array(sab)
  const slots = []
  for (let j = 0; j < count; j++) slots.push(2 * STRIDE * j)
  const workers = await startWorkers(__filename, count, (j) => ({
    bench: 'waitasync',
    sab,
    slot: slots[j]
  }))
  return {
    async sample (impl, n) {
      i32.fill(0)
      const done = Promise.all(workers.map((w) => w.request({ impl, n, mode })))
      const us = await mainLoop(impl, i32, slots, n, mode)
      await done
      return us
    },
    close () {
      return Promise.all(workers.map((w) => w.terminate()))
    }
  }
}

if (!isMainThread && workerData && workerData.bench === 'waitasync') workerMain()

module.exports = { open }
