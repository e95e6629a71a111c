'use strict'

// Named locks: threadlock.locks side by side with Node's own
// worker_threads.locks (Node >= 24.5), in one process, alternating which goes
// first in each round. Prints one Markdown table: per row the median and
// min–max of each, and the ratio threadlock / built-in.
//
//   node bench/weblocks.js [--quick]
//
// W1  uncontended: `await locks.request(name, f)` in a loop on the main
//     thread, nobody else around; ns per request.
// W2  contended: the main thread and 3 workers loop on one name for a fixed
//     time; operations per second over all threads. The critical section
//     increments a shared counter with plain reads and writes, and the lost
//     updates are reported: a lock that does not exclude loses some.
// W3  deep queue: 10,000 requests queued on one held name; ms from the
//     holder's release until every request has settled. The callbacks are
//     async functions, because the built-in overflows its stack on a long
//     queue of callbacks that return at once.

const { isMainThread, parentPort, workerData, locks: builtin } = require('worker_threads')
const threadlock = require('..')
const { nowNs, sleep, summary, startWorkers, serve } = require('./common')

const IMPLS = { threadlock: threadlock.locks, builtin }

// Int32 slots of the contended row: [counter, stop, go, ready, count per
// thread...], each on its own cache line.
const STRIDE = 16
const COUNTER = 0
const STOP = STRIDE
const GO = 2 * STRIDE
const READY = 3 * STRIDE
const COUNTS = 4 * STRIDE

// One thread's loop of the contended row: request, bump the counter, until
// told to stop. Returns how many times this thread held the lock.
async function contendedLoop (locks, name, i32, slot) {
  const bump = () => {
    i32[COUNTER] = i32[COUNTER] + 1
    i32[slot]++
  }
  while (Atomics.load(i32, STOP) === 0) await locks.request(name, bump)
  return i32[slot]
}

let serial = 0
function fresh (label) {
  return `bench/weblocks/${label}/${++serial}`
}

// W1: ns per uncontended request.
async function uncontended (impl, n) {
  const locks = IMPLS[impl]
  const name = fresh('uncontended')
  const f = () => 1
  const t0 = nowNs()
  for (let k = 0; k < n; k++) await locks.request(name, f)
  return (nowNs() - t0) / n
}

// W2: operations per second of the main thread and the workers together.
async function contended (impl, workers, i32, ms) {
  const name = fresh('contended')
  i32.fill(0)
  const replies = workers.map((w) => w.request({ impl, name }))
  while (Atomics.load(i32, READY) < workers.length) await sleep(1)
  const t0 = nowNs()
  Atomics.store(i32, GO, 1)
  Atomics.notify(i32, GO)
  const mine = contendedLoop(IMPLS[impl], name, i32, COUNTS + workers.length * STRIDE)
  await sleep(ms)
  Atomics.store(i32, STOP, 1)
  const counts = [await mine, ...(await Promise.all(replies)).map((r) => r.count)]
  const seconds = (nowNs() - t0) / 1e9
  const total = counts.reduce((a, b) => a + b, 0)
  return { opsPerSec: total / seconds, lost: total - i32[COUNTER] }
}

// W3: ms from the release of the holder to the last of n queued requests.
async function deepQueue (impl, n) {
  const locks = IMPLS[impl]
  const name = fresh('deep')
  let release
  const held = locks.request(name, () => new Promise((resolve) => { release = resolve }))
  while (release === undefined) await sleep(1)
  const f = async () => {}
  const queued = []
  for (let k = 0; k < n; k++) queued.push(locks.request(name, f))
  const t0 = nowNs()
  release()
  await Promise.all(queued)
  const ms = (nowNs() - t0) / 1e6
  await held
  return ms
}

// Runs `sample(impl)` for both implementations, one unrecorded warm-up
// each, then `rounds` rounds with the order switched every round.
async function alternate (rounds, sample) {
  const out = { threadlock: [], builtin: [] }
  await sample('threadlock')
  await sample('builtin')
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['threadlock', 'builtin'] : ['builtin', 'threadlock']
    for (const impl of order) out[impl].push(await sample(impl))
  }
  return out
}

function fmt (x) {
  if (x >= 1000) return x.toFixed(0)
  if (x >= 100) return x.toFixed(1)
  return x.toFixed(2)
}

function cell (s) {
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`
}

async function main () {
  if (builtin === undefined) {
    console.log(`bench/weblocks: Node ${process.version} has no worker_threads.locks (it came in 24.5); nothing to compare`)
    return
  }
  const quick = process.argv.includes('--quick')
  const rounds = quick ? 3 : 7
  const rows = []
  const os = require('os')
  const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ')
  console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} × ${os.cpus()[0].model.trim()}; ` +
    `load average at start ${load()}\n`)

  const w1 = await alternate(rounds, (impl) => uncontended(impl, quick ? 5000 : 20000))
  rows.push(['W1', 'uncontended request, ns', w1, 'lower'])

  const sab = new SharedArrayBuffer(4 * (COUNTS + 4 * STRIDE))
  const i32 = new Int32Array(sab)
  const workers = await startWorkers(__filename, 3, (t) => ({ sab, t }))
  const lost = { threadlock: 0, builtin: 0 }
  const w2 = await alternate(rounds, async (impl) => {
    const r = await contended(impl, workers, i32, quick ? 300 : 1000)
    lost[impl] += r.lost
    return r.opsPerSec
  })
  await Promise.all(workers.map((w) => w.terminate()))
  rows.push(['W2', 'contended, main + 3 workers, requests/s', w2, 'higher'])

  const w3 = await alternate(rounds, (impl) => deepQueue(impl, 10000))
  rows.push(['W3', 'deep queue of 10,000, ms to drain', w3, 'lower'])

  console.log(`### Named locks: threadlock.locks / worker_threads.locks (median (min–max) of ${rounds} rounds)\n`)
  console.log('| # | workload | threadlock | built-in | ratio | better |')
  console.log('|---|---|---|---|---|---|')
  for (const [id, workload, data, better] of rows) {
    const tl = summary(data.threadlock)
    const bi = summary(data.builtin)
    console.log(`| ${id} | ${workload} | ${cell(tl)} | ${cell(bi)} | ${(tl.median / bi.median).toFixed(2)} | ${better} |`)
  }
  console.log(`\nW2 lost updates over all rounds (a lock that excludes loses none): threadlock ${lost.threadlock}, ` +
    `built-in ${lost.builtin}`)
  console.log(`load average at end ${load()}`)
  if (lost.threadlock !== 0) {
    console.error('bench/weblocks: threadlock lost updates: its lock did not exclude')
    process.exitCode = 1
  }
}

if (!isMainThread) {
  const i32 = new Int32Array(workerData.sab)
  serve(parentPort, async ({ impl, name }) => {
    const slot = COUNTS + workerData.t * STRIDE
    i32[slot] = 0
    Atomics.add(i32, READY, 1)
    while (Atomics.load(i32, GO) === 0) Atomics.wait(i32, GO, 0)
    return { count: await contendedLoop(IMPLS[impl], name, i32, slot) }
  })
} else {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
