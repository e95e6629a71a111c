'use strict'

// `npm start`: several worker threads and the main thread share one
// AsyncLock. Every thread records when it asked for the lock, got it and
// released it; the main thread prints the timeline at the end.
// Run: node examples/demo.js

const { Worker, isMainThread, workerData, parentPort, threadId } = require('worker_threads')
const { performance } = require('perf_hooks')
const { AsyncLock, wait, notify, waiterCount } = require('threadlock')

const WORKERS = 4
const TURNS = 3 // how often each worker takes the lock
const HOLD_MS = 15 // how long it keeps it

// Slots of the shared control array.
const GO = 0 // 0 until the main thread starts the race
const INSIDE = 1 // threads holding the lock right now: must stay <= 1
const MAX_INSIDE = 2
const TOTAL = 3 // incremented non-atomically under the lock

const now = () => performance.timeOrigin + performance.now()

// Blocks the thread for `ms` (a stand-in for work done under the lock).
function busy (ms) {
  const end = now() + ms
  while (now() < end);
}

// The critical section, the same in every thread.
function critical (ctl, log, how, asked) {
  const [granted, released] = how === 'lock()'
    ? ['lock() returned', 'unlock()']
    : ['acquire() resolved', 'release()']
  const got = now()
  const inside = Atomics.add(ctl, INSIDE, 1) + 1
  if (inside > Atomics.load(ctl, MAX_INSIDE)) Atomics.store(ctl, MAX_INSIDE, inside)
  ctl[TOTAL] = ctl[TOTAL] + 1
  log({ t: got, what: `${granted} after ${(got - asked).toFixed(1)} ms` })
  busy(HOLD_MS)
  Atomics.sub(ctl, INSIDE, 1)
  log({ t: now(), what: released })
}

if (isMainThread) {
  main()
} else {
  const lock = AsyncLock.from(workerData.lock)
  const ctl = new Int32Array(workerData.ctl)
  const log = (event) => parentPort.postMessage({ ...event, who: `worker ${threadId}` })
  wait(ctl, GO, 0) // the start line
  // Odd workers block in lock(); even ones await acquire().
  const run = async () => {
    for (let turn = 0; turn < TURNS; turn++) {
      const asked = now()
      if (threadId % 2 === 1) {
        lock.lock()
        try {
          critical(ctl, log, 'lock()', asked)
        } finally {
          lock.unlock()
        }
      } else {
        const release = await lock.acquire()
        try {
          critical(ctl, log, 'acquire()', asked)
        } finally {
          release()
        }
      }
    }
  }
  run()
}

async function main () {
  const lock = new AsyncLock()
  const ctl = new Int32Array(new SharedArrayBuffer(4 * 4))
  const events = []
  const log = (event) => events.push({ ...event, who: 'main' })

  console.log(`threadlock demo: ${WORKERS} worker threads and the main thread share one AsyncLock.`)
  console.log(`Each worker takes it ${TURNS} times and keeps it ${HOLD_MS} ms; odd workers block in`)
  console.log('lock(), even ones await acquire(). The main thread awaits acquire() twice.\n')

  const exits = []
  for (let i = 0; i < WORKERS; i++) {
    const worker = new Worker(__filename, { workerData: { lock: lock.handle, ctl: ctl.buffer } })
    worker.on('message', (event) => events.push(event))
    exits.push(new Promise((resolve, reject) => {
      worker.once('error', reject)
      worker.once('exit', resolve)
    }))
  }

  // Release every worker at once, when all of them wait at the start line.
  while (waiterCount(ctl, GO) < WORKERS) await new Promise((resolve) => setTimeout(resolve, 1))
  const start = now()
  Atomics.store(ctl, GO, 1)
  notify(ctl, GO)

  // The main thread's event loop keeps running while it waits for the lock.
  let ticks = 0
  const ticker = setInterval(() => { ticks++ }, 5)
  for (let turn = 0; turn < 2; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    const asked = now()
    const release = await lock.acquire()
    try {
      critical(ctl, log, 'acquire()', asked)
    } finally {
      release()
    }
  }
  await Promise.all(exits)
  clearInterval(ticker)

  events.sort((a, b) => a.t - b.t)
  console.log('    ms  thread')
  for (const e of events) {
    console.log(`${(e.t - start).toFixed(1).padStart(6)}  ${e.who.padEnd(9)}  ${e.what}`)
  }
  const grants = WORKERS * TURNS + 2
  console.log(`\n${ctl[TOTAL]} of ${grants} turns done; at most ${ctl[MAX_INSIDE]} thread held the lock at a time.`)
  console.log(`The main thread's timers fired ${ticks} times meanwhile: acquire() never blocked its event loop.`)
  if (ctl[TOTAL] !== grants || ctl[MAX_INSIDE] !== 1) process.exitCode = 1
}
