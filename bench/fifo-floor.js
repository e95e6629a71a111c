'use strict'

// The floor of a strict FIFO hand-off lock between event-loop threads: a
// token passed round a ring of N threads (the main thread and N - 1
// workers), each pass one wake of the next thread's event loop by the
// built-in Atomics.waitAsync / Atomics.notify, the holder running an empty
// critical section in between. `{ fifo: true }` hands the lock to the
// oldest waiter at every release, so with every thread queued it can do no
// better than one such wake per grant; row 5f compares against this.
//
//   node bench/fifo-floor.js [threads=4] [ms=1000] [rounds=5]
//
// Prints the passes per second of each round and their median, and, in
// the same rounds, threadlock's AsyncLock { fifo: true } with every thread
// in `await lock.executeLocked(f)` (the shape of row 5f).

const { Worker, isMainThread, workerData, parentPort } = require('worker_threads')

if (isMainThread) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
} else {
  worker()
}

// ring: [0] turn (0..n-1), [1] stop, [2] passes, [3] started
async function ringLoop (ring, me, n) {
  // Atomics.waitAsync does not hold the event loop open.
  const open = setInterval(() => {}, 1000)
  while (Atomics.load(ring, 1) === 0) {
    const t = Atomics.load(ring, 0)
    if (t !== me) {
      const r = Atomics.waitAsync(ring, 0, t, 50)
      if (r.async) await r.value
      continue
    }
    Atomics.add(ring, 2, 1)
    Atomics.store(ring, 0, (me + 1) % n)
    Atomics.notify(ring, 0)
  }
  clearInterval(open)
}

async function lockLoop (lock, ctl) {
  while (Atomics.load(ctl, 1) === 0) {
    await lock.executeLocked(() => { Atomics.add(ctl, 2, 1) })
  }
}

function worker () {
  const { kind, buffer, me, n, handle } = workerData
  const shared = new Int32Array(buffer)
  Atomics.add(shared, 3, 1)
  const done = kind === 'ring'
    ? ringLoop(shared, me, n)
    : lockLoop(require('..').AsyncLock.from(handle), shared)
  done.then(() => parentPort.postMessage('done'))
}

async function round (kind, n, ms) {
  const shared = new Int32Array(new SharedArrayBuffer(16))
  let lock
  if (kind === 'lock') lock = new (require('..').AsyncLock)({ fifo: true })
  const workers = []
  for (let i = 1; i < n; i++) {
    workers.push(new Worker(__filename, {
      workerData: { kind, buffer: shared.buffer, me: i, n, handle: lock && lock.handle }
    }))
  }
  while (Atomics.load(shared, 3) < n - 1) await new Promise((resolve) => setTimeout(resolve, 1))
  const ended = workers.map((w) => new Promise((resolve) => w.once('message', resolve)))
  const t0 = performance.now()
  const mine = kind === 'ring' ? ringLoop(shared, 0, n) : lockLoop(lock, shared)
  await new Promise((resolve) => setTimeout(resolve, ms))
  const passes = Atomics.load(shared, 2)
  const elapsed = performance.now() - t0
  Atomics.store(shared, 1, 1)
  Atomics.notify(shared, 0)
  await mine
  await Promise.all(ended)
  await Promise.all(workers.map((w) => w.terminate()))
  return passes / (elapsed / 1000)
}

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

async function main () {
  const [n = 4, ms = 1000, rounds = 5] = process.argv.slice(2).map(Number)
  const ring = []
  const lock = []
  // Alternate, so that the machine's load falls on both alike.
  for (let i = 0; i < rounds; i++) {
    ring.push(await round('ring', n, ms))
    lock.push(await round('lock', n, ms))
  }
  const fmt = (xs) => xs.map((x) => Math.round(x)).join(' ')
  console.log(`threads ${n}, ${rounds} rounds of ${ms} ms, passes or grants per second`)
  console.log(`floor (Atomics.waitAsync ring): median ${Math.round(median(ring))}  [${fmt(ring)}]`)
  console.log(`AsyncLock { fifo: true } executeLocked: median ${Math.round(median(lock))}  [${fmt(lock)}]`)
  console.log(`ratio lock / floor: ${(median(lock) / median(ring)).toFixed(2)}`)
}
