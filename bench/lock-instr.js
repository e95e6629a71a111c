'use strict'

// One thread loops `await lock.executeLocked(f)` n times, for counting
// instructions per operation with callgrind (repeatable on a loaded
// machine, where timings are not):
//
//   valgrind --tool=callgrind node bench/lock-instr.js <state> <impl> <n>
//
// twice, with n = 100000 and 300000: the difference of the two totals over
// 200,000 is the cost of one operation. <impl>: threadlock, blog (the blog
// lock) or none (the same loop around `async (f) => f()`, no lock).
// <state>: free (nobody else uses the lock) or woken (a worker's promise
// request was woken and is on its way, but the worker's event loop is
// blocked, so it never comes: threadlock's word stays FREE+WOKEN, the state
// most releases of row 5a meet; the blog lock's notify then finds nobody).
// bench/README.md ("Issue 24, item 2") records the figures.

const { Worker, isMainThread, workerData } = require('worker_threads')
const { AsyncLock } = require('..')
const { BlogLock } = require('./blog-lock')

function open (sab, impl) {
  if (impl === 'threadlock') return AsyncLock.from({ buffer: sab, byteOffset: 0 })
  if (impl === 'blog') return new BlogLock(sab, 128)
  return { executeLocked: async (f) => f() }
}

if (!isMainThread) {
  const { sab, impl } = workerData
  const ctl = new Int32Array(sab, 64, 1)
  const lock = open(sab, impl)
  const p = impl === 'threadlock' ? lock.acquire().then((release) => release()) : lock.executeLocked(() => {})
  Atomics.store(ctl, 0, 1)
  Atomics.wait(ctl, 0, 1) // this loop stays blocked until the main thread is done
  p.then(() => {})
} else {
  main().catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
}

async function main () {
  const [state, impl, nArg] = process.argv.slice(2)
  const n = Number(nArg)
  if (!['free', 'woken'].includes(state) || !['threadlock', 'blog', 'none'].includes(impl) || !(n > 0)) {
    throw new Error('usage: node bench/lock-instr.js free|woken threadlock|blog|none <n>')
  }
  if (state === 'woken' && impl === 'none') throw new Error('bench/lock-instr.js: woken needs a lock')
  const sab = new SharedArrayBuffer(256)
  const ctl = new Int32Array(sab, 64, 1)
  const lock = open(sab, impl)
  let worker = null
  if (state === 'woken') {
    let release = null
    if (impl === 'threadlock') release = await lock.acquire()
    else lock.lock()
    worker = new Worker(__filename, { workerData: { sab, impl } })
    while (Atomics.load(ctl, 0) !== 1 || (impl === 'threadlock' && lock.waiting !== 1)) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    if (release !== null) release()
    else lock.unlock()
  }
  let x = 0
  const f = () => { x++ }
  const t = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await lock.executeLocked(f)
  const word = new Int32Array(sab, 0, 1)[0]
  console.log(JSON.stringify({ state, impl, n, nsPerOp: Number(process.hrtime.bigint() - t) / n, x, word: (word >>> 0).toString(16) }))
  if (worker !== null) {
    Atomics.store(ctl, 0, 2)
    Atomics.notify(ctl, 0)
    await worker.terminate()
  }
}
