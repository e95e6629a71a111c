'use strict'

// Rows 5*: one gate, the main thread and `threads - 1` workers all taking it
// in a loop for a fixed time, threadlock side by side with an anchor built
// on the built-in Atomics (or, for named locks, Node's own LockManager).
//
// The critical section is tiny. It increments a shared counter with plain
// (non-atomic) reads and writes, which loses updates unless the gate really
// excludes, and counts the operation for its thread while the clock runs.
// It also reads the thread's clock: every request stamps the time just
// before it calls the gate (`requestedAt`), and the critical section takes
// the difference, so each thread keeps its longest wait from request to
// grant and a histogram of all its waits in the shared buffer. Both clock
// readings are on the same thread, so the threads' clocks need not agree.
//
// Reported per sample: throughput (operations per second, all threads),
// share (the largest per-thread count over the smallest, Infinity when a
// thread got nothing), the longest wait of any request and the 99th
// percentile of all waits (from the merged histograms, to within 1/8 of an
// octave, rounded up).
//
// workers 'async': every thread loops on the gate's promise form
//                  (`await lock.executeLocked(f)` for a lock);
// workers 'sync':  the main thread does that and the workers use the
//                  blocking form (lock() / f() / unlock()).
//
// Gate kinds, each with its anchor:
//   lock       AsyncLock, opened with `lockOptions` (see POLICIES), against
//              the V8 blog's lock (blog-lock.js); with `fifo: true` the
//              session also has 'fifo', a second AsyncLock on its own word
//              opened with POLICIES.fifo, so that the default policy, strict
//              FIFO and the anchor alternate in the same rounds;
//   semaphore  Semaphore(permits), acquire() + release, against a blog-style
//              semaphore (blog-semaphore.js); with more than one permit the
//              check is that never more than `permits` threads are inside;
//   rwlock     RWLock writers only (runWrite, or acquireWriteSync / releaseWrite),
//              against the blog lock: a writer-only RWLock is a mutex;
//   named      threadlock.locks.request(name, f), exclusive, against
//              worker_threads.locks.request where Node has it (>= 24.5).

const { isMainThread, parentPort, workerData } = require('worker_threads')
const workerThreads = require('worker_threads')
const { performance } = require('perf_hooks')
const threadlock = require('..')
const { BlogLock } = require('./blog-lock')
const { BlogSemaphore } = require('./blog-semaphore')
const { STRIDE, nowNs, sleep, startWorkers, serve } = require('./common')

// The options that select threadlock's lock policies: the one place to
// change when the option names change. `default` is what a user gets from
// `new AsyncLock()` (undefined: the lock is opened without options, from
// its buffer and offset); `fifo` is strict FIFO hand-off.
const POLICIES = {
  default: undefined,
  fifo: { fifo: true }
}

// Int32 slots, each on its own cache line.
const TL_WORD = 0 // threadlock's gate word (byte offset 0)
const ANCHOR_WORD = STRIDE // the anchor's gate word
const FIFO_WORD = 2 * STRIDE // the 'fifo' lock's word (kind 'lock' with fifo)
const DATA = 3 * STRIDE // the counter the gate protects; samples clear from here
const INSIDE = DATA + 1 // threads inside the section (semaphore with permits > 1)
const OVER = DATA + 2 // times more than `permits` threads were inside
const STOP = 4 * STRIDE
const GO = 5 * STRIDE
const READY = 6 * STRIDE
const THREADS = 7 * STRIDE // first per-thread block

// Per-thread block, in Int32 slots: [windowed count, total count], the
// longest wait as a Float64 (ms) at slot 2, then the wait histogram.
const WINDOWED = 0
const TOTAL = 1
const LONGEST = 2
const HIST = 4
// Waits are binned in units of 0.1 µs: below 8 units one bin per unit,
// above that 8 bins per octave, up to 2^31 units (about 214 s).
const HIST_BINS = 8 + 28 * 8
const BLOCK = Math.ceil((HIST + HIST_BINS) / STRIDE) * STRIDE

function layoutSize (threads) {
  return 4 * (THREADS + BLOCK * threads)
}

function histBin (units) {
  if (units < 8) return units < 0 ? 0 : units
  const e = 31 - Math.clz32(units)
  return (e - 2) * 8 + ((units >>> (e - 3)) & 7)
}

// The upper end of bin `b`, in µs.
function histUpperUs (b) {
  if (b < 8) return (b + 1) / 10
  const e = (b >> 3) + 2
  return (9 + (b & 7)) * 2 ** (e - 3) / 10
}

const NAME = 'threadlock-bench-contended'

function namedAnchor () {
  const { locks } = workerThreads
  return locks && typeof locks.request === 'function' ? locks : null
}

// The implementations available for `kind` in this Node (`fifo`: the
// session has the second, strict FIFO lock too).
function implsFor (kind, fifo = false) {
  if (kind === 'named') return namedAnchor() ? ['threadlock', 'web'] : ['threadlock']
  return kind === 'lock' && fifo ? ['threadlock', 'fifo', 'blog'] : ['threadlock', 'blog']
}

function openAsyncLock (buffer, byteOffset, options) {
  return options === undefined
    ? threadlock.AsyncLock.from({ buffer, byteOffset })
    : new threadlock.AsyncLock(buffer, byteOffset, options)
}

function lockGate (lock) {
  return {
    run: (f) => lock.executeLocked(f),
    enter: () => lock.lock(),
    leave: () => lock.unlock(),
    leftover: () => (lock.locked || lock.waiting !== 0
      ? `lock held by ${lock.owner}, ${lock.waiting} waiting`
      : null)
  }
}

// What one thread needs of each implementation: `run(f)`, the promise form;
// `enter()` / `leave()`, the blocking form (absent for named locks); and
// `leftover()`, which describes what is still held or queued once every
// thread stopped (null when nothing is). `init` is true on the main thread,
// which sets the initial count of a semaphore before any worker opens it.
function openGates (sab, config, init) {
  const { kind } = config
  const tlOffset = 4 * TL_WORD
  const anchorOffset = 4 * ANCHOR_WORD
  if (kind === 'lock' || kind === 'rwlock') {
    const blog = new BlogLock(sab, anchorOffset)
    const anchorWord = new Int32Array(sab, anchorOffset, 1)
    const gates = {
      blog: {
        run: (f) => blog.executeLocked(f),
        enter: () => blog.lock(),
        leave: () => blog.unlock(),
        leftover: () => (Atomics.load(anchorWord, 0) !== 0 ? 'the blog lock is still held' : null)
      }
    }
    if (kind === 'lock') {
      gates.threadlock = lockGate(openAsyncLock(sab, tlOffset, config.lockOptions))
      if (config.fifo) gates.fifo = lockGate(openAsyncLock(sab, 4 * FIFO_WORD, POLICIES.fifo))
    } else {
      const rw = threadlock.RWLock.from({ buffer: sab, byteOffset: tlOffset })
      gates.threadlock = {
        run: (f) => rw.runWrite(f),
        enter: () => rw.acquireWriteSync(),
        leave: () => rw.releaseWrite(),
        leftover: () => (rw.writer !== null || rw.readers !== 0 || rw.waiting !== 0
          ? `writer ${rw.writer}, ${rw.readers} readers, ${rw.waiting} waiting`
          : null)
      }
    }
    return gates
  }
  if (kind === 'semaphore') {
    const { permits } = config
    const sem = init
      ? new threadlock.Semaphore(permits, sab, tlOffset)
      : threadlock.Semaphore.from({ buffer: sab, byteOffset: tlOffset })
    const blog = new BlogSemaphore(sab, anchorOffset, init ? permits : undefined)
    return {
      threadlock: {
        run: async (f) => {
          const release = await sem.acquire()
          f()
          release()
        },
        enter: () => sem.acquireSync(),
        leave: () => sem.release(),
        leftover: () => (sem.value !== permits || sem.waiting !== 0
          ? `${sem.value} of ${permits} permits free, ${sem.waiting} waiting`
          : null)
      },
      blog: {
        run: async (f) => {
          await blog.acquire()
          f()
          blog.release()
        },
        enter: () => blog.acquireSync(),
        leave: () => blog.release(),
        leftover: () => (blog.value !== permits ? `${blog.value} of ${permits} permits free` : null)
      }
    }
  }
  if (kind === 'named') {
    const web = namedAnchor()
    const leftover = async (manager) => {
      const { held, pending } = await manager.query()
      const h = held.filter((l) => l.name === NAME).length
      const p = pending.filter((l) => l.name === NAME).length
      return h || p ? `${h} held, ${p} pending` : null
    }
    const gates = {
      threadlock: {
        run: (f) => threadlock.locks.request(NAME, f),
        leftover: () => leftover(threadlock.locks)
      }
    }
    if (web) {
      gates.web = {
        run: (f) => web.request(NAME, f),
        leftover: () => leftover(web)
      }
    }
    return gates
  }
  throw new Error(`contended: unknown gate kind ${kind}`)
}

// When this thread last asked for the gate, by its own clock (ms). Each
// thread has at most one request outstanding, so one variable is enough.
let requestedAt = 0

// The critical section of thread `t`.
function criticalSection (i32, f64, t, permits) {
  const base = THREADS + t * BLOCK
  const windowed = base + WINDOWED
  const total = base + TOTAL
  const longest = (base + LONGEST) >> 1
  const hist = base + HIST
  function record () {
    const w = performance.now() - requestedAt
    if (w > f64[longest]) f64[longest] = w
    i32[hist + histBin(Math.min(w * 1e4, 0x7fffffff) | 0)]++
    i32[DATA] = i32[DATA] + 1
    i32[total]++
    if (Atomics.load(i32, STOP) === 0) i32[windowed]++
  }
  if (permits === 1) return record
  // Several permits: the counter above may lose updates by design, so count
  // the threads inside instead.
  return () => {
    if (Atomics.add(i32, INSIDE, 1) >= permits) i32[OVER]++
    record()
    Atomics.sub(i32, INSIDE, 1)
  }
}

async function loopAsync (i32, gate, f) {
  while (Atomics.load(i32, STOP) === 0) {
    requestedAt = performance.now()
    await gate.run(f)
  }
}

function loopSync (i32, gate, f) {
  while (Atomics.load(i32, STOP) === 0) {
    requestedAt = performance.now()
    gate.enter()
    f()
    gate.leave()
  }
}

function workerMain () {
  const { sab, t, config } = workerData
  const i32 = new Int32Array(sab)
  const f64 = new Float64Array(sab)
  const gates = openGates(sab, config, false)
  const f = criticalSection(i32, f64, t, config.permits)
  serve(parentPort, async ({ impl }) => {
    const gate = gates[impl]
    Atomics.add(i32, READY, 1)
    while (Atomics.load(i32, GO) === 0) Atomics.wait(i32, GO, 0)
    const cpu0 = threadCpuUs()
    if (config.workers === 'sync') loopSync(i32, gate, f)
    else await loopAsync(i32, gate, f)
    return { cpuUs: cpu0 === null ? null : threadCpuUs() - cpu0 }
  })
}

// This thread's CPU time in µs (process.threadCpuUsage, Node.js 23.9 and
// later), or null: with it, a sample tells how the CPU was shared among
// the threads, which a share of grants can then be read against.
function threadCpuUs () {
  if (typeof process.threadCpuUsage !== 'function') return null
  const u = process.threadCpuUsage()
  return u.user + u.system
}

// Opens a session: the buffer, the gates and the workers, kept for every
// sample. sample(impl) -> { throughput, share, longestMs, p99Us }.
//
//   kind         'lock', 'semaphore', 'rwlock' or 'named'
//   threads      the main thread plus threads - 1 workers
//   workers      'async' or 'sync' (the workers' form; main is always async)
//   lockOptions  AsyncLock options for kind 'lock' (POLICIES.default: none)
//   fifo         kind 'lock': add the implementation 'fifo' (POLICIES.fifo)
//   permits      for kind 'semaphore'
async function open ({
  kind = 'lock', threads = 4, durationMs = 500, workers: workerMode = 'async',
  lockOptions = POLICIES.default, permits = 1, fifo = false
} = {}) {
  if (workerMode === 'sync' && kind === 'named') {
    throw new Error('contended: named locks have no blocking form')
  }
  const config = {
    kind, workers: workerMode, lockOptions, permits: kind === 'semaphore' ? permits : 1, fifo: kind === 'lock' && fifo
  }
  const sab = new SharedArrayBuffer(layoutSize(threads))
  const i32 = new Int32Array(sab)
  const f64 = new Float64Array(sab)
  const gates = openGates(sab, config, true)
  const f = criticalSection(i32, f64, 0, config.permits)
  const workers = await startWorkers(__filename, threads - 1, (k) => ({
    bench: 'contended',
    sab,
    t: k + 1,
    config
  }))

  async function sample (impl) {
    const gate = gates[impl]
    if (gate === undefined) throw new Error(`contended: no implementation ${impl} for ${kind}`)
    i32.fill(0, DATA)
    const done = Promise.all(workers.map((w) => w.request({ impl })))
    let cpu0 = null
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
    // The timer stops the clock while this thread waits for the gate; the
    // check in the loop stops it while this thread keeps the gate to itself
    // through promise jobs alone and never returns to the event loop.
    const timer = setTimeout(stop, durationMs)
    cpu0 = threadCpuUs()
    Atomics.store(i32, GO, 1)
    Atomics.notify(i32, GO)
    let k = 0
    while (Atomics.load(i32, STOP) === 0) {
      requestedAt = performance.now()
      await gate.run(f)
      if ((++k & 15) === 0 && nowNs() >= end) stop()
    }
    clearTimeout(timer)
    const mainCpuUs = cpu0 === null ? null : threadCpuUs() - cpu0
    const replies = await done

    let sum = 0
    let totals = 0
    let max = 0
    let min = Infinity
    let longestMs = 0
    const hist = new Float64Array(HIST_BINS)
    const perThread = []
    for (let t = 0; t < threads; t++) {
      const base = THREADS + t * BLOCK
      const c = i32[base + WINDOWED]
      perThread.push(c)
      sum += c
      totals += i32[base + TOTAL]
      if (c > max) max = c
      if (c < min) min = c
      longestMs = Math.max(longestMs, f64[(base + LONGEST) >> 1])
      for (let b = 0; b < HIST_BINS; b++) hist[b] += i32[base + HIST + b]
    }
    if (config.permits === 1 && i32[DATA] !== totals) {
      throw new Error(`${impl}: ${totals - i32[DATA]} updates were lost, so the gate did not exclude`)
    }
    if (i32[OVER] !== 0) {
      throw new Error(`${impl}: more than ${config.permits} threads were inside ${i32[OVER]} times`)
    }
    const left = await gate.leftover()
    if (left !== null) throw new Error(`${impl}: after the run, ${left}`)

    let p99Us = 0
    const rank = 0.99 * totals
    for (let b = 0, seen = 0; b < HIST_BINS; b++) {
      seen += hist[b]
      if (seen >= rank) {
        p99Us = histUpperUs(b)
        break
      }
    }
    return {
      throughput: sum / ((t1 - t0) / 1e9),
      share: min === 0 ? Infinity : max / min,
      longestMs,
      p99Us,
      perThread, // operations by thread, the main thread first
      // CPU ms by thread, in the same order (null before Node.js 23.9)
      perThreadCpuMs: mainCpuUs === null ? null : [mainCpuUs, ...replies.map((r) => r.cpuUs)].map((us) => Math.round(us / 100) / 10)
    }
  }

  return {
    impls: implsFor(kind, config.fifo),
    sample,
    close () {
      return Promise.all(workers.map((w) => w.terminate()))
    }
  }
}

if (!isMainThread && workerData && workerData.bench === 'contended') workerMain()

module.exports = { POLICIES, implsFor, open, histBin, histUpperUs }
