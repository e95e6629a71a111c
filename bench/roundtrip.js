'use strict'

// Row 1: wait/notify round trip between two workers.
//
// Worker "ping" stores 1 and notifies, then waits while the word is 1;
// worker "pong" waits while it is 0, stores 0 and notifies. One round trip is
// two stores, two notifies and two waits, each wait usually a real sleep and
// wake-up. With `pairs` > 1 several such pairs run at once on their own words,
// which puts more runnable threads than cores on the machine.

const { isMainThread, parentPort, workerData } = require('worker_threads')
const { IMPLS, STRIDE, nowNs, startWorkers, serve } = require('./common')

const READY = 0 // barrier counter, word 0

function ping (f, i, n, wait, notify) {
  for (let k = 0; k < n; k++) {
    Atomics.store(f, i, 1)
    notify(f, i, 1)
    while (Atomics.load(f, i) === 1) wait(f, i, 1)
  }
}

function pong (f, i, n, wait, notify) {
  for (let k = 0; k < n; k++) {
    while (Atomics.load(f, i) === 0) wait(f, i, 0)
    Atomics.store(f, i, 0)
    notify(f, i, 1)
  }
}

// Every thread of the sample arrives here before any starts its loop. It
// uses the built-in wait for both implementations.
function barrier (f, total) {
  let seen = Atomics.add(f, READY, 1) + 1
  if (seen === total) {
    Atomics.notify(f, READY)
    return
  }
  while (seen < total) {
    Atomics.wait(f, READY, seen)
    seen = Atomics.load(f, READY)
  }
}

function workerMain () {
  const { sab, role, slot } = workerData
  const f = new Int32Array(sab)
  serve(parentPort, ({ impl, n, total }) => {
    const { wait, notify } = IMPLS[impl]
    barrier(f, total)
    const t0 = nowNs()
    if (role === 'ping') ping(f, slot, n, wait, notify)
    else pong(f, slot, n, wait, notify)
    return { ns: nowNs() - t0 }
  })
}

// Starts `pairs` ping/pong pairs. sample(impl, n) -> µs per round trip,
// averaged over the pairs.
async function open ({ pairs = 1 } = {}) {
  const sab = new SharedArrayBuffer(4 * STRIDE * (pairs + 1))
  const f = new Int32Array(sab)
  const workers = await startWorkers(__filename, 2 * pairs, (k) => ({
    bench: 'roundtrip',
    sab,
    role: k % 2 === 0 ? 'ping' : 'pong',
    slot: STRIDE * (1 + (k >> 1))
  }))
  return {
    async sample (impl, n) {
      f.fill(0)
      const replies = await Promise.all(workers.map((w) =>
        w.request({ impl, n, total: workers.length })))
      let sum = 0
      for (let k = 0; k < replies.length; k += 2) sum += replies[k].ns / n / 1e3
      return sum / pairs
    },
    close () {
      return Promise.all(workers.map((w) => w.terminate()))
    }
  }
}

if (!isMainThread && workerData && workerData.bench === 'roundtrip') workerMain()

module.exports = { open }
