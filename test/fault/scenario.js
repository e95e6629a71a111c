'use strict'

// Worker of smoke.test.js: one pass over every primitive with a pending,
// queued or timed request, so that the glue and the core allocate in all
// their places. The armed allocation fails somewhere in it: a step that
// meets it must fail with code ENOMEM and change nothing; the other steps
// must work. Posts the outcome of every step and the state left behind.

const assert = require('assert')
const { parentPort, workerData: { root } } = require('worker_threads')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function main () {
  const tl = require(root) // loading allocates this thread's state
  const { binding } = require(root + '/lib/native')
  const steps = {}
  const words = []

  async function step (name, fn) {
    try {
      await fn()
      steps[name] = 'ok'
    } catch (err) {
      if (!err || err.code !== 'ENOMEM') throw err
      steps[name] = 'ENOMEM'
    }
  }
  // A gate's word, with the value it must have again once all is released
  // (the free permits of a semaphore, 0 for the locks).
  function word (buffer, free = 0) {
    words.push([new Int32Array(buffer, 0, 1), free])
    return buffer
  }

  await step('waitAsync', async () => {
    const ta = new Int32Array(new SharedArrayBuffer(8))
    const r = tl.waitAsync(ta, 0, 0, 10000)
    assert.strictEqual(r.async, true)
    assert.strictEqual(tl.notify(ta, 0), 1)
    assert.strictEqual(await r.value, 'ok')
  })
  await step('waitAsync timeout', async () => {
    const ta = new Int32Array(new SharedArrayBuffer(8))
    assert.strictEqual(await tl.waitAsync(ta, 1, 0, 5).value, 'timed-out')
  })
  await step('AsyncLock fifo', async () => {
    const lock = new tl.AsyncLock(word(new SharedArrayBuffer(4)), 0, { fifo: true })
    const release = await lock.acquire()
    let next
    try {
      next = lock.acquire({ timeout: 10000 })
    } finally {
      release()
    }
    ;(await next)()
  })
  await step('AsyncLock', async () => {
    // By default this thread's own requests queue in JavaScript; only one
    // waiting for another thread goes to the core. The main thread (lock id
    // 1, alive) plays that thread: its id in the word, its release through
    // the core.
    const { GATE_LOCK, LOCK_BARGE } = binding.constants
    const buffer = word(new SharedArrayBuffer(4))
    const i32 = new Int32Array(buffer)
    const lock = new tl.AsyncLock(buffer)
    Atomics.store(i32, 0, 1)
    let next
    try {
      next = lock.acquire({ timeout: 10000 })
    } finally {
      // The low four bits are the answer; the rest tells when the oldest
      // waiter starves (lib/LockWord.js).
      assert.strictEqual(binding.gateRelease(i32, 0, GATE_LOCK, 1, LOCK_BARGE) & 15, 0)
    }
    ;(await next)()
  })
  await step('Semaphore', async () => {
    const sem = new tl.Semaphore(1, word(new SharedArrayBuffer(4), 1))
    const release = await sem.acquire()
    let next
    try {
      next = sem.acquire(1, { timeout: 10000 })
    } finally {
      release()
    }
    ;(await next)()
  })
  await step('RWLock', async () => {
    const rw = new tl.RWLock(word(new SharedArrayBuffer(4)))
    const release = await rw.acquireWrite()
    let reader
    try {
      reader = rw.acquireRead({ timeout: 10000 })
    } finally {
      release()
    }
    ;(await reader)()
  })
  await step('CountDownLatch', async () => {
    const latch = new tl.CountDownLatch(1)
    const done = latch.wait({ timeout: 10000 })
    latch.countDown()
    await done
  })
  await step('locks.request', async () => {
    const name = 'fault-' + 'x'.repeat(100) // longer than the stack buffer
    const first = tl.locks.request(name, () => sleep(5))
    const second = tl.locks.request(name, () => 'second')
    const results = await Promise.allSettled([first, second])
    for (const r of results) if (r.status === 'rejected') throw r.reason
  })

  parentPort.postMessage({
    steps,
    words: words.map(([w, free]) => Atomics.load(w, 0) - free),
    waiters: binding.totalWaiters(),
    names: binding.namedCount()
  })
}

main().catch((err) => {
  // Only running out of memory may end the pass early; anything else is a
  // failure the main thread reports.
  parentPort.postMessage({ error: { code: err && err.code, message: String(err && err.stack) } })
})
