'use strict'

// Row 3: N pending waitAsync calls on one address of the main thread.
//
//   create: the N waitAsync calls (each one pending);
//   wake:   from one notify of all of them until every promise has settled
//           (each promise has a then-callback, attached before the clock
//           starts, that counts it);
//   bytes:  memory per pending waiter, from process.memoryUsage() after a
//           full gc before and after the N calls: rss (everything the
//           process holds, native allocations included) and heapUsed +
//           external (what V8 accounts for).
// The promises are kept in a preallocated array in both cases, so that the
// bytes are what a caller that keeps the promises pays.
//
// Each sample runs in a fresh process: freed memory that the allocator keeps
// would otherwise make every rss delta after the first one meaningless. The
// child measures the bytes in its first pass, while every allocation is
// new, and the times in the passes after it (median), with warm code and a
// warm allocator.

const { execFile } = require('child_process')
const { IMPLS, median, nowNs } = require('./common')

function fullGc () {
  global.gc()
  global.gc()
}

function accounted (m) {
  return m.heapUsed + m.external
}

// One measurement of N waiters; `timeout` in ms (undefined: none).
async function sample (impl, N, timeout) {
  const { waitAsync, notify } = IMPLS[impl]
  const ta = new Int32Array(new SharedArrayBuffer(4))
  const promises = new Array(N).fill(null)

  fullGc()
  const m0 = process.memoryUsage()
  const t0 = nowNs()
  for (let i = 0; i < N; i++) promises[i] = waitAsync(ta, 0, 0, timeout).value
  const t1 = nowNs()
  fullGc()
  const m1 = process.memoryUsage()

  let settled = 0
  let notOk = 0
  let done
  const all = new Promise((resolve) => { done = resolve })
  const onSettle = (v) => {
    if (v !== 'ok') notOk++
    if (++settled === N) done()
  }
  for (let i = 0; i < N; i++) promises[i].then(onSettle)

  const t2 = nowNs()
  const woken = notify(ta, 0)
  await all
  const t3 = nowNs()
  if (woken !== N || notOk !== 0) {
    throw new Error(`${impl}: notify woke ${woken} of ${N}, ${notOk} not 'ok'`)
  }
  return {
    createMs: (t1 - t0) / 1e6,
    wakeMs: (t3 - t2) / 1e6,
    createNs: (t1 - t0) / N,
    wakeNs: (t3 - t2) / N,
    rssBytes: (m1.rss - m0.rss) / N,
    heapBytes: (accounted(m1) - accounted(m0)) / N
  }
}

function inChild (impl, N, timeout) {
  const args = ['--expose-gc', __filename, '--child', impl, String(N), String(timeout)]
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`many-waiters child failed: ${stderr || err.message}`))
        return
      }
      resolve(JSON.parse(stdout))
    })
  })
}

async function childMain ([impl, n, t]) {
  const N = Number(n)
  const timeout = t === 'undefined' ? undefined : Number(t)
  // A ref'd timer keeps the loop alive while the built-in's promises are
  // pending: they do not hold the loop open themselves.
  const keepAlive = setInterval(() => {}, 1 << 30)
  const cold = await sample(impl, N, timeout)
  const warm = []
  for (let k = 0; k < (N >= 1000000 ? 2 : 3); k++) warm.push(await sample(impl, N, timeout))
  clearInterval(keepAlive)
  const mid = (key) => median(warm.map((w) => w[key]))
  process.stdout.write(JSON.stringify({
    createMs: mid('createMs'),
    wakeMs: mid('wakeMs'),
    createNs: mid('createNs'),
    wakeNs: mid('wakeNs'),
    rssBytes: cold.rssBytes,
    heapBytes: cold.heapBytes
  }))
}

// sample(impl) -> { createMs, wakeMs, createNs, wakeNs, rssBytes, heapBytes }
async function open ({ N = 100000, timeout } = {}) {
  return {
    sample: (impl) => inChild(impl, N, timeout),
    close () {}
  }
}

const childAt = process.argv.indexOf('--child')
if (require.main === module && childAt !== -1) {
  childMain(process.argv.slice(childAt + 1)).catch((err) => {
    process.stderr.write(String(err && err.stack ? err.stack : err))
    process.exitCode = 1
  })
}

module.exports = { open }
