'use strict'

// Semaphore: the API in one thread, then the guarantees across real worker
// threads: never more than n permits held at once, queued requests served
// in the order they queued, new requests barging past them until one has
// starved (a large request is not starved by small ones), timeouts, aborts,
// bad input, and workers terminated while they wait. Functions passed to w.run() execute
// inside the worker (test/fixtures/runner-worker.js); the shared workloads
// are in test/fixtures/sem-tasks.js.

const assert = require('assert')
const { Semaphore, lockPolicy } = require('..')
const { TestWorker, openIn, started, cleanup, reuse, within, until, sleep, thrown, rejection, assertCode, assertAbort, refusals } = require('./fixtures/threads')
const tasks = require('./fixtures/sem-tasks')

const MAX = 0x1fffffff
// Long enough that a queued request has starved (lockPolicy.starvationMs).
const STARVED_MS = 5 * lockPolicy.starvationMs

// Errors thrown in a worker arrive as plain Errors carrying the name, code
// and constructor name of the original.
describe('Semaphore (one thread)', () => {
  it('starts with the given permits in its own buffer or in a slot of a given one', () => {
    const sem = new Semaphore()
    assert.strictEqual(sem.value, 1)
    assert.strictEqual(sem.waiting, 0)
    assert.ok(sem.handle.buffer instanceof SharedArrayBuffer)
    assert.strictEqual(sem.handle.buffer.byteLength, 4)
    assert.strictEqual(sem.handle.byteOffset, 0)
    assert.strictEqual(new Semaphore(0).value, 0)
    assert.strictEqual(new Semaphore(MAX).value, MAX)

    const sab = new SharedArrayBuffer(12)
    const words = new Int32Array(sab)
    const s = new Semaphore(5, sab, 8)
    assert.deepStrictEqual([...words], [0, 0, 5])
    assert.deepStrictEqual(s.handle, { type: 'Semaphore', buffer: sab, byteOffset: 8 })
  })

  it('from(handle) opens the same count without resetting it, also after structured cloning', () => {
    const sem = new Semaphore(3, new SharedArrayBuffer(8), 4)
    assert.strictEqual(sem.tryAcquire(2), true)
    const copy = Semaphore.from(structuredClone(sem.handle))
    assert.strictEqual(copy.value, 1)
    assert.strictEqual(copy.tryAcquire(), true)
    assert.strictEqual(sem.value, 0)
    sem.release(3)
    assert.strictEqual(copy.value, 3)
    assert.strictEqual(Semaphore.from({ buffer: new SharedArrayBuffer(4) }).value, 0)
  })

  it('tryAcquire takes permits only when all of them are available', () => {
    const sem = new Semaphore(3)
    assert.strictEqual(sem.tryAcquire(), true)
    assert.strictEqual(sem.value, 2)
    assert.strictEqual(sem.tryAcquire(3), false)
    assert.strictEqual(sem.value, 2, 'a refused tryAcquire must take nothing')
    assert.strictEqual(sem.tryAcquire(2), true)
    assert.strictEqual(sem.tryAcquire(), false)
    assert.strictEqual(sem.value, 0)
    sem.release(3)
    assert.strictEqual(sem.value, 3)
  })

  it('acquireSync takes available permits; with a timeout it throws ETIMEDOUT and takes nothing', () => {
    const sem = new Semaphore(2)
    sem.acquireSync()
    sem.acquireSync(1, { timeout: 0 })
    assert.strictEqual(sem.value, 0)
    sem.release(2)
    sem.acquireSync(2, { timeout: Infinity })
    sem.release()
    const t0 = Date.now()
    const err = thrown(() => sem.acquireSync(2, { timeout: 40 }))
    const elapsed = Date.now() - t0
    assertCode(err, 'ETIMEDOUT')
    assert.match(err.message, /acquireSync/)
    assert.ok(elapsed >= 35 && elapsed < 5000, `acquireSync({ timeout: 40 }) gave up after ${elapsed} ms`)
    assert.strictEqual(sem.value, 1)
    assert.strictEqual(sem.waiting, 0)
    assertCode(thrown(() => sem.acquireSync(2, { timeout: 0 })), 'ETIMEDOUT')
    assert.strictEqual(sem.value, 1)
  })

  it('acquire resolves with a release function that returns the permits once, also through Symbol.dispose', async () => {
    const sem = new Semaphore(3)
    const release = await sem.acquire(2)
    assert.strictEqual(typeof release, 'function')
    assert.strictEqual(release.ownerDied, false)
    assert.strictEqual(sem.value, 1)
    release()
    assert.strictEqual(sem.value, 3)
    release()
    assert.strictEqual(sem.value, 3, 'a second call of the release function must return nothing')
    const r2 = await sem.acquire()
    r2[Symbol.dispose]()
    r2()
    assert.strictEqual(sem.value, 3)
  })

  it('queued requests of one thread are granted in the order they queued: a large one at the head holds back small ones', async () => {
    const sem = new Semaphore(0)
    const order = []
    const sizes = [3, 1, 2, 1]
    const done = sizes.map((k, i) => sem.acquire(k).then((release) => { order.push(i); return release }))
    assert.strictEqual(sem.waiting, 4)
    sem.release(2)
    await sleep(20)
    assert.deepStrictEqual(order, [], 'a small queued request passed the large one at the head')
    assert.strictEqual(sem.value, 2)
    sem.release(2) // 4: the 3 and the 1 behind it
    await until(() => order.length === 2, 'the first two requests were not granted')
    await sleep(20)
    assert.deepStrictEqual(order, [0, 1])
    assert.strictEqual(sem.value, 0)
    sem.release(3) // the 2 and the last 1
    const releases = await within(Promise.all(done), 5000, 'the queued requests were not all granted')
    assert.deepStrictEqual(order, [0, 1, 2, 3])
    assert.strictEqual(sem.waiting, 0)
    for (const r of releases) r()
    assert.strictEqual(sem.value, 7)
  })

  it('a release in the thread of its queued requests grants them before the thread returns to its event loop, in order, as far as the permits go', async () => {
    // The release drains this thread's ready queue (src/ready.c): each
    // woken request takes its permits and wakes the next, within release().
    const sem = new Semaphore(0)
    const order = []
    const done = [1, 2, 1, 1].map((k, i) => sem.acquire(k).then((release) => { order.push(i); return release }))
    assert.strictEqual(sem.waiting, 4)
    sem.release(4) // the 1, the 2 and the next 1; the last one still waits
    for (let i = 0; i < 10; i++) await null // microtasks only: no turn of the loop
    assert.deepStrictEqual(order, [0, 1, 2], 'the requests were not granted within the release')
    assert.strictEqual(sem.value, 0)
    assert.strictEqual(sem.waiting, 1)
    const [r0] = await Promise.all(done.slice(0, 3))
    r0() // the last request, within this release too
    for (let i = 0; i < 10; i++) await null
    assert.deepStrictEqual(order, [0, 1, 2, 3])
    const releases = await Promise.all(done)
    for (const r of releases.slice(1)) r()
    assert.strictEqual(sem.value, 4)
    assert.strictEqual(sem.waiting, 0)
  })

  it('a new request takes free permits past a queued one (barging) until a queued request has starved; then releases gather permits for it', async () => {
    const sem = new Semaphore(1)
    let granted = false
    const big = sem.acquire(2).then((release) => { granted = true; return release })
    assert.strictEqual(sem.waiting, 1)
    // No release since it queued, so nothing is reserved, however long ago
    // that was.
    assert.strictEqual(sem.tryAcquire(), true, 'a free permit must go to a new request while the queued one does not fit')
    assert.strictEqual(sem.value, 0)
    await sleep(STARVED_MS)
    sem.release() // 1 of 2: kept for the starving request
    assert.strictEqual(sem.value, 1)
    assert.strictEqual(sem.tryAcquire(), false, 'tryAcquire took a permit reserved for a starving request')
    assertCode(await rejection(sem.acquire(1, { blocking: false })), 'EBUSY')
    assertCode(thrown(() => sem.acquireSync(1, { timeout: 0 })), 'ETIMEDOUT')
    await sleep(20)
    assert.strictEqual(granted, false)
    assert.strictEqual(sem.value, 1)
    sem.release() // 2 of 2
    const release = await within(big, 5000, 'the starving request was not granted')
    assert.strictEqual(sem.value, 0)
    assert.strictEqual(sem.waiting, 0)
    release()
    assert.strictEqual(sem.tryAcquire(2), true, 'nothing may stay reserved once the request is granted')
    sem.release(2)
  })

  it('blocking: false rejects EBUSY, timeout 0 and a running-out timeout reject ETIMEDOUT; nothing stays queued', async () => {
    const sem = new Semaphore(1)
    const release = await sem.acquire(1, { blocking: false })
    assertCode(await rejection(sem.acquire(1, { blocking: false })), 'EBUSY')
    assertCode(await rejection(sem.acquire(1, { timeout: 0 })), 'ETIMEDOUT')
    const t0 = Date.now()
    const p = sem.acquire(1, { timeout: 40 })
    assert.strictEqual(sem.waiting, 1)
    const err = await rejection(p)
    const elapsed = Date.now() - t0
    assertCode(err, 'ETIMEDOUT')
    assert.ok(elapsed >= 35, `timed out after ${elapsed} ms, before the 40 ms timeout`)
    assert.strictEqual(sem.waiting, 0)
    release()
    assert.strictEqual(sem.value, 1, 'a timed-out request must not take permits')
  })

  it('an aborted request rejects with an AbortError whose cause is the reason and leaves the queue', async () => {
    const sem = new Semaphore(1)
    const pre = new AbortController()
    const reason = new Error('not needed')
    pre.abort(reason)
    assertAbort(await rejection(sem.acquire(1, { signal: pre.signal })), reason)
    assert.strictEqual(sem.value, 1, 'an aborted signal must not take permits even when they are free')

    // An aborted large request at the head lets the small one behind it in.
    const hold = await sem.acquire(1)
    const ac = new AbortController()
    const big = sem.acquire(3, { signal: ac.signal })
    let smallGranted = false
    const small = sem.acquire(1).then((release) => { smallGranted = true; return release })
    assert.strictEqual(sem.waiting, 2)
    hold()
    await sleep(10)
    assert.strictEqual(smallGranted, false, 'a queued request passed the one before it')
    assert.strictEqual(sem.value, 1)
    ac.abort(reason)
    assertAbort(await rejection(big), reason)
    const release = await within(small, 5000, 'the request behind the aborted one was not granted')
    assert.strictEqual(sem.waiting, 0)
    assert.strictEqual(sem.value, 0)
    release()
    // An abort after the grant changes nothing.
    const late = new AbortController()
    const r = await sem.acquire(1, { signal: late.signal })
    late.abort()
    assert.strictEqual(sem.value, 0)
    r()
    assert.strictEqual(sem.value, 1)
  })

  it('runExclusive holds options.permits while the callback runs and returns them however it ends', async () => {
    const sem = new Semaphore(3)
    assert.strictEqual(await sem.runExclusive(() => sem.value, { permits: 2 }), 1)
    assert.strictEqual(await sem.runExclusive(async () => { await sleep(1); return sem.value }), 2)
    const err = await rejection(sem.runExclusive(() => { throw new Error('boom') }, { permits: 3 }))
    assert.strictEqual(err.message, 'boom')
    assert.strictEqual(sem.value, 3)
    assertCode(await rejection((async () => {
      const r = await sem.acquire(3)
      try {
        return await sem.runExclusive(() => 'ran', { timeout: 10 })
      } finally {
        r()
      }
    })()), 'ETIMEDOUT')
    assert.strictEqual(sem.value, 3)
  })

  it('release() adds permits beyond the initial count, up to 2^29 - 1', () => {
    const sem = new Semaphore(0)
    sem.release()
    sem.release(4)
    assert.strictEqual(sem.value, 5)
    sem.release(MAX - 5)
    assert.strictEqual(sem.value, MAX)
  })

  describe('bad input: the right error, a clear message, and nothing changed', () => {
    const sab = () => new SharedArrayBuffer(8)
    const ctorCases = [
      ['permits -1', () => new Semaphore(-1), RangeError, /permits/],
      ['permits 1.5', () => new Semaphore(1.5), RangeError, /permits/],
      ['permits NaN', () => new Semaphore(NaN), RangeError, /permits/],
      ['permits 2^29', () => new Semaphore(2 ** 29), RangeError, /permits/],
      ['permits "1"', () => new Semaphore('1'), TypeError, /permits/],
      ['permits null', () => new Semaphore(null), TypeError, /permits/],
      ['an ArrayBuffer', () => new Semaphore(1, new ArrayBuffer(4)), TypeError, /SharedArrayBuffer/],
      ['an Int32Array', () => new Semaphore(1, new Int32Array(sab())), TypeError, /SharedArrayBuffer/],
      ['byteOffset 2', () => new Semaphore(1, sab(), 2), RangeError, /byteOffset/],
      ['byteOffset past the end', () => new Semaphore(1, sab(), 8), RangeError, /byteOffset/],
      ['byteOffset -4', () => new Semaphore(1, sab(), -4), RangeError, /byteOffset/],
      ['byteOffset "0"', () => new Semaphore(1, sab(), '0'), TypeError, /byteOffset/],
      ['from(undefined)', () => Semaphore.from(), TypeError, /Semaphore\.from.*handle/],
      ['from({})', () => Semaphore.from({}), TypeError, /Semaphore\.from.*SharedArrayBuffer/],
      ['from byteOffset 1', () => Semaphore.from({ buffer: sab(), byteOffset: 1 }), RangeError, /Semaphore\.from.*byteOffset/]
    ]
    refusals('constructor / from', ctorCases)

    it('a refused constructor does not write to the given buffer', () => {
      const buffer = new SharedArrayBuffer(8)
      const words = new Int32Array(buffer)
      words[0] = 7
      words[1] = 9
      thrown(() => new Semaphore(2 ** 29, buffer, 0))
      thrown(() => new Semaphore(1, buffer, 6))
      thrown(() => new Semaphore(-1, buffer, 4))
      assert.deepStrictEqual([...words], [7, 9])
    })

    const syncCases = [
      ['tryAcquire(0)', (s) => s.tryAcquire(0), RangeError, /permits/],
      ['tryAcquire(-1)', (s) => s.tryAcquire(-1), RangeError, /permits/],
      ['tryAcquire(1.5)', (s) => s.tryAcquire(1.5), RangeError, /permits/],
      ['tryAcquire(2^29)', (s) => s.tryAcquire(2 ** 29), RangeError, /permits/],
      ['tryAcquire("1")', (s) => s.tryAcquire('1'), TypeError, /permits/],
      ['tryAcquire(null)', (s) => s.tryAcquire(null), TypeError, /permits/],
      ['acquireSync(0)', (s) => s.acquireSync(0), RangeError, /permits/],
      ['acquireSync(1n)', (s) => s.acquireSync(1n), TypeError, /permits/],
      ['acquireSync(1, null)', (s) => s.acquireSync(1, null), TypeError, /options/],
      ['acquireSync(1, 5)', (s) => s.acquireSync(1, 5), TypeError, /options/],
      ['acquireSync timeout -1', (s) => s.acquireSync(1, { timeout: -1 }), RangeError, /timeout/],
      ['acquireSync timeout NaN', (s) => s.acquireSync(1, { timeout: NaN }), RangeError, /timeout/],
      ['acquireSync timeout "5"', (s) => s.acquireSync(1, { timeout: '5' }), TypeError, /timeout/],
      ['release(0)', (s) => s.release(0), RangeError, /permits/],
      ['release(-2)', (s) => s.release(-2), RangeError, /permits/],
      ['release("1")', (s) => s.release('1'), TypeError, /permits/],
      ['release past 2^29 - 1', (s) => s.release(MAX - 1), RangeError, /exceed/]
    ]
    const fresh = {
      make: () => new Semaphore(2),
      unchanged: (sem) => {
        assert.strictEqual(sem.value, 2)
        assert.strictEqual(sem.waiting, 0)
      }
    }
    refusals('throws', syncCases, fresh)

    it('release past the maximum while requests are queued throws RangeError and changes nothing', async () => {
      const sem = new Semaphore(MAX - 1)
      const queued = sem.acquire(MAX)
      assert.strictEqual(sem.waiting, 1)
      const err = thrown(() => sem.release(2))
      assert.strictEqual(err.constructor, RangeError)
      assert.match(err.message, /exceed/)
      assert.strictEqual(sem.value, MAX - 1)
      assert.strictEqual(sem.waiting, 1)
      sem.release(1)
      const release = await within(queued, 5000, 'the queued request was not granted')
      assert.strictEqual(sem.value, 0)
      release()
      assert.strictEqual(sem.value, MAX)
    })

    const asyncCases = [
      ['acquire(0)', (s) => s.acquire(0), RangeError, /permits/],
      ['acquire("2")', (s) => s.acquire('2'), TypeError, /permits/],
      ['acquire(1, null)', (s) => s.acquire(1, null), TypeError, /options/],
      ['acquire timeout -1', (s) => s.acquire(1, { timeout: -1 }), RangeError, /timeout/],
      ['acquire timeout "1"', (s) => s.acquire(1, { timeout: '1' }), TypeError, /timeout/],
      ['acquire signal {}', (s) => s.acquire(1, { signal: {} }), TypeError, /signal/],
      ['acquire blocking "no"', (s) => s.acquire(1, { blocking: 'no' }), TypeError, /blocking/],
      ['acquire ref 1', (s) => s.acquire(1, { ref: 1 }), TypeError, /ref/],
      ['acquire blocking false + bad timeout', (s) => s.acquire(1, { blocking: false, timeout: '5' }), TypeError, /timeout/],
      ['runExclusive("f")', (s) => s.runExclusive('f'), TypeError, /callback/],
      ['runExclusive permits 0', (s) => s.runExclusive(() => {}, { permits: 0 }), RangeError, /permits/],
      ['runExclusive options null', (s) => s.runExclusive(() => {}, null), TypeError, /options/],
      ['runExclusive options 5', (s) => s.runExclusive(() => {}, 5), TypeError, /options/]
    ]
    refusals('rejects (never throws)', asyncCases, { ...fresh, promised: true })
    it('rejects (never throws): acquire on a wrong receiver', async () => {
      let p
      assert.doesNotThrow(() => { p = Semaphore.prototype.acquire.call({}) })
      await assert.rejects(p, TypeError)
    })
    it('rejects (never throws): runExclusive on a wrong receiver, with and without options', async () => {
      for (const options of [undefined, { permits: 1 }]) {
        let p
        assert.doesNotThrow(() => { p = Semaphore.prototype.runExclusive.call({}, () => {}, options) })
        await assert.rejects(p, TypeError)
      }
    })
  })
})

describe('Semaphore across threads', function () {
  afterEach(cleanup)
  reuse() // no test here needs a thread of its own

  it('a handle posted to a worker opens the same permits there', async () => {
    const sem = new Semaphore(4, new SharedArrayBuffer(16), 12)
    const [w] = await started(openIn('sem', sem))
    assert.deepStrictEqual(await w.run(({ state }) => {
      const before = state.sem.value
      state.sem.acquireSync(3)
      return [before, state.sem.value]
    }, undefined, 5000), [4, 1])
    assert.strictEqual(sem.value, 1)
    assert.strictEqual(sem.tryAcquire(2), false)
    sem.release(2) // any thread may return permits
    assert.strictEqual(await w.run(({ state }) => state.sem.value, undefined, 5000), 3)
  })

  it('never more than n permits in use: main + 3 workers with 1- and 2-permit requests, exact totals', async () => {
    const PERMITS = 3
    const ITERATIONS = 600
    const sem = new Semaphore(PERMITS)
    const stats = new Int32Array(new SharedArrayBuffer(4 * 8))
    const arg = { handle: sem.handle, stats, permits: PERMITS, iterations: ITERATIONS }
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const runs = workers.map((w, i) => w.run(({ tl, require }, arg) =>
      require('./sem-tasks').holders(tl, arg), { ...arg, offset: i + 1 }))
    const mine = tasks.holders(require('..'), arg)
    const taken = await within(Promise.all([mine, ...runs]), 25000, 'the holders did not finish')
    assert.strictEqual(Atomics.load(stats, tasks.OVER), 0, `more than ${PERMITS} permits were in use at once`)
    assert.ok(Atomics.load(stats, tasks.MAX_IN_USE) <= PERMITS)
    assert.ok(Atomics.load(stats, tasks.MAX_IN_USE) >= 2, 'the holders never overlapped: the test measured nothing')
    assert.strictEqual(Atomics.load(stats, tasks.TAKEN), taken.reduce((a, b) => a + b, 0))
    assert.strictEqual(Atomics.load(stats, tasks.IN_USE), 0)
    assert.strictEqual(sem.value, PERMITS)
    assert.strictEqual(sem.waiting, 0)
  })

  it('queued requests across threads: sync and async requests of several sizes are granted in the order they queued', async () => {
    const sem = new Semaphore(0)
    // order[0] counts the tags that follow it.
    const order = new Int32Array(new SharedArrayBuffer(4 * 8))
    const record = (tag) => { order[Atomics.add(order, 0, 1) + 1] = tag }
    const granted = () => [...order.subarray(1, 1 + Atomics.load(order, 0))]
    const workers = await started(...[1, 2, 3, 4].map(() =>
      new TestWorker({ data: { handle: sem.handle, order } })))
    const runs = []
    const enqueue = async (start) => {
      runs.push(start())
      const n = runs.length
      await until(() => sem.waiting === n, `request ${n} did not queue`)
    }
    // Grantees keep their permits, so each step below shows exactly who fits.
    const syncReq = (w, tag, k) => enqueue(() => w.run(({ tl, workerData }, [tag, k]) => {
      tl.Semaphore.from(workerData.handle).acquireSync(k, { timeout: 20000 })
      workerData.order[Atomics.add(workerData.order, 0, 1) + 1] = tag
    }, [tag, k]))
    const asyncReq = (w, tag, k) => enqueue(() => w.run(async ({ tl, workerData }, [tag, k]) => {
      await tl.Semaphore.from(workerData.handle).acquire(k)
      workerData.order[Atomics.add(workerData.order, 0, 1) + 1] = tag
    }, [tag, k]))
    await syncReq(workers[0], 1, 3)
    await asyncReq(workers[1], 2, 1)
    await enqueue(() => sem.acquire(2).then(() => record(3)))
    await syncReq(workers[2], 4, 1)
    await asyncReq(workers[3], 5, 2)

    const step = async (permits, expected, value) => {
      sem.release(permits)
      await until(() => granted().length === expected.length, `after release(${permits}) expected ${expected}, got ${granted()}`)
      await sleep(30) // time for a wrong grant to show
      assert.deepStrictEqual(granted(), expected)
      assert.strictEqual(sem.value, value)
      assert.strictEqual(sem.waiting, 5 - expected.length)
    }
    await step(2, [], 2) // 3 at the head: the 1 behind it must not pass
    await step(1, [1], 0)
    await step(2, [1, 2], 1) // then 2 wants 2: the 1 behind it waits
    await step(1, [1, 2, 3], 0)
    await step(1, [1, 2, 3, 4], 0)
    await step(2, [1, 2, 3, 4, 5], 0)
    await within(Promise.all(runs), 5000, 'not every request finished')
  })

  it('a request for every permit is not starved by 1-permit requests of 3 workers, and permits are never over-granted (async in main, sync in a worker)', async () => {
    const PERMITS = 3
    const sem = new Semaphore(PERMITS)
    // shared[0]: small holds so far; shared[1]: stop.
    const shared = new Int32Array(new SharedArrayBuffer(8))
    const stats = new Int32Array(new SharedArrayBuffer(4 * 8))
    const arg = { handle: sem.handle, shared, stats, permits: PERMITS }
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker(), new TestWorker({ data: arg }))
    const smalls = ({ tl, require }, arg) => require('./sem-tasks').smalls(tl, arg)
    const runs = workers.slice(0, 3).map((w) => w.run(smalls, arg))
    let large = 0
    try {
      await until(() => Atomics.load(shared, 0) > 1000, 'the small requests did not start')
      // Barging lets small requests pass a large one until it has waited
      // starvationMs; from then on the permits released gather for it. So
      // once it has waited that long (sampled by a timer, which may only be
      // late), few small holds may still come before it: those in progress,
      // one round of barging into permits that were free before the first
      // release, and those queued ahead of it, at most 3 each. The grant
      // gives it every permit, so the count read then is exact. (With the
      // reservation most rounds end before the sample; without it, rounds
      // last long enough to be sampled, and thousands of holds pass.)
      const passed = []
      for (let round = 0; round < 15; round++) {
        const t0 = performance.now()
        const granted = sem.acquire(PERMITS)
        let sampled = null
        let timer
        const sample = () => {
          if (performance.now() - t0 < 2 * lockPolicy.starvationMs) timer = setTimeout(sample, 1)
          else sampled = Atomics.load(shared, 0)
        }
        timer = setTimeout(sample, 2 * lockPolicy.starvationMs)
        const release = await within(granted, 10000, `the large async request starved (round ${round})`)
        clearTimeout(timer)
        if (sampled !== null) passed.push(Atomics.load(shared, 0) - sampled)
        tasks.enter(stats, PERMITS, PERMITS)
        large += PERMITS
        release()
      }
      assert.ok(passed.every((n) => n <= 9), `small requests took permits before a starving large one: ${passed}`)
      const rounds = await workers[3].run(({ tl, require, workerData }) => {
        const sem = tl.Semaphore.from(workerData.handle)
        let round = 0
        for (; round < 15; round++) {
          sem.acquireSync(workerData.permits, { timeout: 10000 })
          require('./sem-tasks').enter(workerData.stats, workerData.permits, workerData.permits)
          sem.release(workerData.permits)
        }
        return round
      }, undefined, 60000)
      assert.strictEqual(rounds, 15)
      large += 15 * PERMITS
    } finally {
      Atomics.store(shared, 1, 1)
    }
    const counts = await within(Promise.all(runs), 10000, 'the small requests did not stop')
    assert.strictEqual(counts[0] + counts[1] + counts[2], Atomics.load(shared, 0))
    assert.strictEqual(Atomics.load(stats, tasks.OVER), 0, `more than ${PERMITS} permits were in use at once`)
    assert.strictEqual(Atomics.load(stats, tasks.MAX_IN_USE), PERMITS)
    assert.strictEqual(Atomics.load(stats, tasks.IN_USE), 0)
    assert.strictEqual(Atomics.load(stats, tasks.TAKEN), large + Atomics.load(shared, 0))
    assert.strictEqual(sem.value, PERMITS)
    assert.strictEqual(sem.waiting, 0)
  })

  it('timeouts while a worker holds the permits, in main and in another worker', async () => {
    const sem = new Semaphore(2)
    const [holder, other] = await started(openIn('sem', sem), openIn('sem', sem))
    await holder.run(({ state }) => state.sem.acquireSync(2), undefined, 5000)
    const t0 = Date.now()
    assertCode(thrown(() => sem.acquireSync(1, { timeout: 40 })), 'ETIMEDOUT')
    assert.ok(Date.now() - t0 >= 35)
    assertCode(await rejection(sem.acquire(1, { timeout: 30 })), 'ETIMEDOUT')
    assertCode(await rejection(other.run(({ state }) => state.sem.acquireSync(1, { timeout: 30 }))), 'ETIMEDOUT')
    assertCode(await rejection(other.run(({ state }) => state.sem.acquire(1, { timeout: 30 }))), 'ETIMEDOUT')
    assert.strictEqual(sem.waiting, 0)
    assert.strictEqual(sem.value, 0)
    await holder.run(({ state }) => state.sem.release(2), undefined, 5000)
    assert.strictEqual(sem.value, 2, 'a timed-out request must not keep permits')
  })

  it('an aborted request leaves the queue and the worker behind it is granted', async () => {
    const sem = new Semaphore(1)
    const [w] = await started(openIn('sem', sem))
    const hold = await sem.acquire(1)
    const ac = new AbortController()
    const mine = sem.acquire(2, { signal: ac.signal })
    const theirs = w.run(({ state }) => { state.sem.acquireSync(1); return state.sem.value })
    await until(() => sem.waiting === 2, 'the worker did not queue')
    // The permit goes back, but the worker's request is queued behind mine,
    // which does not fit.
    hold()
    await sleep(20)
    assert.strictEqual(sem.waiting, 2)
    assert.strictEqual(sem.value, 1)
    const reason = new Error('changed my mind')
    ac.abort(reason)
    assertAbort(await rejection(mine), reason)
    assert.strictEqual(await within(theirs, 5000, 'the worker behind the aborted request was not granted'), 0)
    assert.strictEqual(sem.waiting, 0)
    await w.run(({ state }) => state.sem.release(), undefined, 5000)
    assert.strictEqual(sem.value, 1)
  })

  for (const form of ['acquireSync', 'acquire']) {
    it(`a worker terminated while blocked in ${form}() leaves the queue at once; the request behind it is granted`, async () => {
      const sem = new Semaphore(1)
      const [w, next] = await started(openIn('sem', sem), openIn('sem', sem))
      const hold = await sem.acquire(1)
      const blocked = form === 'acquireSync'
        ? w.run(({ state }) => state.sem.acquireSync(3))
        : w.run(({ state }) => state.sem.acquire(3).then(() => 'granted'))
      blocked.catch(() => {})
      await until(() => sem.waiting === 1, 'the worker did not queue')
      const mine = sem.acquire(1)
      assert.strictEqual(sem.waiting, 2)
      // The permit goes back, but my request is queued behind the worker's,
      // which does not fit.
      hold()
      await sleep(20)
      assert.strictEqual(sem.waiting, 2)
      assert.strictEqual(sem.value, 1)
      const ms = await w.terminate()
      assert.ok(ms < 2000, `terminate() took ${ms} ms`)
      const release = await within(mine, 5000, 'the request behind the terminated worker was not granted')
      assert.strictEqual(sem.waiting, 0)
      assert.strictEqual(sem.value, 0)
      release()
      // The other threads keep working with the same semaphore.
      assert.strictEqual(await next.run(async ({ state }) => {
        state.sem.acquireSync(1, { timeout: 5000 })
        state.sem.release(1)
        const r = await state.sem.acquire(1, { timeout: 5000 })
        r()
        return state.sem.value
      }, undefined, 5000), 1)
      assert.strictEqual(sem.value, 1)
    })
  }

  // A worker blocks in acquireSync(2); the main thread releases 2 and
  // terminates it, in either order. The statement after acquireSync() is a
  // plain store (V8 stops a terminated thread at a call or a loop, never
  // between two plain statements), so it tells whether acquireSync()
  // returned into the worker's code.
  async function grantAndTerminate (terminateFirst) {
    const sem = new Semaphore(0)
    const ctl = new Int32Array(new SharedArrayBuffer(4))
    const [w] = await started(openIn('sem', sem, { data: { ctl: ctl.buffer } }))
    w.run(({ state, workerData }) => {
      const done = new Int32Array(workerData.ctl)
      state.sem.acquireSync(2)
      done[0] = 1
    }).catch(() => {})
    await until(() => sem.waiting === 1, 'the worker did not queue')
    let stopped
    if (terminateFirst) {
      stopped = w.terminate() // marks the worker stopping before it returns
      sem.release(2)
    } else {
      sem.release(2)
      stopped = w.terminate()
    }
    await stopped
    assert.strictEqual(sem.waiting, 0)
    return { ran: Atomics.load(ctl, 0) === 1, value: sem.value }
  }

  it('a worker terminated and then granted in acquireSync() runs nothing after it and gives the permits back', async function () {
    this.timeout(60000)
    const wrong = []
    for (let round = 0; round < 20; round++) {
      const { ran, value } = await grantAndTerminate(true)
      if (ran || value !== 2) wrong.push(`round ${round}: ${ran ? 'ran on' : 'stopped'}, value ${value}`)
    }
    assert.deepStrictEqual(wrong, [])
  })

  it('a worker granted in acquireSync() and then terminated either ran on holding the permits or gave them back', async function () {
    this.timeout(60000)
    const lost = []
    for (let round = 0; round < 20; round++) {
      const { ran, value } = await grantAndTerminate(false)
      if (!ran && value !== 2) lost.push(`round ${round}: stopped, value ${value}`)
    }
    assert.deepStrictEqual(lost, [])
  })

  it('a waiting acquire() keeps its worker alive; with ref: false the worker may end meanwhile', async () => {
    const sem = new Semaphore(0)
    // unref: only the worker's own work keeps it alive (test/fixtures/threads.js).
    const unrefd = new TestWorker({
      unref: true,
      data: { handle: sem.handle },
      init: ({ tl, workerData }) => { tl.Semaphore.from(workerData.handle).acquire(1, { ref: false }) }
    })
    assert.strictEqual(await unrefd.join(10000), 0)
    assert.strictEqual(sem.waiting, 0, 'the request of the ended worker must leave the queue')
    const kept = new TestWorker({
      unref: true,
      data: { handle: sem.handle },
      init: ({ tl, workerData }) => { tl.Semaphore.from(workerData.handle).acquire(1).then((release) => release()) }
    })
    await kept.ready()
    await until(() => sem.waiting === 1, 'the worker did not queue')
    await sleep(100)
    assert.strictEqual(kept.exitCode, undefined, 'the worker ended while its request was pending')
    sem.release()
    assert.strictEqual(await kept.join(10000), 0)
    assert.strictEqual(sem.value, 1, 'the worker took the permit and returned it before it ended')
  })

  it('permits have no owner: a worker that dies holding permits does not return them', async () => {
    const sem = new Semaphore(3)
    const [w] = await started(openIn('sem', sem))
    await w.run(({ state }) => state.sem.acquireSync(2), undefined, 5000)
    await w.terminate()
    assert.strictEqual(sem.value, 1)
    sem.release(2) // whoever knows they are lost can return them
    assert.strictEqual(sem.value, 3)
  })
})
