'use strict'

// Helpers shared by the workloads: the two implementations of wait / notify /
// waitAsync, a clock, statistics, and a small request/reply protocol for the
// long-lived workers that the multi-threaded workloads use.

const { Worker } = require('worker_threads')

const threadlock = require('..')
const { binding } = require('../lib/native')

// The functions under test, looked up once so that the loops call plain
// functions in both cases.
const IMPLS = {
  threadlock: {
    wait: threadlock.wait,
    notify: threadlock.notify,
    waitAsync: threadlock.waitAsync
  },
  atomics: {
    wait: Atomics.wait,
    notify: Atomics.notify,
    waitAsync: Atomics.waitAsync
  }
}

// Nanoseconds from a monotonic clock as a Number (exact below 2^53 ns).
function nowNs () {
  return Number(process.hrtime.bigint())
}

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

function summary (xs) {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length }
}

// Sets how many pause iterations a threadlock sync waiter spins before it
// sleeps. The setting is process-wide, so it reaches the workers too.
function setSpin (n) {
  binding.setSpin(n)
}

// Int32 slots used by the workloads are this far apart so that two threads
// never write to the same cache line.
const STRIDE = 16

// A worker running `file` with `workerData`. `request(msg)` posts a message
// and resolves with the worker's reply; one request at a time.
class BenchWorker {
  constructor (file, workerData) {
    this.worker = new Worker(file, { workerData })
    this.online = new Promise((resolve, reject) => {
      this.worker.once('online', resolve)
      this.worker.once('error', reject)
    })
    this.pending = null
    this.worker.on('message', (msg) => {
      const p = this.pending
      this.pending = null
      if (p === null) return
      if (msg && msg.error) p.reject(new Error(`worker: ${msg.error}`))
      else p.resolve(msg)
    })
    this.worker.on('error', (err) => {
      const p = this.pending
      this.pending = null
      if (p !== null) p.reject(err)
    })
  }

  request (msg) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      this.worker.postMessage(msg)
    })
  }

  terminate () {
    return this.worker.terminate()
  }
}

async function startWorkers (file, count, dataFor) {
  const workers = []
  for (let i = 0; i < count; i++) workers.push(new BenchWorker(file, dataFor(i)))
  await Promise.all(workers.map((w) => w.online))
  return workers
}

// The worker side: answers each message with the value (or promise) that
// `handler` returns.
function serve (port, handler) {
  port.on('message', async (msg) => {
    try {
      port.postMessage(await handler(msg))
    } catch (err) {
      port.postMessage({ error: err && err.stack ? err.stack : String(err) })
    }
  })
}

// Spins until the Int32 at `index` reaches `value`, without any wait
// primitive, so that both implementations start from the same state.
function spinUntil (i32, index, value) {
  while (Atomics.load(i32, index) < value);
}

module.exports = {
  IMPLS,
  STRIDE,
  nowNs,
  sleep,
  median,
  summary,
  setSpin,
  startWorkers,
  serve,
  spinUntil
}
