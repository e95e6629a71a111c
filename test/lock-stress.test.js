'use strict'

// Lock stress: many contended increments with an exact count, and rounds of
// terminating a random worker in the middle of a wait. Modest sizes here;
// `npm run stress` (test/stress/run.js) sets THREADLOCK_STRESS_SCALE=10 for
// 1,000,000 increments and 200 rounds.

const assert = require('assert')
const { AsyncLock, waiterCount, notify } = require('..')
const { TestWorker, cleanup, track, mainGuard, guarded, within, until, sleep, progress, progressDone, STRESS_SCALE } =
  require('./fixtures/threads')

const INCREMENTS = 100000 * STRESS_SCALE
const ROUNDS = 20 * STRESS_SCALE

describe('lock stress', function () {
  this.timeout(Math.max(30000, 60000 * STRESS_SCALE))
  before(mainGuard)
  afterEach(cleanup)

  it(`${INCREMENTS.toLocaleString('en')} contended increments by 4 workers and the main thread end exact`, async () => {
    const lock = track(new AsyncLock())
    // counter[0] is read and written without atomics, only under the lock;
    // [1]: workers at the start line; [2]: the start signal.
    const counter = new Int32Array(new SharedArrayBuffer(12))
    const mainShare = Math.floor(INCREMENTS / 20)
    const perWorker = (INCREMENTS - mainShare) / 4
    assert.ok(Number.isInteger(perWorker))
    const workers = [0, 1, 2, 3].map(() => new TestWorker({ locks: [lock], data: { counter } }))
    await Promise.all(workers.map((w) => w.ready()))
    const runs = workers.map((w, k) => w.run(async ({ locks, workerData }, { n, k }) => {
      const lock = locks[0]
      const c = workerData.counter
      const bump = () => { c[0] = c[0] + 1 }
      Atomics.add(c, 1, 1)
      Atomics.wait(c, 2, 0)
      for (let i = 0; i < n; i++) {
        // Mostly the blocking API; every 16th increment (and all of worker
        // 3's every other) through the promise API, so both kinds of waiter
        // contend in one queue.
        if (i % 16 === 0 || (k === 3 && i % 2 === 0)) {
          const release = await lock.acquire()
          bump()
          release()
        } else {
          lock.lock()
          bump()
          lock.unlock()
        }
      }
    }, { n: perWorker, k }))
    const ticker = setInterval(() => progress(`${counter[0].toLocaleString('en')} / ${INCREMENTS.toLocaleString('en')}`), 250)
    try {
      await until(() => Atomics.load(counter, 1) === 4, 'the workers did not reach the start line')
      Atomics.store(counter, 2, 1)
      Atomics.notify(counter, 2)
      for (let i = 0; i < mainShare; i++) {
        await lock.executeLocked(() => { counter[0] = counter[0] + 1 })
      }
      await within(Promise.all(runs), this.timeout() - 5000, 'the workers did not finish their increments')
    } finally {
      clearInterval(ticker)
      progressDone()
    }
    assert.strictEqual(counter[0], INCREMENTS)
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(lock.waiting, 0)
  })

  it(`${ROUNDS} rounds of terminating a random worker mid-wait: no hang, the survivors keep going`, async () => {
    const POOL = 4
    const lock = track(new AsyncLock())
    // ta[0]: waited on with wait/waitAsync; ta[1]: stop flag; ta[2]: the
    // count of lock hand-offs flagged ownerDied; ta[3 + slot]: progress.
    const ta = new Int32Array(new SharedArrayBuffer(4 * (3 + POOL)))
    const loop = async ({ tl, locks, workerData }, slot) => {
      const ta = workerData.ta
      const lock = locks[0]
      let i = 0
      while (Atomics.load(ta, 1) === 0) {
        switch (i++ % 4) {
          case 0:
            lock.lock()
            if (lock.ownerDied) Atomics.add(ta, 2, 1)
            for (let k = 0; k < 100; k++) Atomics.add(ta, 3 + slot, 0)
            lock.unlock()
            break
          case 1: {
            const release = await lock.acquire()
            if (release.ownerDied) Atomics.add(ta, 2, 1)
            await new Promise((resolve) => setImmediate(resolve))
            release()
            break
          }
          case 2:
            tl.wait(ta, 0, 0, 2)
            break
          default:
            await tl.waitAsync(ta, 0, 0, 2).value
        }
        Atomics.add(ta, 3 + slot, 1)
      }
      return i
    }
    const spawn = async (slot) => {
      const w = new TestWorker({ locks: [lock], data: { ta } })
      await w.ready()
      w.loop = w.run(loop, slot)
      w.loop.catch(() => {}) // terminated workers reject; the survivors are checked below
      w.slot = slot
      return w
    }
    const moving = async (slots, what) => {
      const before = slots.map((s) => Atomics.load(ta, 3 + s))
      await until(() => slots.every((s, j) => Atomics.load(ta, 3 + s) > before[j]), what, 10000)
    }
    const pool = await Promise.all(Array.from({ length: POOL }, (_, slot) => spawn(slot)))
    let slowest = 0
    for (let round = 0; round < ROUNDS; round++) {
      progress(`round ${round + 1} / ${ROUNDS}`)
      const k = Math.floor(Math.random() * POOL)
      const victim = pool[k]
      await moving([victim.slot], `round ${round}: the victim is not running`)
      await sleep(Math.random() * 5)
      if (round % 3 === 0) notify(ta, 0, 1)
      const ms = await victim.terminate()
      slowest = Math.max(slowest, ms)
      assert.ok(ms < 1000, `round ${round}: terminate() took ${ms.toFixed(1)} ms`)
      pool[k] = await spawn(victim.slot)
      if (round % 10 === 9 || round === ROUNDS - 1) {
        await moving(pool.map((w) => w.slot), `round ${round}: a surviving worker is stuck`)
      }
    }
    progressDone()
    Atomics.store(ta, 1, 1)
    notify(ta, 0)
    const loops = await within(Promise.all(pool.map((w) => w.loop)), 10000, 'the workers did not stop')
    assert.ok(loops.every((n) => n > 0))
    assert.strictEqual(waiterCount(ta, 0), 0)
    assert.strictEqual(lock.waiting, 0)
    // A victim may have died holding the lock with nobody waiting: then the
    // next acquirer recovers it.
    guarded('the final lock({ timeout })', () => lock.lock({ timeout: 5000 }))
    lock.unlock()
    assert.strictEqual(lock.locked, false)
    if (process.env.THREADLOCK_STRESS_PROGRESS === '1') {
      console.log(`      slowest terminate() ${slowest.toFixed(1)} ms; ${ta[2]} hand-offs from a dead owner`)
    }
  })
})
