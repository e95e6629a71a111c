'use strict'

// ConditionVariable: the API in one thread, then across real worker
// threads: a bounded buffer with producers and consumers (exact counts),
// no lost wakeup over many rounds, notifyOne wakes one and notifyAll all,
// timeouts, an abort that takes the lock again before it rejects, bad
// input, and workers terminated while they wait. Functions passed to
// w.run() execute inside the worker (test/fixtures/runner-worker.js);
// shared workloads are in test/fixtures/cv-tasks.js.

const assert = require('assert')
const { threadId } = require('worker_threads')
const { AsyncLock, ConditionVariable, LockError } = require('..')
const { TestWorker, openIn, started, cleanup, reuse, within, until, sleep, rejection, assertCode, assertAbort, refusals } = require('./fixtures/threads')
const tasks = require('./fixtures/cv-tasks')

// A worker with the lock as ctx.locks[0] and the variable as state.cv;
// state.woken counts the waits it saw end.
describe('ConditionVariable (one thread)', () => {
  it('lives in its own buffer or a slot of a given one; from(handle) opens the same variable', async () => {
    const cv = new ConditionVariable()
    assert.strictEqual(cv.waiting, 0)
    assert.strictEqual(cv.handle.buffer.byteLength, 4)
    const sab = new SharedArrayBuffer(8)
    const a = new ConditionVariable(sab, 4)
    const b = ConditionVariable.from(structuredClone(a.handle))
    const lock = new AsyncLock()
    lock.lock()
    const p = a.wait(lock)
    assert.strictEqual(b.waiting, 1)
    assert.strictEqual(b.notifyOne(), 1)
    assert.strictEqual(await within(p, 5000, 'the wait did not end'), 'ok')
    assert.strictEqual(new Int32Array(sab)[0], 0, 'the variable must use only its own slot')
    lock.unlock()
  })

  it('notify with nobody waiting wakes nobody and is not remembered', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    assert.strictEqual(cv.notifyOne(), 0)
    assert.strictEqual(cv.notifyAll(), 0)
    lock.lock()
    assert.strictEqual(cv.waitSync(lock, { timeout: 20 }), 'timed-out')
    lock.unlock()
  })

  it('waitSync: times out, and holds the lock again when it returns', () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    lock.lock()
    const t0 = Date.now()
    assert.strictEqual(cv.waitSync(lock, { timeout: 40 }), 'timed-out')
    const elapsed = Date.now() - t0
    assert.ok(elapsed >= 35 && elapsed < 5000, `waitSync({ timeout: 40 }) returned after ${elapsed} ms`)
    assert.strictEqual(lock.owner, threadId)
    assert.strictEqual(cv.waiting, 0)
    assert.strictEqual(cv.waitSync(lock, { timeout: 0 }), 'timed-out')
    assert.strictEqual(lock.owner, threadId)
    lock.unlock()
  })

  it('waitSync with a request of this thread queued for the lock throws EDEADLK before it releases anything', async () => {
    const cases = {
      'acquire() on the same object': (lock) => lock.acquire(),
      'acquire() on a second object of the same word': (lock) => AsyncLock.from(lock.handle).acquire()
    }
    for (const [name, queue] of Object.entries(cases)) {
      const lock = new AsyncLock()
      const cv = new ConditionVariable()
      lock.lock()
      let granted = false
      const mine = queue(lock).then((release) => { granted = true; return release })
      let err
      try {
        cv.waitSync(lock, { timeout: 50 })
      } catch (e) {
        err = e
      }
      assertCode(err, 'EDEADLK')
      assert.match(err.message, /^ConditionVariable\.waitSync: /)
      await sleep(10)
      assert.strictEqual(granted, false, `${name}: the queued request was granted: waitSync released the lock`)
      assert.strictEqual(lock.owner, threadId, name)
      assert.strictEqual(cv.waiting, 0, name)
      lock.unlock()
      const release = await within(mine, 5000, `${name}: the queued request was not granted after the release`)
      release()
      assert.strictEqual(lock.locked, false, name)
    }
  })

  it('wait: releases the lock while waiting and holds it again when it resolves', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    lock.lock()
    const p = cv.wait(lock)
    assert.strictEqual(lock.locked, false, 'the lock must be released while waiting')
    assert.strictEqual(cv.waiting, 1)
    lock.lock()
    assert.strictEqual(cv.notifyOne(), 1)
    await sleep(10)
    assert.strictEqual(lock.owner, threadId)
    lock.unlock()
    assert.strictEqual(await within(p, 5000, 'the wait did not end'), 'ok')
    assert.strictEqual(lock.owner, threadId)
    lock.unlock()
    lock.lock()
    const t0 = Date.now()
    assert.strictEqual(await cv.wait(lock, { timeout: 30 }), 'timed-out')
    assert.ok(Date.now() - t0 >= 25)
    assert.strictEqual(lock.owner, threadId)
    assert.strictEqual(await cv.wait(lock, { timeout: 0 }), 'timed-out')
    assert.strictEqual(lock.owner, threadId)
    assert.strictEqual(cv.waiting, 0)
    lock.unlock()
  })

  it('notifyOne wakes the oldest wait only; notifyAll wakes the rest', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    const woken = []
    const waits = [1, 2, 3].map((tag) => {
      lock.lock()
      return cv.wait(lock).then((r) => {
        woken.push(tag)
        assert.strictEqual(lock.owner, threadId)
        lock.unlock()
        return r
      })
    })
    assert.strictEqual(cv.waiting, 3)
    assert.strictEqual(cv.notifyOne(), 1)
    await sleep(20)
    assert.deepStrictEqual(woken, [1])
    assert.strictEqual(cv.waiting, 2)
    assert.strictEqual(cv.notifyAll(), 2)
    assert.deepStrictEqual(await within(Promise.all(waits), 5000, 'the waits did not end'), ['ok', 'ok', 'ok'])
    assert.deepStrictEqual(woken, [1, 2, 3])
    assert.strictEqual(lock.locked, false)
  })

  it('abort: a signal aborted before the call rejects at once and keeps the lock held', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    const ac = new AbortController()
    const reason = new Error('early')
    ac.abort(reason)
    lock.lock()
    assertAbort(await rejection(cv.wait(lock, { signal: ac.signal })), reason)
    assert.strictEqual(lock.owner, threadId)
    assert.strictEqual(cv.waiting, 0)
    lock.unlock()
  })

  it('abort: withdraws the wait, takes the lock again (waiting for its holder), then rejects AbortError', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    lock.lock()
    const ac = new AbortController()
    let settled = false
    const p = cv.wait(lock, { signal: ac.signal })
    p.then(() => { settled = true }, () => { settled = true })
    const release = await lock.acquire()
    const reason = new Error('stop waiting')
    ac.abort(reason)
    await sleep(20)
    assert.strictEqual(cv.waiting, 0, 'the aborted wait must leave the list')
    assert.strictEqual(settled, false, 'the aborted wait settled before it had the lock again')
    release()
    assertAbort(await rejection(p), reason)
    assert.strictEqual(lock.owner, threadId)
    assert.strictEqual(cv.notifyAll(), 0)
    lock.unlock()
  })

  // A wait releases the lock and takes it back within the caller's one
  // hold: the release function the caller got before the wait (from
  // acquire(), or runExclusive's own) still ends that hold afterwards, and
  // the lock is free again (a producer/consumer recipe deadlocked when the
  // wait's own acquire() made a new hold that nothing released).
  it('the release function of the hold a wait() ran in still releases the lock after the wait', async () => {
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const release = await lock.acquire()
    assert.strictEqual(await cv.wait(lock, { timeout: 5 }), 'timed-out')
    assert.strictEqual(lock.owner, threadId)
    release()
    assert.strictEqual(lock.locked, false)
    const release2 = await lock.acquire()
    assert.strictEqual(cv.waitSync(lock, { timeout: 5 }), 'timed-out')
    release2()
    assert.strictEqual(lock.locked, false)
    await lock.runExclusive(() => cv.wait(lock, { timeout: 5 }))
    assert.strictEqual(lock.locked, false)
  })

  describe('bad input: the right error, a clear message, and nothing changed', () => {
    const ctorCases = [
      ['an ArrayBuffer', () => new ConditionVariable(new ArrayBuffer(4)), TypeError, /SharedArrayBuffer/],
      ['byteOffset 1', () => new ConditionVariable(new SharedArrayBuffer(8), 1), RangeError, /byteOffset/],
      ['byteOffset past the end', () => new ConditionVariable(new SharedArrayBuffer(8), 8), RangeError, /byteOffset/],
      ['from("x")', () => ConditionVariable.from('x'), TypeError, /ConditionVariable\.from.*handle/],
      ['from({ buffer: [] })', () => ConditionVariable.from({ buffer: [] }), TypeError, /ConditionVariable\.from.*SharedArrayBuffer/]
    ]
    refusals('constructor / from', ctorCases)

    // Each case runs with `lock` held by this thread and `other` free.
    const cases = [
      ['no lock', (cv, m) => cv[m](), TypeError, /lock must be an AsyncLock/],
      ['a plain object as lock', (cv, m) => cv[m]({ owner: threadId }), TypeError, /lock must be an AsyncLock/],
      ['a lock that is not held', (cv, m, lock, other) => cv[m](other), LockError, /does not hold/],
      ['options null', (cv, m, lock) => cv[m](lock, null), TypeError, /options/],
      ['options "1"', (cv, m, lock) => cv[m](lock, '1'), TypeError, /options/],
      ['timeout -1', (cv, m, lock) => cv[m](lock, { timeout: -1 }), RangeError, /timeout/],
      ['timeout "1"', (cv, m, lock) => cv[m](lock, { timeout: '1' }), TypeError, /timeout/]
    ]
    const asyncOnly = [
      ['signal {}', (cv, m, lock) => cv[m](lock, { signal: {} }), TypeError, /signal/],
      ['ref 0', (cv, m, lock) => cv[m](lock, { ref: 0 }), TypeError, /ref/],
      ['blocking false', (cv, m, lock) => cv[m](lock, { blocking: false }), TypeError, /blocking/]
    ]
    // The rows take (cv, method, lock, other); each test gets its own.
    const forMethod = (m, rows) => rows.map(([name, fn, type, message]) =>
      [name, ({ cv, lock, other }) => fn(cv, m, lock, other), type, message])
    const fresh = {
      make: () => {
        const subject = { cv: new ConditionVariable(), lock: new AsyncLock(), other: new AsyncLock() }
        subject.lock.lock()
        return subject
      },
      unchanged: ({ cv, lock, other }, err) => {
        if (err instanceof LockError) assertCode(err, 'ENOTOWNER')
        assert.strictEqual(lock.owner, threadId, 'the lock must stay held')
        assert.strictEqual(other.locked, false)
        assert.strictEqual(cv.waiting, 0)
        assert.strictEqual(new Int32Array(cv.handle.buffer)[0], 0)
      }
    }
    refusals('waitSync throws', forMethod('waitSync', cases), fresh)
    refusals('wait rejects (never throws)', forMethod('wait', [...cases, ...asyncOnly]), { ...fresh, promised: true })
  })
})

describe('ConditionVariable across threads', function () {
  afterEach(cleanup)
  reuse() // no test here needs a thread of its own

  it('a bounded buffer: 2 producers and 2 consumers (sync and async, main among them) pass every item exactly once', async () => {
    const PER_PRODUCER = 4000
    const TOTAL = 2 * PER_PRODUCER
    const lock = new AsyncLock()
    const notEmpty = new ConditionVariable()
    const notFull = new ConditionVariable()
    const handles = { lock: lock.handle, notEmpty: notEmpty.handle, notFull: notFull.handle }
    const q = new Int32Array(new SharedArrayBuffer(4 * (tasks.ITEMS + tasks.CAPACITY)))
    const seen = new Int32Array(new SharedArrayBuffer(4 * TOTAL))
    const [p1, p2, c1] = await started(new TestWorker(), new TestWorker(), new TestWorker())
    const produce = ({ tl, require }, arg) => require('./cv-tasks').produce(tl, arg)
    const runs = [
      p1.run(produce, { handles, q, first: 0, count: PER_PRODUCER, sync: true }),
      p2.run(produce, { handles, q, first: PER_PRODUCER, count: PER_PRODUCER, sync: false }),
      c1.run(({ tl, require }, arg) => require('./cv-tasks').consume(tl, arg),
        { handles, q, seen, count: TOTAL / 2, sync: true })
    ]
    const mine = tasks.consume(require('..'), { handles, q, seen, count: TOTAL / 2, sync: false })
    const [, , theirSum, mySum] = await within(Promise.all([...runs, mine]), 25000,
      'the producers and consumers did not finish (a lost wakeup?)')
    assert.strictEqual(theirSum + mySum, TOTAL * (TOTAL - 1) / 2)
    const wrong = [...seen].map((n, item) => [item, n]).filter(([, n]) => n !== 1)
    assert.deepStrictEqual(wrong, [], 'items consumed other than exactly once: [item, times]')
    assert.strictEqual(q[0], 0)
    assert.strictEqual(notEmpty.waiting + notFull.waiting, 0)
    assert.strictEqual(lock.locked, false)
  })

  for (const [name, outside] of [['notify under the lock', false], ['notify after the unlock', true]]) {
    it(`no lost wakeup: 2 threads take 5,000 turns each with notifyOne (${name})`, async () => {
      const ROUNDS = 5000
      const lock = new AsyncLock()
      const cv = new ConditionVariable()
      const turn = new Int32Array(new SharedArrayBuffer(8))
      const arg = { lock: lock.handle, cv: cv.handle, turn, parties: 2, rounds: ROUNDS, notifyOutside: outside }
      const [w] = await started(new TestWorker())
      const theirs = w.run(({ tl, require }, arg) => require('./cv-tasks').turns(tl, arg), { ...arg, me: 1, sync: true })
      const mine = tasks.turns(require('..'), { ...arg, me: 0, sync: false })
      await within(Promise.all([mine, theirs]), 20000, `a wakeup was lost (turns taken: ${Atomics.load(turn, 1)})`)
      assert.strictEqual(Atomics.load(turn, 1), 2 * ROUNDS)
      assert.strictEqual(cv.waiting, 0)
    })
  }

  it('no lost wakeup: 3 threads take 500 turns each in a ring with notifyAll', async () => {
    const ROUNDS = 500
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const turn = new Int32Array(new SharedArrayBuffer(8))
    const arg = { lock: lock.handle, cv: cv.handle, turn, parties: 3, rounds: ROUNDS }
    const [a, b] = await started(new TestWorker(), new TestWorker())
    const turns = ({ tl, require }, arg) => require('./cv-tasks').turns(tl, arg)
    const runs = [
      a.run(turns, { ...arg, me: 1, sync: true, notifyOutside: true }),
      b.run(turns, { ...arg, me: 2, sync: false, notifyOutside: false }),
      tasks.turns(require('..'), { ...arg, me: 0, sync: false, notifyOutside: false })
    ]
    await within(Promise.all(runs), 20000, `a wakeup was lost (turns taken: ${Atomics.load(turn, 1)})`)
    assert.strictEqual(Atomics.load(turn, 1), 3 * ROUNDS)
  })

  it('notifyOne wakes exactly one of three waiting workers; notifyAll wakes the other two', async () => {
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const woken = new Int32Array(new SharedArrayBuffer(4))
    const workers = await started(...[0, 1, 2].map(() => openIn('cv', cv, { locks: [lock], data: { woken } })))
    const runs = workers.map((w, i) => w.run(async ({ locks, state, workerData }, i) => {
      const lock = locks[0]
      if (i === 2) await lock.acquire()
      else lock.lock()
      const r = i === 2 ? await state.cv.wait(lock) : state.cv.waitSync(lock)
      Atomics.add(workerData.woken, 0, 1)
      lock.unlock()
      return r
    }, i))
    await until(() => cv.waiting === 3, 'the workers did not all wait')
    lock.lock()
    assert.strictEqual(cv.notifyOne(), 1)
    lock.unlock()
    await until(() => Atomics.load(woken, 0) === 1, 'notifyOne woke nobody')
    await sleep(50)
    assert.strictEqual(Atomics.load(woken, 0), 1, 'notifyOne woke more than one waiting worker')
    assert.strictEqual(cv.waiting, 2)
    assert.strictEqual(cv.notifyAll(), 2)
    assert.deepStrictEqual(await within(Promise.all(runs), 5000, 'notifyAll did not wake everybody'), ['ok', 'ok', 'ok'])
    assert.strictEqual(Atomics.load(woken, 0), 3)
    assert.strictEqual(lock.locked, false)
  })

  it('timeouts in a worker: waitSync and wait return timed-out holding the lock', async () => {
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const [w] = await started(openIn('cv', cv, { locks: [lock] }))
    const r = await w.run(async ({ locks, state, threadId }) => {
      const lock = locks[0]
      lock.lock()
      const t0 = Date.now()
      const a = state.cv.waitSync(lock, { timeout: 40 })
      const elapsed = Date.now() - t0
      const ownerA = lock.owner === threadId
      const b = await state.cv.wait(lock, { timeout: 20 })
      const ownerB = lock.owner === threadId
      lock.unlock()
      return { a, b, elapsed: elapsed >= 35, ownerA, ownerB }
    }, undefined, 5000)
    assert.deepStrictEqual(r, { a: 'timed-out', b: 'timed-out', elapsed: true, ownerA: true, ownerB: true })
    assert.strictEqual(cv.waiting, 0)
    assert.strictEqual(lock.locked, false)
  })

  it('an aborted wait takes the lock back from a worker before it rejects with AbortError', async () => {
    const lock = new AsyncLock()
    const cv = new ConditionVariable()
    const [w] = await started(openIn('cv', cv, { locks: [lock] }))
    lock.lock()
    const ac = new AbortController()
    let settled = false
    const p = cv.wait(lock, { signal: ac.signal })
    p.then(() => { settled = true }, () => { settled = true })
    await w.run(({ locks }) => locks[0].lock(), undefined, 5000)
    const reason = new Error('stop')
    ac.abort(reason)
    await until(() => cv.waiting === 0, 'the aborted wait did not leave the list')
    await sleep(30)
    assert.strictEqual(settled, false, 'the aborted wait settled while a worker held the lock')
    assert.strictEqual(lock.owner, w.threadId)
    await w.run(({ locks }) => locks[0].unlock(), undefined, 5000)
    assertAbort(await rejection(p), reason)
    assert.strictEqual(lock.owner, threadId)
    lock.unlock()
  })

  for (const form of ['waitSync', 'wait']) {
    it(`a worker terminated while blocked in ${form}() leaves the list at once; the others go on`, async () => {
      const lock = new AsyncLock()
      const cv = new ConditionVariable()
      const [w, other] = await started(openIn('cv', cv, { locks: [lock] }), openIn('cv', cv, { locks: [lock] }))
      const blocked = w.run(async ({ locks, state }, form) => {
        locks[0].lock()
        return form === 'wait' ? state.cv.wait(locks[0]) : state.cv.waitSync(locks[0])
      }, form)
      blocked.catch(() => {})
      await until(() => cv.waiting === 1, 'the worker did not wait')
      const theirs = other.run(({ locks, state }) => {
        locks[0].lock()
        const r = state.cv.waitSync(locks[0], { timeout: 10000 })
        locks[0].unlock()
        return r
      })
      await until(() => cv.waiting === 2, 'the other worker did not wait')
      await sleep(20)
      const ms = await w.terminate()
      assert.ok(ms < 2000, `terminate() took ${ms} ms`)
      assert.strictEqual(cv.waiting, 1)
      assert.strictEqual(lock.locked, false, 'the terminated waiter must not hold the lock')
      lock.lock()
      assert.strictEqual(cv.notifyOne(), 1, 'notifyOne must wake the live waiter, not the dead one')
      lock.unlock()
      assert.strictEqual(await within(theirs, 5000, 'the other worker was not woken'), 'ok')
      assert.strictEqual(cv.waiting, 0)
      assert.strictEqual(lock.locked, false)
    })
  }
})
