'use strict'

// CountDownLatch: the API in one thread, then across real worker threads:
// waiters released only at 0, concurrent countdowns that end exactly at 0
// and never below, timeouts, and workers terminated while they wait.
// Functions passed to w.run() execute inside the worker (test/fixtures/
// runner-worker.js); shared workloads are in test/fixtures/latch-tasks.js.

const assert = require('assert')
const { CountDownLatch, waiterCount } = require('..')
const { TestWorker, openIn, started, cleanup, reuse, within, until, sleep, thrown, rejection, assertCode, assertAbort, refusals } = require('./fixtures/threads')

const MAX = 0x7fffffff

// Waits in progress on the latch, from the waiter list of its word.
function waiting (latch) {
  const { buffer, byteOffset } = latch.handle
  return waiterCount(new Int32Array(buffer, byteOffset, 1), 0)
}

// Settles to 'pending' if `promise` has not settled within a few ms.
async function peek (promise, ms = 20) {
  return Promise.race([promise.then(() => 'resolved', () => 'rejected'), sleep(ms).then(() => 'pending')])
}

describe('CountDownLatch (one thread)', () => {
  it('holds its count in its own buffer or in a slot of a given one; from(handle) opens the same count', () => {
    const latch = new CountDownLatch(3)
    assert.strictEqual(latch.count, 3)
    assert.strictEqual(latch.handle.buffer.byteLength, 4)
    const sab = new SharedArrayBuffer(8)
    const words = new Int32Array(sab)
    words[0] = -1
    const a = new CountDownLatch(MAX, sab, 4)
    assert.deepStrictEqual([...words], [-1, MAX])
    const b = CountDownLatch.from(structuredClone(a.handle))
    assert.strictEqual(b.countDown(MAX - 1), 1)
    assert.strictEqual(a.count, 1)
    assert.strictEqual(new CountDownLatch(0).count, 0)
  })

  it('countDown returns what is left and clamps at 0', () => {
    const latch = new CountDownLatch(5)
    assert.strictEqual(latch.countDown(), 4)
    assert.strictEqual(latch.countDown(3), 1)
    assert.strictEqual(latch.countDown(10), 0)
    assert.strictEqual(latch.count, 0)
    assert.strictEqual(latch.countDown(), 0)
    assert.strictEqual(latch.countDown(MAX), 0)
    assert.strictEqual(latch.count, 0)
  })

  it('waits end only when the count reaches 0; a latch at 0 lets everybody through at once', async () => {
    const latch = new CountDownLatch(2)
    const p = latch.wait()
    const q = latch.wait({ timeout: 10000 })
    assert.strictEqual(waiting(latch), 2)
    latch.countDown()
    assert.strictEqual(await peek(p), 'pending')
    assert.strictEqual(latch.countDown(), 0)
    assert.deepStrictEqual(await within(Promise.all([p, q]), 5000, 'the waits did not end at 0'), [undefined, undefined])
    assert.strictEqual(waiting(latch), 0)
    latch.waitSync()
    latch.waitSync({ timeout: 0 })
    await latch.wait({ timeout: 0 })
    const open = new CountDownLatch(0)
    open.waitSync()
    await open.wait()
  })

  it('timeouts throw or reject ETIMEDOUT, leave the waiter list and change no count', async () => {
    const latch = new CountDownLatch(1)
    const t0 = Date.now()
    const err = thrown(() => latch.waitSync({ timeout: 40 }))
    const elapsed = Date.now() - t0
    assertCode(err, 'ETIMEDOUT')
    assert.match(err.message, /waitSync/)
    assert.ok(elapsed >= 35 && elapsed < 5000, `waitSync({ timeout: 40 }) gave up after ${elapsed} ms`)
    assertCode(thrown(() => latch.waitSync({ timeout: 0 })), 'ETIMEDOUT')
    const t1 = Date.now()
    assertCode(await rejection(latch.wait({ timeout: 30 })), 'ETIMEDOUT')
    assert.ok(Date.now() - t1 >= 25)
    assertCode(await rejection(latch.wait({ timeout: 0 })), 'ETIMEDOUT')
    assert.strictEqual(latch.count, 1)
    assert.strictEqual(waiting(latch), 0)
  })

  it('abort: rejects with an AbortError whose cause is the reason and leaves the waiter list', async () => {
    const latch = new CountDownLatch(1)
    const reason = new Error('gave up')
    const pre = new AbortController()
    pre.abort(reason)
    assertAbort(await rejection(latch.wait({ signal: pre.signal })), reason)
    const ac = new AbortController()
    const p = latch.wait({ signal: ac.signal })
    const other = latch.wait()
    assert.strictEqual(waiting(latch), 2)
    ac.abort(reason)
    assertAbort(await rejection(p), reason)
    assert.strictEqual(waiting(latch), 1)
    assert.strictEqual(latch.count, 1)
    latch.countDown()
    await within(other, 5000, 'the wait next to the aborted one did not end')
  })

  describe('bad input: the right error, a clear message, and nothing changed', () => {
    const ctorCases = [
      ['no count', () => new CountDownLatch(), TypeError, /count/],
      ['count -1', () => new CountDownLatch(-1), RangeError, /count/],
      ['count 2^31', () => new CountDownLatch(2 ** 31), RangeError, /count/],
      ['count 1.5', () => new CountDownLatch(1.5), RangeError, /count/],
      ['count "3"', () => new CountDownLatch('3'), TypeError, /count/],
      ['an ArrayBuffer', () => new CountDownLatch(1, new ArrayBuffer(4)), TypeError, /SharedArrayBuffer/],
      ['byteOffset 2', () => new CountDownLatch(1, new SharedArrayBuffer(8), 2), RangeError, /byteOffset/],
      ['byteOffset past the end', () => new CountDownLatch(1, new SharedArrayBuffer(4), 4), RangeError, /byteOffset/],
      ['from(null)', () => CountDownLatch.from(null), TypeError, /CountDownLatch\.from.*handle/],
      ['from({ buffer: {} })', () => CountDownLatch.from({ buffer: {} }), TypeError, /CountDownLatch\.from.*SharedArrayBuffer/]
    ]
    refusals('constructor / from', ctorCases)

    it('a refused constructor does not write to the given buffer', () => {
      const sab = new SharedArrayBuffer(4)
      const words = new Int32Array(sab)
      words[0] = 9
      thrown(() => new CountDownLatch(-5, sab))
      thrown(() => new CountDownLatch(5, sab, 2))
      assert.strictEqual(words[0], 9)
    })

    const syncCases = [
      ['countDown(0)', (l) => l.countDown(0), RangeError, /k/],
      ['countDown(-1)', (l) => l.countDown(-1), RangeError, /k/],
      ['countDown(1.5)', (l) => l.countDown(1.5), RangeError, /k/],
      ['countDown(2^31)', (l) => l.countDown(2 ** 31), RangeError, /k/],
      ['countDown("1")', (l) => l.countDown('1'), TypeError, /k/],
      ['countDown(null)', (l) => l.countDown(null), TypeError, /k/],
      ['waitSync(null)', (l) => l.waitSync(null), TypeError, /options/],
      ['waitSync timeout -1', (l) => l.waitSync({ timeout: -1 }), RangeError, /timeout/],
      ['waitSync timeout "1"', (l) => l.waitSync({ timeout: '1' }), TypeError, /timeout/]
    ]
    const fresh = {
      make: () => new CountDownLatch(3),
      unchanged: (latch) => {
        assert.strictEqual(latch.count, 3)
        assert.strictEqual(waiting(latch), 0)
      }
    }
    refusals('throws', syncCases, fresh)

    const asyncCases = [
      ['wait("x")', (l) => l.wait('x'), TypeError, /options/],
      ['wait timeout -1', (l) => l.wait({ timeout: -1 }), RangeError, /timeout/],
      ['wait signal {}', (l) => l.wait({ signal: {} }), TypeError, /signal/],
      ['wait ref 1', (l) => l.wait({ ref: 1 }), TypeError, /ref/],
      ['wait blocking false', (l) => l.wait({ blocking: false }), TypeError, /blocking/]
    ]
    refusals('rejects (never throws)', asyncCases, { ...fresh, promised: true })
  })
})

describe('CountDownLatch across threads', function () {
  afterEach(cleanup)
  reuse() // no test here needs a thread of its own

  it('waiting workers (sync and async) and main are released only when a worker brings the count to 0', async () => {
    const latch = new CountDownLatch(5)
    const released = new Int32Array(new SharedArrayBuffer(4))
    const workers = await started(openIn('latch', latch), openIn('latch', latch), openIn('latch', latch), openIn('latch', latch))
    const waitFor = ({ tl, require }, arg) => require('./latch-tasks').waitFor(tl, arg)
    const runs = workers.slice(0, 3).map((w, i) => w.run(waitFor, { handle: latch.handle, released, sync: i < 2 }))
    const mine = latch.wait({ timeout: 10000 })
    await until(() => waiting(latch) === 4, 'the waiters did not all wait')
    for (let left = 4; left >= 1; left--) {
      assert.strictEqual(latch.countDown(), left)
      await sleep(10)
      assert.strictEqual(Atomics.load(released, 0), 0, `a waiter was released at count ${left}`)
      assert.strictEqual(await peek(mine, 1), 'pending')
    }
    assert.strictEqual(await workers[3].run(({ state }) => state.latch.countDown(), undefined, 5000), 0)
    assert.deepStrictEqual(await within(Promise.all(runs), 5000, 'the waiting workers were not released'), [0, 0, 0])
    await within(mine, 5000, 'the main thread was not released')
    assert.strictEqual(Atomics.load(released, 0), 3)
    assert.strictEqual(waiting(latch), 0)
  })

  it('3 workers count down 30,000 times together: the count ends at exactly 0, only the last call returns 0', async () => {
    const latch = new CountDownLatch(30000)
    const start = new Int32Array(new SharedArrayBuffer(4))
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const runs = workers.map((w) => w.run(({ tl, require }, arg) =>
      require('./latch-tasks').countDowns(tl, arg), { handle: latch.handle, start, times: 10000 }))
    const mine = latch.wait({ timeout: 10000 })
    await sleep(20)
    Atomics.store(start, 0, 1)
    Atomics.notify(start, 0)
    const results = await within(Promise.all(runs), 10000, 'the countdowns did not finish')
    await within(mine, 5000, 'the main thread was not released')
    assert.strictEqual(latch.count, 0)
    assert.strictEqual(results.reduce((n, r) => n + r.zeros, 0), 1)
    assert.deepStrictEqual(results.map((r) => r.min >= 0), [true, true, true])
  })

  it('concurrent countDown(k) past 0 clamps: never below 0, and every call after 0 returns 0', async () => {
    const latch = new CountDownLatch(100)
    const start = new Int32Array(new SharedArrayBuffer(4))
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const runs = workers.map((w) => w.run(({ tl, require }, arg) =>
      require('./latch-tasks').countDowns(tl, arg), { handle: latch.handle, start, times: 20, k: 7 }))
    await sleep(20)
    Atomics.store(start, 0, 1)
    Atomics.notify(start, 0)
    const results = await within(Promise.all(runs), 10000, 'the countdowns did not finish')
    assert.strictEqual(latch.count, 0)
    assert.deepStrictEqual(results.map((r) => r.min), [0, 0, 0])
    // 100 / 7: the 15th call overall reaches 0; the other 45 return 0 too.
    assert.strictEqual(results.reduce((n, r) => n + r.zeros, 0), 60 - 14)
  })

  it('a pending wait() keeps its worker alive; with ref: false the worker may end meanwhile', async () => {
    const latch = new CountDownLatch(1)
    const unrefd = new TestWorker({
      unref: true,
      data: { handle: latch.handle },
      init: ({ tl, workerData }) => { tl.CountDownLatch.from(workerData.handle).wait({ ref: false }) }
    })
    assert.strictEqual(await unrefd.join(10000), 0)
    assert.strictEqual(waiting(latch), 0)
    const released = new Int32Array(new SharedArrayBuffer(4))
    const kept = new TestWorker({
      unref: true,
      data: { handle: latch.handle, released },
      init: ({ tl, workerData }) => {
        tl.CountDownLatch.from(workerData.handle).wait().then(() => Atomics.store(workerData.released, 0, 1))
      }
    })
    await kept.ready()
    await until(() => waiting(latch) === 1, 'the worker did not wait')
    await sleep(100)
    assert.strictEqual(kept.exitCode, undefined, 'the worker ended while its wait was pending')
    latch.countDown()
    assert.strictEqual(await kept.join(10000), 0)
    assert.strictEqual(Atomics.load(released, 0), 1)
  })

  it('timeouts in a worker throw or reject ETIMEDOUT', async () => {
    const latch = new CountDownLatch(1)
    const [w] = await started(openIn('latch', latch))
    assertCode(await rejection(w.run(({ state }) => state.latch.waitSync({ timeout: 30 }))), 'ETIMEDOUT')
    assertCode(await rejection(w.run(({ state }) => state.latch.wait({ timeout: 30 }))), 'ETIMEDOUT')
    assert.strictEqual(waiting(latch), 0)
    assert.strictEqual(latch.count, 1)
  })

  for (const form of ['waitSync', 'wait']) {
    it(`a worker terminated while blocked in ${form}() leaves the list at once; the others are still released at 0`, async () => {
      const latch = new CountDownLatch(1)
      const released = new Int32Array(new SharedArrayBuffer(4))
      const [w, other] = await started(openIn('latch', latch), openIn('latch', latch))
      const blocked = w.run(({ state }, form) => state.latch[form](), form)
      blocked.catch(() => {})
      const theirs = other.run(({ tl, require }, arg) => require('./latch-tasks').waitFor(tl, arg),
        { handle: latch.handle, released, sync: true })
      await until(() => waiting(latch) === 2, 'the workers did not wait')
      const ms = await w.terminate()
      assert.ok(ms < 2000, `terminate() took ${ms} ms`)
      assert.strictEqual(waiting(latch), 1)
      assert.strictEqual(latch.count, 1)
      assert.strictEqual(latch.countDown(), 0)
      assert.strictEqual(await within(theirs, 5000, 'the live worker was not released'), 0)
      assert.strictEqual(Atomics.load(released, 0), 1)
      assert.strictEqual(waiting(latch), 0)
    })
  }
})
