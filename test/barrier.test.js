'use strict'

// Barrier: the API in one thread, then across real worker threads: many
// phases with main + 3 workers (exactly one `true` per phase, no phase
// mixing), timeouts, and workers terminated while they wait. Functions
// passed to w.run() execute inside the worker (test/fixtures/
// runner-worker.js); the shared workload is in test/fixtures/
// barrier-tasks.js.

const assert = require('assert')
const { Barrier, waiterCount } = require('..')
const { TestWorker, openIn, started, cleanup, reuse, within, until, sleep, thrown, rejection, assertCode, assertAbort, refusals } = require('./fixtures/threads')
const tasks = require('./fixtures/barrier-tasks')

// Waits in progress on the barrier, from the waiter list of its state word.
function waiting (barrier) {
  const { buffer, byteOffset } = barrier.handle
  return waiterCount(new Int32Array(buffer, byteOffset, 2), 1)
}

function state (barrier) {
  return { parties: barrier.parties, arrived: barrier.arrived, phase: barrier.phase, waiting: waiting(barrier) }
}

describe('Barrier (one thread)', () => {
  it('starts at phase 0 with nobody arrived, in its own 8 bytes or in a slot of a given buffer', () => {
    const b = new Barrier(3)
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 0, waiting: 0 })
    assert.strictEqual(b.handle.buffer.byteLength, 8)
    const sab = new SharedArrayBuffer(16)
    const words = new Int32Array(sab)
    words.fill(-1)
    const c = new Barrier(2, sab, 8)
    assert.deepStrictEqual([...words], [-1, -1, 2, 0])
    assert.deepStrictEqual(c.handle, { type: 'Barrier', buffer: sab, byteOffset: 8 })
  })

  it('a barrier of one party completes a phase at every arrival; the phase number wraps at 65536', async () => {
    const b = new Barrier(1)
    assert.strictEqual(b.arriveAndWaitSync(), true)
    assert.strictEqual(await b.arriveAndWait(), true)
    assert.strictEqual(b.phase, 2)
    for (let i = 2; i < 65536; i++) b.arriveAndWaitSync()
    assert.deepStrictEqual(state(b), { parties: 1, arrived: 0, phase: 0, waiting: 0 })
    assert.strictEqual(b.arriveAndWaitSync(), true)
    assert.strictEqual(b.phase, 1)
  })

  it('async arrivals in one thread: the last of n completes the phase, phase after phase', async () => {
    const b = new Barrier(3)
    for (let phase = 0; phase < 5; phase++) {
      const first = b.arriveAndWait()
      const second = b.arriveAndWait()
      assert.strictEqual(b.arrived, 2)
      assert.strictEqual(waiting(b), 2)
      await sleep(5)
      assert.strictEqual(b.phase, phase, 'the phase ended before all parties arrived')
      assert.deepStrictEqual(await within(Promise.all([first, second, b.arriveAndWait()]), 5000, 'the phase did not end'),
        [false, false, true])
      assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: phase + 1, waiting: 0 })
    }
  })

  it('from(handle) opens the same barrier without resetting it', async () => {
    const b = new Barrier(2, new SharedArrayBuffer(12), 4)
    const pending = b.arriveAndWait()
    const copy = Barrier.from(structuredClone(b.handle))
    assert.deepStrictEqual(state(copy), { parties: 2, arrived: 1, phase: 0, waiting: 1 })
    assert.strictEqual(copy.arriveAndWaitSync(), true)
    assert.strictEqual(await within(pending, 5000, 'the first party was not released'), false)
    assert.strictEqual(b.phase, 1)
  })

  it('timeouts throw or reject ETIMEDOUT, leave the waiter list and take the arrival back', async () => {
    const b = new Barrier(3)
    const t0 = Date.now()
    const err = thrown(() => b.arriveAndWaitSync({ timeout: 40 }))
    const elapsed = Date.now() - t0
    assertCode(err, 'ETIMEDOUT')
    assert.match(err.message, /arriveAndWaitSync/)
    assert.ok(elapsed >= 35 && elapsed < 5000, `arriveAndWaitSync({ timeout: 40 }) gave up after ${elapsed} ms`)
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 0, waiting: 0 })
    assertCode(await rejection(b.arriveAndWait({ timeout: 20 })), 'ETIMEDOUT')
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 0, waiting: 0 })
    // The timed-out arrivals were taken back: a lone retry cannot end the phase.
    assertCode(thrown(() => b.arriveAndWaitSync({ timeout: 0 })), 'ETIMEDOUT')
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 0, waiting: 0 })
  })

  it('abort: a signal aborted before the call rejects without arriving; a later abort rejects AbortError and leaves the list', async () => {
    const b = new Barrier(2)
    const reason = new Error('cancelled')
    const pre = new AbortController()
    pre.abort(reason)
    assertAbort(await rejection(b.arriveAndWait({ signal: pre.signal })), reason)
    assert.deepStrictEqual(state(b), { parties: 2, arrived: 0, phase: 0, waiting: 0 })
    const ac = new AbortController()
    const p = b.arriveAndWait({ signal: ac.signal })
    assert.strictEqual(waiting(b), 1)
    ac.abort(reason)
    assertAbort(await rejection(p), reason)
    assert.deepStrictEqual(state(b), { parties: 2, arrived: 0, phase: 0, waiting: 0 })
    // An abort after the phase ended changes nothing.
    const late = new AbortController()
    const first = b.arriveAndWait()
    const q = b.arriveAndWait({ signal: late.signal })
    assert.strictEqual(b.phase, 1)
    assert.strictEqual(await first, false)
    late.abort()
    assert.strictEqual(await q, true)
  })

  describe('bad input: the right error, a clear message, and nothing changed', () => {
    const ctorCases = [
      ['no parties', () => new Barrier(), TypeError, /parties/],
      ['parties 0', () => new Barrier(0), RangeError, /parties/],
      ['parties 65536', () => new Barrier(65536), RangeError, /parties/],
      ['parties 2.5', () => new Barrier(2.5), RangeError, /parties/],
      ['parties "2"', () => new Barrier('2'), TypeError, /parties/],
      ['an ArrayBuffer', () => new Barrier(2, new ArrayBuffer(8)), TypeError, /SharedArrayBuffer/],
      ['a 4-byte buffer', () => new Barrier(2, new SharedArrayBuffer(4)), RangeError, /8 bytes/],
      ['byteOffset 4 of 8', () => new Barrier(2, new SharedArrayBuffer(8), 4), RangeError, /byteOffset/],
      ['byteOffset 2', () => new Barrier(2, new SharedArrayBuffer(16), 2), RangeError, /byteOffset/],
      ['from(5)', () => Barrier.from(5), TypeError, /Barrier\.from.*handle/],
      ['from a 4-byte buffer', () => Barrier.from({ buffer: new SharedArrayBuffer(4) }), RangeError, /Barrier\.from.*8 bytes/]
    ]
    refusals('constructor / from', ctorCases)

    it('a refused constructor does not write to the given buffer', () => {
      const sab = new SharedArrayBuffer(12)
      const words = new Int32Array(sab)
      words.fill(7)
      thrown(() => new Barrier(0, sab))
      thrown(() => new Barrier(2, sab, 8))
      assert.deepStrictEqual([...words], [7, 7, 7])
    })

    const syncCases = [
      ['options null', (b) => b.arriveAndWaitSync(null), TypeError, /options/],
      ['timeout -1', (b) => b.arriveAndWaitSync({ timeout: -1 }), RangeError, /timeout/],
      ['timeout "9"', (b) => b.arriveAndWaitSync({ timeout: '9' }), TypeError, /timeout/]
    ]
    const fresh = { make: () => new Barrier(2), unchanged: (b) => assert.deepStrictEqual(state(b), { parties: 2, arrived: 0, phase: 0, waiting: 0 }, 'a refused call must not arrive') }
    refusals('arriveAndWaitSync throws', syncCases, fresh)

    const asyncCases = [
      ['options 1', (b) => b.arriveAndWait(1), TypeError, /options/],
      ['timeout NaN', (b) => b.arriveAndWait({ timeout: NaN }), RangeError, /timeout/],
      ['signal "x"', (b) => b.arriveAndWait({ signal: 'x' }), TypeError, /signal/],
      ['ref null', (b) => b.arriveAndWait({ ref: null }), TypeError, /ref/],
      ['blocking true', (b) => b.arriveAndWait({ blocking: true }), TypeError, /blocking/]
    ]
    refusals('arriveAndWait rejects (never throws)', asyncCases, { ...fresh, promised: true })
  })
})

describe('Barrier across threads', function () {
  afterEach(cleanup)
  reuse() // no test here needs a thread of its own

  it('2,000 phases with main + 3 workers (sync and async): one true per phase, no party ever a phase ahead', async () => {
    const PHASES = 2000
    const b = new Barrier(4)
    const log = new Int32Array(new SharedArrayBuffer(4 * (2 * PHASES + 1)))
    const arg = { handle: b.handle, log, phases: PHASES }
    const workers = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const runs = workers.map((w, i) => w.run(({ tl, require }, arg) =>
      require('./barrier-tasks').phases(tl, arg), { ...arg, offset: i }))
    // The main thread waits only in the promise form, so its watchdog runs.
    const mine = tasks.phases(require('..'), { ...arg, sync: false })
    await within(Promise.all([...runs, mine]), 25000, `the parties did not pass all phases (phase ${b.phase})`)
    assert.strictEqual(Atomics.load(log, 2 * PHASES), 0, 'a party left a phase early or got ahead of another')
    const arrivals = [...log.subarray(0, PHASES)]
    const trues = [...log.subarray(PHASES, 2 * PHASES)]
    assert.deepStrictEqual(arrivals.filter((n) => n !== 4), [], 'every phase must have exactly 4 arrivals')
    assert.deepStrictEqual(trues.filter((n) => n !== 1), [], 'every phase must have exactly one true')
    assert.deepStrictEqual(state(b), { parties: 4, arrived: 0, phase: PHASES, waiting: 0 })
  })

  it('a phase ends only when the last worker arrives; a worker\'s own timeout rejects ETIMEDOUT', async () => {
    const b = new Barrier(3)
    const [w1, w2] = await started(openIn('barrier', b), openIn('barrier', b))
    const first = w1.run(({ state }) => state.barrier.arriveAndWaitSync())
    const mine = b.arriveAndWait()
    await until(() => waiting(b) === 2, 'the first two parties did not wait')
    await sleep(30)
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 2, phase: 0, waiting: 2 })
    assert.strictEqual(await w2.run(({ state }) => state.barrier.arriveAndWaitSync(), undefined, 5000), true)
    assert.deepStrictEqual(await within(Promise.all([first, mine]), 5000, 'the waiting parties were not released'), [false, false])
    assertCode(await rejection(w1.run(({ state }) => state.barrier.arriveAndWaitSync({ timeout: 30 }))), 'ETIMEDOUT')
    assertCode(await rejection(w2.run(({ state }) => state.barrier.arriveAndWait({ timeout: 30 }))), 'ETIMEDOUT')
    assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 1, waiting: 0 })
  })

  for (const form of ['arriveAndWaitSync', 'arriveAndWait']) {
    it(`a worker terminated while blocked in ${form}() leaves the list at once; its arrival counts and the others complete the phase`, async () => {
      const b = new Barrier(3)
      const [w, other] = await started(openIn('barrier', b), openIn('barrier', b))
      const blocked = w.run(({ state }, form) => state.barrier[form](), form)
      blocked.catch(() => {})
      await until(() => waiting(b) === 1, 'the worker did not wait')
      const ms = await w.terminate()
      assert.ok(ms < 2000, `terminate() took ${ms} ms`)
      assert.deepStrictEqual(state(b), { parties: 3, arrived: 1, phase: 0, waiting: 0 })
      const theirs = other.run(({ state }) => state.barrier.arriveAndWaitSync({ timeout: 10000 }))
      await until(() => b.arrived === 2, 'the other worker did not arrive')
      const mine = await within(b.arriveAndWait(), 5000, 'the last arrival did not complete the phase')
      assert.strictEqual(mine, true)
      assert.strictEqual(await within(theirs, 5000, 'the other worker was not released'), false)
      assert.deepStrictEqual(state(b), { parties: 3, arrived: 0, phase: 1, waiting: 0 })
    })
  }
  it('a party that withdraws while another completes the phase never leaves the count out of range', async function () {
    this.timeout(30000)
    // Two parties arrive again and again with a zero timeout, so that one
    // often withdraws its arrival (timed out) just as the other completes
    // the phase. Whoever completes a phase checks the count right after:
    // completion is one atomic step, so the count is 0 or 1 then, never
    // out of range, whatever the other party did meanwhile.
    const b = new Barrier(2)
    const go = new Int32Array(new SharedArrayBuffer(4))
    const loop = ({ tl }, { handle, go, ms }) => {
      const barrier = tl.Barrier.from(handle)
      const start = new Int32Array(go)
      Atomics.add(start, 0, 1)
      while (Atomics.load(start, 0) < 2);
      const end = performance.now() + ms
      const bad = []
      let completed = 0
      while (performance.now() < end) {
        let completer = false
        try {
          completer = barrier.arriveAndWaitSync({ timeout: 0 })
        } catch (err) {
          if (err.code !== 'ETIMEDOUT') throw err
        }
        const arrived = barrier.arrived
        if (completer) completed++
        if (arrived > 1) bad.push(`${completer ? 'completer' : 'party'} saw ${arrived} arrived`)
        if (bad.length >= 5) break
      }
      return { completed, bad }
    }
    const [w] = await started(new TestWorker())
    const theirs = w.run(loop, { handle: b.handle, go: go.buffer, ms: 1500 })
    await until(() => Atomics.load(go, 0) === 1, 'the worker did not start')
    const mine = loop({ tl: require('..') }, { handle: b.handle, go: go.buffer, ms: 1500 })
    const other = await within(theirs, 10000, 'the worker did not finish')
    assert.ok(mine.completed + other.completed > 0, 'no phase ever completed: the test did not test')
    assert.deepStrictEqual([...mine.bad, ...other.bad], [])
    assert.ok(b.arrived <= 1, `${b.arrived} arrived at the end`)
  })
})
