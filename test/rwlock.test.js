'use strict'

// RWLock: the API in one thread, then across real worker threads: readers
// together, a writer alone, a writer not starved by a stream of readers,
// FIFO grants, a writer that dies holding the lock (terminate() or a normal
// exit), timeouts, aborts, bad input, and workers terminated while they
// wait. Functions passed to w.run() execute inside the worker
// (test/fixtures/runner-worker.js); shared workloads are in
// test/fixtures/rw-tasks.js.

const assert = require('assert')
const path = require('path')
const { Worker, threadId } = require('worker_threads')
const { RWLock } = require('..')
const { TestWorker, openIn, started, cleanup, reuse, within, until, sleep, thrown, rejection, assertCode, assertAbort, refusals } = require('./fixtures/threads')
const tasks = require('./fixtures/rw-tasks')

const EXIT_HOLDING = path.join(__dirname, 'fixtures', 'rw-exit-holding.js')

// Errors thrown in a worker arrive as plain Errors carrying the name, code
// and constructor name of the original.
function state (rw) {
  return { readers: rw.readers, writer: rw.writer, waiting: rw.waiting }
}

// Starts test/fixtures/rw-exit-holding.js; resolves once it holds the lock.
function exitHolding (rw, workerData) {
  const worker = new Worker(EXIT_HOLDING, { workerData: { handle: rw.handle, ...workerData } })
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  const locked = new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
    exited.then((code) => reject(new Error(`the worker exited (code ${code}) before it locked`)))
  })
  return { worker, exited, locked: within(locked, 10000, 'the exiting worker did not lock') }
}

describe('RWLock (one thread)', () => {
  it('starts free, in its own buffer or in a slot of a given one; from(handle) opens the same lock', () => {
    const rw = new RWLock()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    assert.strictEqual(rw.handle.buffer.byteLength, 4)
    assert.strictEqual(rw.handle.byteOffset, 0)
    const sab = new SharedArrayBuffer(8)
    const a = new RWLock(sab, 4)
    const copy = RWLock.from(structuredClone(a.handle))
    assert.strictEqual(a.tryAcquireWrite(), true)
    assert.strictEqual(copy.writer, threadId)
    assert.strictEqual(new Int32Array(sab)[0], 0, 'the lock must use only its own slot')
    copy.releaseWrite()
    assert.strictEqual(a.writer, null)
    assert.strictEqual(RWLock.from({ buffer: sab }).readers, 0)
  })

  it('try-forms: many read locks or one write lock, never both', () => {
    const rw = new RWLock()
    assert.strictEqual(rw.tryAcquireRead(), true)
    assert.strictEqual(rw.tryAcquireRead(), true)
    assert.strictEqual(rw.readers, 2)
    assert.strictEqual(rw.tryAcquireWrite(), false)
    rw.releaseRead()
    assert.strictEqual(rw.tryAcquireWrite(), false)
    rw.releaseRead()
    assert.strictEqual(rw.tryAcquireWrite(), true)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: threadId, waiting: 0 })
    assert.strictEqual(rw.tryAcquireWrite(), false, 'not even the writer may take it twice')
    assert.strictEqual(rw.tryAcquireRead(), false)
    rw.releaseWrite()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('blocking forms: EDEADLK instead of waiting for itself; timeouts throw ETIMEDOUT and leave nothing queued', () => {
    const rw = new RWLock()
    rw.acquireWriteSync()
    assertCode(thrown(() => rw.acquireWriteSync()), 'EDEADLK')
    assertCode(thrown(() => rw.acquireReadSync({ timeout: 1000 })), 'EDEADLK')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: threadId, waiting: 0 })
    rw.releaseWrite()
    rw.acquireReadSync()
    rw.acquireReadSync({ timeout: 0 })
    // A reader cannot upgrade: the core counts this thread's read locks, so
    // it knows that the write lock could never be granted.
    const err = thrown(() => rw.acquireWriteSync({ timeout: 40 }))
    assertCode(err, 'EDEADLK')
    assert.match(err.message, /acquireWriteSync/)
    assert.deepStrictEqual(state(rw), { readers: 2, writer: null, waiting: 0 })
    rw.releaseRead()
    rw.releaseRead()
    rw.acquireWriteSync({ timeout: 0 })
    rw.releaseWrite()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('unlocking what is not held throws ENOTOWNER and changes nothing', () => {
    const rw = new RWLock()
    assertCode(thrown(() => rw.releaseRead()), 'ENOTOWNER')
    assertCode(thrown(() => rw.releaseWrite()), 'ENOTOWNER')
    rw.acquireReadSync()
    assertCode(thrown(() => rw.releaseWrite()), 'ENOTOWNER')
    assert.deepStrictEqual(state(rw), { readers: 1, writer: null, waiting: 0 })
    rw.releaseRead()
    rw.acquireWriteSync()
    assertCode(thrown(() => rw.releaseRead()), 'ENOTOWNER')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: threadId, waiting: 0 })
    rw.releaseWrite()
  })

  it('the promise forms resolve with release functions that unlock once', async () => {
    const rw = new RWLock()
    const r1 = await rw.acquireRead()
    const r2 = await rw.acquireRead()
    assert.strictEqual(r1.ownerDied, false)
    assert.strictEqual(rw.readers, 2)
    r1()
    r1()
    assert.strictEqual(rw.readers, 1, 'a second call of a read release must not unlock another read lock')
    r2[Symbol.dispose]()
    const w = await rw.acquireWrite()
    assert.strictEqual(w.ownerDied, false)
    assert.strictEqual(rw.writer, threadId)
    w()
    w()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    assert.strictEqual(await rw.runRead(() => rw.readers), 1)
    assert.strictEqual(await rw.runWrite(async () => { await sleep(1); return rw.writer }), threadId)
    assert.strictEqual((await rejection(rw.runWrite(() => { throw new Error('boom') }))).message, 'boom')
    assert.strictEqual((await rejection(rw.runRead(async () => { throw new Error('boom') }))).message, 'boom')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('FIFO in one thread: readers queued together enter together, a queued writer holds back later readers', async () => {
    const rw = new RWLock()
    const hold = await rw.acquireWrite()
    const order = []
    const req = (kind, tag) => (kind === 'r' ? rw.acquireRead() : rw.acquireWrite())
      .then((release) => { order.push(tag); return release })
    const r1 = req('r', 'r1')
    const r2 = req('r', 'r2')
    const w1 = req('w', 'w1')
    const r3 = req('r', 'r3')
    assert.strictEqual(rw.waiting, 4)
    hold()
    const [rel1, rel2] = await within(Promise.all([r1, r2]), 5000, 'the first readers were not granted')
    await sleep(20)
    assert.deepStrictEqual(order, ['r1', 'r2'])
    assert.strictEqual(rw.readers, 2)
    assert.strictEqual(rw.tryAcquireRead(), false, 'a new reader must not pass a queued writer')
    rel1()
    await sleep(10)
    assert.deepStrictEqual(order, ['r1', 'r2'], 'the writer entered while a reader still held the lock')
    rel2()
    const relW = await within(w1, 5000, 'the writer was not granted')
    assert.strictEqual(rw.writer, threadId)
    relW()
    ;(await within(r3, 5000, 'the last reader was not granted'))()
    assert.deepStrictEqual(order, ['r1', 'r2', 'w1', 'r3'])
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('blocking: false rejects EBUSY, timeouts reject ETIMEDOUT, and nothing stays queued', async () => {
    const rw = new RWLock()
    const hold = await rw.acquireWrite({ blocking: false })
    assertCode(await rejection(rw.acquireRead({ blocking: false })), 'EBUSY')
    assertCode(await rejection(rw.acquireWrite({ blocking: false })), 'EBUSY')
    assertCode(await rejection(rw.acquireRead({ timeout: 0 })), 'ETIMEDOUT')
    const t0 = Date.now()
    const p = rw.acquireRead({ timeout: 40 })
    assert.strictEqual(rw.waiting, 1)
    assertCode(await rejection(p), 'ETIMEDOUT')
    assert.ok(Date.now() - t0 >= 35)
    assertCode(await rejection(rw.runWrite(() => {}, { timeout: 20 })), 'ETIMEDOUT')
    assert.strictEqual(rw.waiting, 0)
    hold()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 }, 'a timed-out request must not get the lock')
    const r = await rw.acquireRead({ blocking: false })
    r()
  })

  it('aborts reject with an AbortError whose cause is the reason; an aborted writer lets the readers behind it in', async () => {
    const rw = new RWLock()
    const pre = new AbortController()
    const reason = new Error('no longer needed')
    pre.abort(reason)
    assertAbort(await rejection(rw.acquireWrite({ signal: pre.signal })), reason)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })

    const reading = await rw.acquireRead()
    const ac = new AbortController()
    const writer = rw.acquireWrite({ signal: ac.signal })
    const reader = rw.acquireRead()
    assert.strictEqual(rw.waiting, 2)
    await sleep(10)
    assert.strictEqual(rw.readers, 1, 'the reader passed the queued writer')
    ac.abort(reason)
    assertAbort(await rejection(writer), reason)
    const r2 = await within(reader, 5000, 'the reader behind the aborted writer was not let in')
    assert.deepStrictEqual(state(rw), { readers: 2, writer: null, waiting: 0 })
    reading()
    r2()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  describe('bad input: the right error, a clear message, and nothing changed', () => {
    const ctorCases = [
      ['an ArrayBuffer', () => new RWLock(new ArrayBuffer(4)), TypeError, /SharedArrayBuffer/],
      ['byteOffset 2', () => new RWLock(new SharedArrayBuffer(8), 2), RangeError, /byteOffset/],
      ['byteOffset past the end', () => new RWLock(new SharedArrayBuffer(4), 4), RangeError, /byteOffset/],
      ['byteOffset "4"', () => new RWLock(new SharedArrayBuffer(8), '4'), TypeError, /byteOffset/],
      ['from(null)', () => RWLock.from(null), TypeError, /RWLock\.from.*handle/],
      ['from({ buffer: 1 })', () => RWLock.from({ buffer: 1 }), TypeError, /RWLock\.from.*SharedArrayBuffer/],
      ['from byteOffset -4', () => RWLock.from({ buffer: new SharedArrayBuffer(8), byteOffset: -4 }), RangeError, /RWLock\.from.*byteOffset/]
    ]
    refusals('constructor / from', ctorCases)

    // Each case runs with one read lock held by this thread.
    const syncCases = [
      ['acquireReadSync(null)', (rw) => rw.acquireReadSync(null), TypeError, /options/],
      ['acquireReadSync timeout -1', (rw) => rw.acquireReadSync({ timeout: -1 }), RangeError, /timeout/],
      ['acquireWriteSync timeout "5"', (rw) => rw.acquireWriteSync({ timeout: '5' }), TypeError, /timeout/],
      ['acquireWriteSync timeout NaN', (rw) => rw.acquireWriteSync({ timeout: NaN }), RangeError, /timeout/],
      ['acquireWriteSync(3)', (rw) => rw.acquireWriteSync(3), TypeError, /options/]
    ]
    const fresh = {
      make: () => {
        const rw = new RWLock()
        rw.acquireReadSync()
        return rw
      },
      unchanged: (rw) => assert.deepStrictEqual(state(rw), { readers: 1, writer: null, waiting: 0 })
    }
    refusals('throws', syncCases, fresh)

    const asyncCases = [
      ['acquireRead(null)', (rw) => rw.acquireRead(null), TypeError, /options/],
      ['acquireRead timeout -1', (rw) => rw.acquireRead({ timeout: -1 }), RangeError, /timeout/],
      ['acquireWrite signal "x"', (rw) => rw.acquireWrite({ signal: 'x' }), TypeError, /signal/],
      ['acquireWrite blocking 0', (rw) => rw.acquireWrite({ blocking: 0 }), TypeError, /blocking/],
      ['acquireWrite ref "no"', (rw) => rw.acquireWrite({ ref: 'no' }), TypeError, /ref/],
      ['acquireRead blocking false + bad timeout', (rw) => rw.acquireRead({ blocking: false, timeout: -1 }), RangeError, /timeout/],
      ['runRead(42)', (rw) => rw.runRead(42), TypeError, /callback/],
      ['runWrite(fn, timeout -1)', (rw) => rw.runWrite(() => {}, { timeout: -1 }), RangeError, /timeout/]
    ]
    refusals('rejects (never throws)', asyncCases, { ...fresh, promised: true })
  })
})

describe('RWLock across threads', function () {
  afterEach(cleanup)
  reuse() // no test here needs a thread of its own

  it('readers of four threads hold the lock together; a writer cannot enter meanwhile', async () => {
    const rw = new RWLock()
    const done = new Int32Array(new SharedArrayBuffer(4))
    const workers = await started(...[1, 2, 3].map(() => openIn('rw', rw, { data: { done } })))
    const release = await rw.acquireRead()
    // Each worker takes a read lock, checks (bounded) that all 4 readers
    // are in, and keeps its lock until the main thread sets done[0].
    const runs = workers.map((w, i) => w.run(async ({ state, workerData }, i) => {
      let release
      if (i === 0) state.rw.acquireReadSync({ timeout: 5000 })
      else release = await state.rw.acquireRead({ timeout: 5000 })
      const deadline = Date.now() + 5000
      const tick = () => new Promise((resolve) => setTimeout(resolve, 1))
      while (state.rw.readers < 4 && Date.now() < deadline) await tick()
      const seen = state.rw.readers
      const tryWrite = state.rw.tryAcquireWrite()
      while (Atomics.load(workerData.done, 0) === 0 && Date.now() < deadline) await tick()
      if (release) release()
      else state.rw.releaseRead()
      return [seen, tryWrite]
    }, i))
    try {
      await until(() => rw.readers === 4, 'the four readers were never in at once')
      assert.strictEqual(rw.tryAcquireWrite(), false)
      assertCode(await rejection(rw.acquireWrite({ timeout: 20 })), 'ETIMEDOUT')
    } finally {
      Atomics.store(done, 0, 1)
    }
    const results = await within(Promise.all(runs), 10000, 'the readers did not finish')
    assert.deepStrictEqual(results, [[4, false], [4, false], [4, false]])
    release()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('a writer is alone: main + 3 workers mixing reads and writes never overlap a writer, exact write count', async () => {
    const ITERATIONS = 600
    const rw = new RWLock()
    const stats = new Int32Array(new SharedArrayBuffer(4 * 10))
    const arg = { handle: rw.handle, stats, iterations: ITERATIONS }
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const runs = workers.map((w, i) => w.run(({ tl, require }, arg) =>
      require('./rw-tasks').mixed(tl, arg), { ...arg, offset: i + 1 }))
    const mine = tasks.mixed(require('..'), arg)
    const writes = await within(Promise.all([mine, ...runs]), 25000, 'the threads did not finish')
    const total = writes.reduce((a, b) => a + b, 0)
    assert.strictEqual(Atomics.load(stats, tasks.VIOLATIONS), 0, 'a writer overlapped another thread, or a reader saw a torn write')
    assert.strictEqual(stats[tasks.A], total)
    assert.strictEqual(stats[tasks.B], total)
    assert.strictEqual(Atomics.load(stats, tasks.WRITES), total)
    assert.strictEqual(Atomics.load(stats, tasks.READS), 4 * ITERATIONS - total)
    assert.ok(Atomics.load(stats, tasks.MAX_READERS) >= 2, 'readers never overlapped: the test measured nothing')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('a steady stream of overlapping readers does not starve a waiting writer (async in main; sync in a worker, liveness)', async () => {
    const rw = new RWLock()
    // shared[0]: reads so far; shared[1]: stop; shared[2]: scratch.
    const shared = new Int32Array(new SharedArrayBuffer(12))
    const arg = { handle: rw.handle, shared }
    const [a, b, c] = await started(new TestWorker(), new TestWorker(), new TestWorker({ data: arg }))
    const stream = ({ tl, require }, arg) => require('./rw-tasks').readers(tl, arg)
    const runs = [a.run(stream, arg), b.run(stream, arg)]
    try {
      await until(() => Atomics.load(shared, 0) > 500, 'the readers did not start')
      // acquireWrite() queues the request before it returns, so `before` is
      // read after that: from then on only the two readers already in may
      // count once more each; every later reader queues behind the writer.
      const gaps = []
      for (let round = 0; round < 15; round++) {
        const granted = rw.acquireWrite()
        const before = Atomics.load(shared, 0)
        const release = await within(granted, 5000, 'the writer starved')
        gaps.push(Atomics.load(shared, 0) - before)
        assert.strictEqual(rw.readers, 0)
        release()
      }
      assert.ok(Math.max(...gaps) <= 2, `readers passed a waiting writer: ${gaps}`)
      // A blocking call cannot read the count after it queued: a preemption
      // between the read and the queuing lets any number of reads pass
      // legitimately, so this part checks liveness only (every round granted
      // well within its timeout); the bound above and the FIFO test check
      // the order.
      const rounds = await c.run(({ tl, workerData }) => {
        const rw = tl.RWLock.from(workerData.handle)
        let round = 0
        for (; round < 15; round++) {
          rw.acquireWriteSync({ timeout: 5000 })
          rw.releaseWrite()
        }
        return round
      }, undefined, 15000)
      assert.strictEqual(rounds, 15)
    } finally {
      Atomics.store(shared, 1, 1)
    }
    const counts = await within(Promise.all(runs), 10000, 'the readers did not stop')
    assert.strictEqual(counts[0] + counts[1], Atomics.load(shared, 0))
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('FIFO across threads: sync and async readers and writers are granted in the order they asked', async () => {
    const rw = new RWLock()
    const order = new Int32Array(new SharedArrayBuffer(4 * 8))
    const workers = await started(...[1, 2, 3, 4].map(() => openIn('rw', rw, { data: { order } })))
    rw.acquireWriteSync()
    const runs = []
    const enqueue = async (start) => {
      runs.push(start())
      const n = runs.length
      await until(() => rw.waiting === n, `request ${n} did not queue`)
    }
    // Each grantee records its tag and releases at once.
    const inWorker = (w, tag, kind) => enqueue(() => w.run(async ({ state, workerData }, [tag, kind]) => {
      const o = workerData.order
      if (kind === 'acquireReadSync') state.rw.acquireReadSync()
      else if (kind === 'acquireWriteSync') state.rw.acquireWriteSync()
      const release = kind === 'acquireRead' ? await state.rw.acquireRead()
        : kind === 'acquireWrite' ? await state.rw.acquireWrite() : null
      o[Atomics.add(o, 0, 1) + 1] = tag
      if (release) release()
      else if (kind === 'acquireReadSync') state.rw.releaseRead()
      else state.rw.releaseWrite()
    }, [tag, kind]))
    await inWorker(workers[0], 1, 'acquireReadSync')
    await inWorker(workers[1], 2, 'acquireWrite')
    await enqueue(() => rw.acquireRead().then((release) => { order[Atomics.add(order, 0, 1) + 1] = 3; release() }))
    await inWorker(workers[2], 4, 'acquireWriteSync')
    await inWorker(workers[3], 5, 'acquireRead')
    await sleep(20)
    assert.strictEqual(Atomics.load(order, 0), 0, 'a request was granted while the writer held the lock')
    rw.releaseWrite()
    await within(Promise.all(runs), 10000, 'not every request was granted')
    assert.deepStrictEqual([...order.subarray(1, 6)], [1, 2, 3, 4, 5])
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('a writer terminated while holding the lock: the next waiter gets it with ownerDied, the one after normally', async () => {
    const rw = new RWLock()
    const [holder, reader] = await started(openIn('rw', rw), openIn('rw', rw))
    await holder.run(({ state }) => state.rw.acquireWriteSync(), undefined, 5000)
    assert.strictEqual(rw.writer, holder.threadId)
    const mine = rw.acquireWrite()
    const theirs = reader.run(({ state }) => { state.rw.acquireReadSync(); return state.rw.readers })
    await until(() => rw.waiting === 2, 'the waiters did not queue')
    await holder.terminate()
    const release = await within(mine, 5000, 'the lock of the dead writer was not handed on')
    assert.strictEqual(release.ownerDied, true)
    assert.strictEqual(rw.writer, threadId)
    assert.strictEqual(rw.waiting, 1)
    release()
    assert.strictEqual(await within(theirs, 5000, 'the reader was not granted'), 1)
    await reader.run(({ state }) => state.rw.releaseRead(), undefined, 5000)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('a writer terminated while holding the lock with nobody waiting: the next try, sync or async acquirer recovers it', async () => {
    const rw = new RWLock()
    const promiseForms = {
      acquireRead: () => rw.acquireRead(),
      acquireWrite: () => rw.acquireWrite(),
      'acquireRead timeout 0': () => rw.acquireRead({ timeout: 0 }),
      'acquireWrite blocking false': () => rw.acquireWrite({ blocking: false })
    }
    for (const next of ['tryAcquireWrite', 'tryAcquireRead', 'acquireWriteSync', 'acquireReadSync', ...Object.keys(promiseForms)]) {
      const [holder] = await started(openIn('rw', rw))
      await holder.run(({ state }) => state.rw.acquireWriteSync(), undefined, 5000)
      await holder.terminate()
      assert.strictEqual(rw.writer, holder.threadId, 'the word still names the dead writer')
      let ownerDied = null
      if (next === 'tryAcquireWrite') assert.strictEqual(rw.tryAcquireWrite(), true)
      else if (next === 'tryAcquireRead') assert.strictEqual(rw.tryAcquireRead(), true)
      else if (next === 'acquireWriteSync') rw.acquireWriteSync({ timeout: 5000 })
      else if (next === 'acquireReadSync') rw.acquireReadSync({ timeout: 5000 })
      else {
        const release = await within(promiseForms[next](), 5000, `${next} did not recover the lock`)
        ownerDied = release.ownerDied
        release()
      }
      if (ownerDied !== null) assert.strictEqual(ownerDied, true, `${next}: ownerDied`)
      else if (/write/i.test(next)) rw.releaseWrite()
      else rw.releaseRead()
      assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 }, next)
    }
  })

  for (const mode of ['sync', 'async']) {
    it(`a writer whose thread ends normally while holding the lock (${mode}): the waiter gets it with ownerDied`, async () => {
      const rw = new RWLock()
      const go = new Int32Array(new SharedArrayBuffer(4))
      const w = exitHolding(rw, { mode, go })
      await w.locked
      const mine = rw.acquireWrite()
      await until(() => rw.waiting === 1, 'the main thread did not queue')
      Atomics.store(go, 0, 1)
      Atomics.notify(go, 0)
      assert.strictEqual(await within(w.exited, 10000, 'the worker did not exit'), 0)
      const release = await within(mine, 5000, 'the lock of the exited writer was not handed on')
      assert.strictEqual(release.ownerDied, true)
      release()
      // With nobody waiting when it ends, the next acquirer takes over.
      const w2 = exitHolding(rw, { mode })
      await w2.locked
      assert.strictEqual(await within(w2.exited, 10000, 'the second worker did not exit'), 0)
      const r2 = await within(rw.acquireRead(), 5000, 'the lock of the second exited writer was not recovered')
      assert.strictEqual(r2.ownerDied, true)
      r2()
      assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    })
  }

  it('the blocking forms report a takeover from a dead writer: acquireWriteSync() and acquireReadSync() return true, then false', async () => {
    const rw = new RWLock()
    for (const take of ['acquireWriteSync', 'acquireReadSync']) {
      const w = exitHolding(rw, { mode: 'sync' })
      await w.locked
      assert.strictEqual(await within(w.exited, 10000, 'the worker did not exit'), 0)
      assert.strictEqual(rw[take]({ timeout: 5000 }), true, `${take}() after the writer died`)
      if (take === 'acquireWriteSync') rw.releaseWrite()
      else rw.releaseRead()
      assert.strictEqual(rw[take](), false, `${take}() on a free lock`)
      if (take === 'acquireWriteSync') rw.releaseWrite()
      else rw.releaseRead()
    }
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('tryAcquireWrite() and runWrite() after a dead writer: rw.ownerDied tells the writer, and the writer after it is told false', async () => {
    const rw = new RWLock()
    const forms = {
      tryAcquireWrite: async () => {
        assert.strictEqual(rw.tryAcquireWrite(), true)
        const told = rw.ownerDied
        rw.releaseWrite()
        return told
      },
      runWrite: () => rw.runWrite(() => rw.ownerDied),
      'runWrite with options': () => rw.runWrite(() => rw.ownerDied, { timeout: 5000 })
    }
    for (const [name, take] of Object.entries(forms)) {
      const w = exitHolding(rw, { mode: 'sync' })
      await w.locked
      assert.strictEqual(await within(w.exited, 10000, 'the worker did not exit'), 0)
      assert.strictEqual(rw.ownerDied, true, `${name}: rw.ownerDied while the dead writer's word is held`)
      assert.strictEqual(await take(), true, `${name}: the writer after the dead one was not told`)
      const release = await rw.acquireWrite()
      assert.strictEqual(release.ownerDied, false, `${name}: the writer after the told one`)
      assert.strictEqual(rw.ownerDied, false)
      release()
      assert.strictEqual(rw.ownerDied, false, `${name}: a free lock`)
    }
  })

  it('runWrite() on a word freed after a dead writer (readers took it over, then left): the writer is told', async () => {
    const rw = new RWLock()
    const [reader] = await started(openIn('rw', rw))
    const w = exitHolding(rw, { mode: 'sync', go: new Int32Array(new SharedArrayBuffer(4)) })
    await w.locked
    const read = reader.run(({ state }) => state.rw.acquireReadSync())
    await until(() => rw.waiting === 1, 'the reader did not queue')
    await w.worker.terminate()
    assert.strictEqual(await within(read, 5000, 'the reader was not let in'), true, 'the reader was not told')
    await reader.run(({ state }) => state.rw.releaseRead(), undefined, 5000)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    assert.strictEqual(await rw.runWrite(() => rw.ownerDied), true, 'the first writer after the death was not told')
    assert.strictEqual(await rw.runWrite(() => rw.ownerDied), false)
  })

  it('readers queued when a writer dies are let in together and every one of them is told; a reader that comes later is not', async () => {
    for (let run = 0; run < 3; run++) {
      const rw = new RWLock()
      const readers = await started(openIn('rw', rw), openIn('rw', rw), openIn('rw', rw))
      const w = exitHolding(rw, { mode: 'sync', go: new Int32Array(new SharedArrayBuffer(4)) })
      await w.locked
      const reads = readers.map((r) => r.run(({ state }) => state.rw.acquireReadSync()))
      const promised = rw.acquireRead()
      await until(() => rw.waiting === 4, 'the readers did not queue')
      await w.worker.terminate()
      const told = await within(Promise.all(reads), 5000, 'the readers were not let in')
      const release = await within(promised, 5000, 'the promised reader was not let in')
      assert.deepStrictEqual([...told, release.ownerDied], [true, true, true, true], `run ${run}: which readers were told`)
      assert.strictEqual(rw.readers, 4)
      assert.strictEqual(rw.ownerDied, true)
      const later = await rw.acquireRead()
      assert.strictEqual(later.ownerDied, false, 'a reader that came after the batch')
      later()
      release()
      for (const r of readers) await r.run(({ state }) => state.rw.releaseRead(), undefined, 5000)
      for (const r of readers) await r.terminate()
      assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    }
  })

  it('readers are owners: a reader that dies holding read locks gives them back, and the next writer is told', async () => {
    const rw = new RWLock()
    const [w] = await started(openIn('rw', rw))
    await w.run(({ state }) => { state.rw.acquireReadSync(); state.rw.acquireReadSync() }, undefined, 5000)
    assert.strictEqual(rw.readers, 2)
    assertCode(thrown(() => rw.releaseRead()), 'ENOTOWNER') // not this thread's
    await w.terminate()
    assert.strictEqual(rw.readers, 0)
    assert.strictEqual(rw.acquireWriteSync({ timeout: 5000 }), true)
    rw.releaseWrite()
    assert.strictEqual(rw.acquireWriteSync(), false)
    rw.releaseWrite()
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('a reader whose further read would queue behind a waiting writer gets EDEADLK; the writer gets in once it releases', async () => {
    const rw = new RWLock()
    rw.acquireReadSync()
    const [w] = await started(openIn('rw', rw))
    const writing = w.run(({ state }) => { state.rw.acquireWriteSync({ timeout: 10000 }); state.rw.releaseWrite(); return 'wrote' }, undefined, 15000)
    await until(() => rw.waiting === 1, 'the writer did not queue')
    // A second read lock of this thread would wait behind the writer, which
    // waits for this thread's first read lock: never granted.
    assertCode(thrown(() => rw.acquireReadSync({ timeout: 5000 })), 'EDEADLK')
    assert.strictEqual(rw.tryAcquireRead(), false)
    assert.deepStrictEqual(state(rw), { readers: 1, writer: null, waiting: 1 })
    rw.releaseRead()
    assert.strictEqual(await writing, 'wrote')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('timeouts while a worker holds the write lock, in main and in another worker', async () => {
    const rw = new RWLock()
    const [holder, other] = await started(openIn('rw', rw), openIn('rw', rw))
    await holder.run(({ state }) => state.rw.acquireWriteSync(), undefined, 5000)
    const t0 = Date.now()
    assertCode(thrown(() => rw.acquireReadSync({ timeout: 40 })), 'ETIMEDOUT')
    assert.ok(Date.now() - t0 >= 35)
    assertCode(thrown(() => rw.acquireWriteSync({ timeout: 20 })), 'ETIMEDOUT')
    assertCode(await rejection(rw.acquireWrite({ timeout: 20 })), 'ETIMEDOUT')
    assertCode(await rejection(other.run(({ state }) => state.rw.acquireReadSync({ timeout: 20 }))), 'ETIMEDOUT')
    assertCode(await rejection(other.run(({ state }) => state.rw.acquireRead({ timeout: 20 }))), 'ETIMEDOUT')
    assertCode(await rejection(other.run(({ state }) => state.rw.releaseWrite())), 'ENOTOWNER')
    assert.deepStrictEqual(state(rw), { readers: 0, writer: holder.threadId, waiting: 0 })
    await holder.run(({ state }) => state.rw.releaseWrite(), undefined, 5000)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  it('an aborted request leaves the queue; the worker behind it is granted', async () => {
    const rw = new RWLock()
    const [holder, next] = await started(openIn('rw', rw), openIn('rw', rw))
    await holder.run(({ state }) => state.rw.acquireReadSync(), undefined, 5000)
    const ac = new AbortController()
    const mine = rw.acquireWrite({ signal: ac.signal })
    const theirs = next.run(({ state }) => { state.rw.acquireReadSync(); return state.rw.readers })
    await until(() => rw.waiting === 2, 'the worker did not queue')
    const reason = new Error('stop')
    ac.abort(reason)
    assertAbort(await rejection(mine), reason)
    assert.strictEqual(await within(theirs, 5000, 'the reader behind the aborted writer was not granted'), 2)
    assert.strictEqual(rw.waiting, 0)
    await holder.run(({ state }) => state.rw.releaseRead(), undefined, 5000)
    await next.run(({ state }) => state.rw.releaseRead(), undefined, 5000)
    assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
  })

  const blockedCases = [
    ['acquireReadSync()', 'write', ({ state }) => state.rw.acquireReadSync()],
    ['acquireRead()', 'write', ({ state }) => state.rw.acquireRead().then(() => 'granted')],
    ['acquireWriteSync()', 'read', ({ state }) => state.rw.acquireWriteSync()],
    ['acquireWrite()', 'read', ({ state }) => state.rw.acquireWrite().then(() => 'granted')]
  ]
  for (const [name, held, fn] of blockedCases) {
    it(`a worker terminated while blocked in ${name} leaves the queue at once; the threads behind it go on`, async () => {
      const rw = new RWLock()
      const [w, other] = await started(openIn('rw', rw), openIn('rw', rw))
      if (held === 'write') rw.acquireWriteSync()
      else rw.acquireReadSync()
      const blocked = w.run(fn)
      blocked.catch(() => {})
      await until(() => rw.waiting === 1, 'the worker did not queue')
      // A reader behind a queued writer waits; behind a queued reader it
      // waits for the write lock main holds.
      const mine = held === 'read' ? rw.acquireRead() : null
      const theirs = other.run(({ state }) => state.rw.acquireWrite({ timeout: 10000 }).then((r) => { r(); return 'done' }))
      await until(() => rw.waiting === (mine ? 3 : 2), 'the other requests did not queue')
      await sleep(20)
      const ms = await w.terminate()
      assert.ok(ms < 2000, `terminate() took ${ms} ms`)
      await until(() => rw.waiting === 1, 'the terminated worker\'s request was not removed')
      if (mine) {
        const release = await within(mine, 5000, 'the reader behind the terminated writer was not let in')
        assert.strictEqual(rw.readers, 2)
        release()
        rw.releaseRead()
      } else {
        rw.releaseWrite()
      }
      assert.strictEqual(await within(theirs, 5000, 'the other worker did not get the write lock'), 'done')
      assert.deepStrictEqual(state(rw), { readers: 0, writer: null, waiting: 0 })
    })
  }
})
