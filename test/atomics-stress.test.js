'use strict'

// Randomized stress of wait / notify / waitAsync: several workers hand
// work to each other many times with random pauses and a random mix of
// sync and async waits. A lost wakeup leaves a thread waiting forever; the
// watchdog notices that progress stopped and fails with the state of every
// worker, instead of letting mocha time out.
//
// Sizes come from the environment so that a long run can reuse this file:
//   THREADLOCK_STRESS_SCALE    multiplies every round count (default 1)
//   THREADLOCK_STRESS_WORKERS  workers per scenario (default 4, at least 2)
//   THREADLOCK_STRESS_SEED     seed of the random choices (default: random;
//                              every failure message prints the one used)
//   THREADLOCK_STRESS_STALL_MS how long no progress counts as a hang
//                              (default 10000)

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { notify, waiterCount } = require('..')
const { sleep } = require('./fixtures/threads')

const WORKER = path.join(__dirname, 'fixtures', 'atomics-stress-worker.js')

function envNumber (name, fallback) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, not ${raw}`)
  return n
}

const SCALE = envNumber('THREADLOCK_STRESS_SCALE', 1)
const WORKERS = Math.max(2, Math.floor(envNumber('THREADLOCK_STRESS_WORKERS', 4)))
const SEED = Math.floor(envNumber('THREADLOCK_STRESS_SEED', 1 + Math.floor(Math.random() * 0x7fffffff)))
const STALL_MS = envNumber('THREADLOCK_STRESS_STALL_MS', 10000)

// Int32 layout shared with the worker script.
const PROGRESS = 0
const DATA = 64
const LENGTH = 128

// Runs one scenario in WORKERS workers and resolves with their stats, in
// worker order. Fails when a worker throws or exits early, or when the
// summed progress counters stay unchanged for STALL_MS.
async function runScenario (scenario, params) {
  const sab = new SharedArrayBuffer(LENGTH * 4)
  const i32 = new Int32Array(sab)
  if (params.init) params.init(i32)
  const label = `${scenario} (seed ${SEED}, ${WORKERS} workers, scale ${SCALE})`
  const workers = []
  const results = new Array(WORKERS)
  let failure = null
  let finished = 0
  let stopping = false

  for (let me = 0; me < WORKERS; me++) {
    const w = new Worker(WORKER, {
      workerData: { scenario, sab, me, workers: WORKERS, seed: SEED, params: params.data }
    })
    w.on('message', (m) => {
      if (m.type === 'done') {
        results[m.me] = m.stats
        finished++
      } else if (!failure) {
        failure = new Error(`${label}: worker ${m.me} failed: ${m.error}`)
      }
    })
    w.on('error', (err) => { if (!failure) failure = new Error(`${label}: worker ${me} crashed: ${err.stack}`) })
    w.on('exit', (code) => {
      if (results[me] === undefined && !failure && !stopping) {
        failure = new Error(`${label}: worker ${me} exited with code ${code} before it finished`)
      }
    })
    workers.push(w)
  }

  const progress = () => {
    let sum = 0
    for (let k = 0; k < WORKERS; k++) sum += Atomics.load(i32, PROGRESS + k)
    return sum
  }
  const snapshot = () => {
    const perWorker = []
    for (let k = 0; k < WORKERS; k++) {
      perWorker.push(`worker ${k}: progress ${Atomics.load(i32, PROGRESS + k)}` +
        (results[k] ? ' (finished)' : ' (running)'))
    }
    const data = []
    for (let k = DATA; k < DATA + 8; k++) {
      data.push(`[${k}] = ${Atomics.load(i32, k)}, ${waiterCount(i32, k)} waiting`)
    }
    return `${perWorker.join('; ')}\n  data: ${data.join('; ')}`
  }

  try {
    let last = -1
    let lastChange = Date.now()
    while (finished < WORKERS && !failure) {
      await sleep(50)
      const now = progress()
      if (now !== last) {
        last = now
        lastChange = Date.now()
      } else if (Date.now() - lastChange > STALL_MS) {
        throw new Error(`${label}: no progress for ${STALL_MS} ms, a wakeup was lost or a ` +
          `thread hangs:\n  ${snapshot()}`)
      }
    }
    if (failure) throw failure
    return results
  } finally {
    stopping = true
    await Promise.all(workers.map((w) => w.terminate()))
    // Wake anything a failed run left waiting on this thread's behalf.
    for (let k = 0; k < LENGTH; k++) notify(i32, k)
  }
}

describe('atomics stress (randomized)', function () {
  // The watchdog fails a stalled scenario long before this.
  this.timeout(STALL_MS * 3 + 600000 * SCALE)
  this.slow(10000)

  it(`a token passed around a ring of workers ${Math.round(5000 * SCALE)} times each is never lost`, async () => {
    const rounds = Math.round(5000 * SCALE)
    const stats = await runScenario('ring', {
      data: { rounds },
      init: (i32) => Atomics.store(i32, DATA, 1) // worker 0 holds the token
    })
    assert.deepStrictEqual(stats.map((s) => s.received), stats.map(() => rounds))
    // Both kinds of wait took part (the choice is random per wait).
    assert.ok(stats.some((s) => s.sync > 0) && stats.some((s) => s.async > 0),
      `seed ${SEED}: ${JSON.stringify(stats)}`)
  })

  it('producers and consumers on one counter: every item is consumed, nobody sleeps through one', async () => {
    const producers = []
    for (let k = 0; k < WORKERS; k += 2) producers.push(k)
    const perProducer = Math.round(5000 * SCALE)
    const total = producers.length * perProducer
    const stats = await runScenario('semaphore', { data: { producers, perProducer, total } })
    const produced = stats.reduce((a, s) => a + s.produced, 0)
    const consumed = stats.reduce((a, s) => a + s.consumed, 0)
    assert.strictEqual(produced, total, `seed ${SEED}`)
    assert.strictEqual(consumed, total, `seed ${SEED}`)
  })

  it('timed waits racing notifies: notify counts exactly the waiters that report ok', async () => {
    const waits = Math.round(1500 * SCALE)
    const notifier = WORKERS - 1
    const stats = await runScenario('timeouts', { data: { waits, notifier } })
    const waiters = stats.filter((s, k) => k !== notifier)
    const ok = waiters.reduce((a, s) => a + s.ok, 0)
    const timedOut = waiters.reduce((a, s) => a + s.timedOut, 0)
    assert.strictEqual(ok + timedOut, waits * (WORKERS - 1))
    assert.strictEqual(stats[notifier].woken, ok,
      `seed ${SEED}: notify reported ${stats[notifier].woken} woken, waiters saw ${ok} "ok"`)
    // Both outcomes occurred, or the race was not exercised.
    assert.ok(ok > 0 && timedOut > 0, `seed ${SEED}: ok ${ok}, timed-out ${timedOut}`)
  })
})
