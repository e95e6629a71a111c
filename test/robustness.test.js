'use strict'

// Threads that go away: worker.terminate() in the middle of a wait or while
// holding a lock, workers that end on their own with waits pending or a
// lock held, keep-alive of pending waits, and teardown of many short-lived
// workers without leaks.

const assert = require('assert')
const path = require('path')
const { spawnSync } = require('child_process')
const { Worker } = require('worker_threads')
const { once } = require('events')
const v8 = require('v8')
const vm = require('vm')
const { notify, waitAsync, waiterCount, AsyncLock } = require('..')
const { binding } = require('../lib/native')
const { TestWorker, started, cleanup, track, mainGuard, guarded, within, until, sleep } = require('./fixtures/threads')

const ROOT = path.join(__dirname, '..')
const PROMPT_MS = 1000

function sharedInt32 (length = 4) {
  return track(new Int32Array(new SharedArrayBuffer(4 * length)))
}

// A worker that waits on ta[0] with waitAsync and posts the result.
function asyncWaiter (ta) {
  const w = new TestWorker({ data: { ta } })
  w.result = w.ready().then(() => w.run(async ({ tl, workerData, post }) => {
    const r = tl.waitAsync(workerData.ta, 0, 0)
    post('waiting')
    return r.value
  }))
  return w
}

async function assertPrompt (victim, what) {
  const ms = await victim.terminate()
  assert.ok(ms < PROMPT_MS, `terminate() of a worker ${what} took ${ms.toFixed(1)} ms`)
  assert.strictEqual(victim.exitCode, 1, 'a terminated worker exits with code 1')
  return ms
}

describe('robustness', function () {
  before(mainGuard)
  afterEach(cleanup)

  describe('worker.terminate() mid-operation', () => {
    for (const kind of ['wait()', 'waitAsync()']) {
      it(`a worker blocked in ${kind} stops promptly; the other waiters stay, in order`, async () => {
        const ta = sharedInt32()
        const mine = waitAsync(ta, 0, 0)
        const [victim] = await started(new TestWorker({ data: { ta } }))
        victim.run(kind === 'wait()'
          ? ({ tl, workerData }) => tl.wait(workerData.ta, 0, 0)
          : ({ tl, workerData }) => tl.waitAsync(workerData.ta, 0, 0).value).catch(() => {})
        await until(() => waiterCount(ta, 0) === 2, 'the victim did not start waiting')
        const other = asyncWaiter(ta)
        await other.nextEvent((e) => e === 'waiting')
        assert.strictEqual(waiterCount(ta, 0), 3)

        await assertPrompt(victim, `blocked in ${kind}`)
        assert.strictEqual(waiterCount(ta, 0), 2, 'the terminated worker\'s waiter must leave the list')
        // FIFO among the survivors: the main thread first, then the worker.
        assert.strictEqual(notify(ta, 0, 1), 1)
        assert.strictEqual(await within(mine.value, 5000, 'the main thread was not woken'), 'ok')
        assert.strictEqual(waiterCount(ta, 0), 1)
        assert.strictEqual(notify(ta, 0), 1)
        assert.strictEqual(await within(other.result, 5000, 'the other worker was not woken'), 'ok')
        assert.strictEqual(notify(ta, 0), 0)
      })
    }

    for (const first of ['async', 'sync']) {
      it(`a worker holding a lock: the lock passes to the next waiter (${first}), flagged ownerDied`, async () => {
        const lock = track(new AsyncLock())
        const [victim, next] = await started(new TestWorker({ locks: [lock] }), new TestWorker({ locks: [lock] }))
        await victim.run(({ locks }) => locks[0].lock(), undefined, 5000)
        // The worker's blocking lock() reports whether its predecessor died
        // and holds the lock until told to let go.
        const queueWorker = () => next.run(({ locks, post }) => {
          locks[0].lock()
          post(locks[0].ownerDied)
          return new Promise((resolve) => setTimeout(resolve, 20)).then(() => locks[0].unlock())
        })
        let mine, theirs
        if (first === 'async') {
          mine = lock.acquire()
          theirs = queueWorker()
        } else {
          theirs = queueWorker()
          await until(() => lock.waiting === 1, 'the worker did not queue')
          mine = lock.acquire()
        }
        await until(() => lock.waiting === 2, 'the waiters did not queue')

        await assertPrompt(victim, 'holding a lock')
        if (first === 'async') {
          const release = await within(mine, 5000, 'the lock of the terminated worker was not passed on')
          assert.strictEqual(release.ownerDied, true)
          assert.strictEqual(lock.ownerDied, true)
          assert.strictEqual(lock.owner, 0)
          assert.strictEqual(lock.waiting, 1)
          release()
          assert.strictEqual(lock.ownerDied, false)
          // The next hand-off is an ordinary one.
          assert.strictEqual(await next.nextEvent(), false)
          await within(theirs, 5000, 'the worker did not release')
        } else {
          assert.strictEqual(await next.nextEvent(), true, 'the blocked worker was not told that the owner died')
          await within(theirs, 5000, 'the worker did not release')
          const release = await within(mine, 5000, 'the lock was not passed on after the worker')
          assert.strictEqual(release.ownerDied, false)
          release()
        }
        assert.strictEqual(lock.locked, false)
        assert.strictEqual(lock.ownerDied, false)
      })
    }

    // The grant races with the termination: if the victim's thread already
    // delivered it (its code may have run under the lock), the lock is
    // recovered from a dead owner and flagged; if not, the never-used grant
    // is given back at teardown and the lock passes on unflagged. Either
    // way it must pass on.
    it('a lock granted to a worker that is terminated before it could take it passes on', async () => {
      const lock = track(new AsyncLock())
      const [victim, next] = await started(new TestWorker({ locks: [lock] }), new TestWorker({ locks: [lock] }))
      lock.lock()
      victim.run(({ locks }) => locks[0].acquire()).catch(() => {})
      await until(() => lock.waiting === 1, 'the victim did not queue')
      const theirs = next.run(async ({ locks }) => {
        const release = await locks[0].acquire()
        const died = release.ownerDied
        release()
        return died
      })
      await until(() => lock.waiting === 2, 'the second worker did not queue')
      lock.unlock() // grants the lock to the victim, whose thread has yet to resolve it
      const terminated = victim.terminate()
      assert.strictEqual(typeof await within(theirs, 5000, 'the lock granted to the terminated worker was lost'), 'boolean')
      await terminated
      assert.strictEqual(lock.locked, false)
      // With nobody queued behind it, the next acquirer recovers it.
      const [victim2] = await started(new TestWorker({ locks: [lock] }))
      lock.lock()
      victim2.run(({ locks }) => locks[0].acquire()).catch(() => {})
      await until(() => lock.waiting === 1, 'the second victim did not queue')
      lock.unlock()
      await victim2.terminate()
      const release = await within(lock.acquire(), 5000, 'the lock of the terminated worker was not recovered')
      assert.strictEqual(typeof release.ownerDied, 'boolean')
      release()
      assert.strictEqual(lock.locked, false)
    })

    for (const kind of ['lock()', 'acquire()']) {
      it(`a worker waiting in ${kind}: its request leaves the queue and the next one gets the lock`, async () => {
        const lock = track(new AsyncLock())
        const [victim, next] = await started(new TestWorker({ locks: [lock] }), new TestWorker({ locks: [lock] }))
        lock.lock()
        victim.run(kind === 'lock()'
          ? ({ locks }) => locks[0].lock()
          : ({ locks }) => locks[0].acquire()).catch(() => {})
        await until(() => lock.waiting === 1, 'the victim did not queue')
        const theirs = next.run(async ({ locks, threadId }) => {
          const release = await locks[0].acquire()
          const r = [locks[0].owner === threadId, release.ownerDied]
          release()
          return r
        })
        await until(() => lock.waiting === 2, 'the second worker did not queue')

        await assertPrompt(victim, `waiting in ${kind}`)
        assert.strictEqual(lock.waiting, 1)
        assert.strictEqual(lock.owner, 0)
        lock.unlock()
        assert.deepStrictEqual(await within(theirs, 5000, 'the lock went to the terminated worker'), [true, false])
        assert.strictEqual(lock.locked, false)
        lock.lock()
        lock.unlock()
      })
    }

    it('a worker with everything at once: waits on two elements, two lock requests (abortable, timed), two locks held', async () => {
      const ta = sharedInt32()
      const held = [track(new AsyncLock()), track(new AsyncLock())]
      const wanted = [track(new AsyncLock()), track(new AsyncLock())]
      wanted[0].lock()
      wanted[1].lock()
      const mine = [waitAsync(ta, 0, 0), waitAsync(ta, 1, 0)]
      const [victim] = await started(new TestWorker({ locks: [...held, ...wanted], data: { ta } }))
      await victim.run(({ tl, locks, workerData, state }) => {
        locks[0].lock()
        state.held = locks[1].acquire()
        state.pending = [
          tl.waitAsync(workerData.ta, 0, 0).value,
          tl.waitAsync(workerData.ta, 1, 0, 60000).value,
          locks[2].acquire({ signal: new AbortController().signal }),
          locks[3].acquire({ timeout: 60000 })
        ]
        return state.held.then(() => {})
      }, undefined, 5000)
      const next = held.map((l) => l.acquire())
      assert.deepStrictEqual([waiterCount(ta, 0), waiterCount(ta, 1)], [2, 2])
      assert.deepStrictEqual(wanted.map((l) => l.waiting), [1, 1])

      await assertPrompt(victim, 'with waits and locks')
      assert.deepStrictEqual([waiterCount(ta, 0), waiterCount(ta, 1)], [1, 1])
      assert.deepStrictEqual(wanted.map((l) => l.waiting), [0, 0])
      for (const l of wanted) l.unlock()
      assert.deepStrictEqual(wanted.map((l) => l.locked), [false, false])
      const releases = await within(Promise.all(next), 5000, 'the held locks were not passed on')
      assert.deepStrictEqual(releases.map((r) => r.ownerDied), [true, true])
      for (const r of releases) r()
      assert.strictEqual(notify(ta, 0), 1)
      assert.strictEqual(notify(ta, 1), 1)
      assert.deepStrictEqual(await Promise.all(mine.map((m) => m.value)), ['ok', 'ok'])
    })

    // Permits and read locks have no owner to recover them from, so a grant
    // that reached a worker's queue but never its code must be given back
    // when the worker dies.
    it('semaphore permits and a read lock granted to a worker terminated before it could use them are given back', async () => {
      const { Semaphore, RWLock } = require('..')
      const sem = new Semaphore(0)
      const rw = new RWLock()
      rw.acquireWriteSync()
      const worker = new Worker(`
        const { Semaphore, RWLock } = require(${JSON.stringify(ROOT)})
        const { workerData, parentPort } = require('worker_threads')
        Semaphore.from(workerData.sem).acquire(1)
        RWLock.from(workerData.rw).acquireRead()
        parentPort.postMessage('queued')
        for (;;) {} // never returns to its event loop, so no grant is delivered
      `, { eval: true, workerData: { sem: sem.handle, rw: rw.handle } })
      await within(new Promise((resolve) => worker.once('message', resolve)), 5000, 'the worker did not queue')
      await until(() => sem.waiting === 1 && rw.waiting === 1, 'the requests did not queue')
      // A request that has starved (lockPolicy.starvationMs) is handed the
      // permit by the release; a younger one would only be woken for it.
      await sleep(5)
      sem.release(1) // granted to the worker's queued request
      rw.releaseWrite() // the read lock likewise
      assert.strictEqual(sem.value, 0)
      assert.strictEqual(rw.readers, 1)
      await within(worker.terminate(), PROMPT_MS, 'terminate() did not settle')
      assert.strictEqual(sem.value, 1, 'the permit granted to the dead worker was lost')
      assert.strictEqual(rw.readers, 0, 'the read lock granted to the dead worker stays held')
      assert.strictEqual(rw.tryAcquireWrite(), true)
      rw.releaseWrite()
    })
  })

  it('process.exit() on the main thread while workers block in wait() and lock() and have requests pending: a prompt, clean exit', () => {
    const script = `
      const { AsyncLock, waitAsync, waiterCount } = require(${JSON.stringify(ROOT)})
      const { Worker } = require('worker_threads')
      const ta = new Int32Array(new SharedArrayBuffer(8))
      const lock = new AsyncLock()
      const other = new AsyncLock()
      lock.lock()
      other.lock()
      const code = \`
        const { workerData: { ta, h, h2, mode } } = require('worker_threads')
        const tl = require(${JSON.stringify(ROOT)})
        tl.waitAsync(ta, 1, 0)
        tl.AsyncLock.from(h2).acquire()
        if (mode === 0) tl.wait(ta, 0, 0)
        else tl.AsyncLock.from(h).lock()\`
      for (let i = 0; i < 4; i++) {
        new Worker(code, { eval: true, workerData: { ta, h: lock.handle, h2: other.handle, mode: i % 2 } })
      }
      waitAsync(ta, 0, 0)
      const iv = setInterval(() => {
        if (waiterCount(ta, 0) === 3 && lock.waiting === 2 && other.waiting === 4) {
          clearInterval(iv)
          console.log('all blocked')
          process.exit(3)
        }
      }, 5)
      setTimeout(() => { console.log('never all blocked'); process.exit(4) }, 10000).unref()
    `
    const t0 = Date.now()
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 })
    const ms = Date.now() - t0
    assert.strictEqual(r.signal, null, `the process was killed (${r.signal}) after ${ms} ms: ${r.stderr}`)
    assert.strictEqual(r.stdout.trim(), 'all blocked', r.stderr)
    assert.strictEqual(r.status, 3, r.stderr)
    assert.strictEqual(r.stderr, '')
    assert.ok(ms < 10000, `the process took ${ms} ms to exit`)
  })

  // Once Node marks a worker stopping, Node-API refuses to make arrays and
  // promises and even to throw, so a native call of that thread returns
  // undefined, and V8 stops the thread only at its next interrupt check:
  // until then the JavaScript layer runs on with the undefined (seen as
  // "TypeError: undefined is not iterable" from locks.request under load).
  // The window cannot be timed from outside, so each case stubs one native
  // function to answer as it does there: the call must not return into the
  // caller's code (it stops in a loop that V8 ends; with no termination
  // coming, it throws the terminating error after its bound), never a
  // TypeError, never a result made of the undefined.
  describe('a native call that answers nothing while the thread is being terminated', () => {
    // The start of each worker's source: threadlock loaded with the native
    // function workerData.fn stubbed to answer undefined (the same module
    // object that lib/native.js loads, stubbed first), and `tl`, `req`,
    // `workerData`, `parentPort` defined. No termination comes there: the
    // stop's loop ends after 100 ms instead of its second, as it would
    // under an embedder's stop.
    const STUBBED = `
      const path = require('path')
      const { createRequire } = require('module')
      const { workerData, parentPort } = require('worker_threads')
      const req = createRequire(path.join(workerData.root, 'lib', 'native.js'))
      let binding
      try {
        binding = req('node-gyp-build')(workerData.root)
      } catch (err) {
        binding = req(path.join(workerData.root, 'build', 'Release', 'threadlock.node'))
      }
      binding[workerData.fn] = () => undefined
      req(path.join(workerData.root, 'lib', 'errors.js')).termination.graceMs = 100
      const tl = req(workerData.root)`
    const cases = [
      ['locks.request()', 'namedRequest', `await tl.locks.request('terminating-' + process.pid, () => 'ran')`],
      ['locks.query()', 'namedQuery', 'await tl.locks.query()'],
      ['wait()', 'wait', 'tl.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)'],
      ['Semaphore.acquire() queued', 'gateAcquireAsync', 'await new tl.Semaphore(0).acquire(1)'],
      ['ConditionVariable.notifyOne()', 'casNotify', 'new tl.ConditionVariable().notifyOne()'],
      ['Semaphore.waiting', 'waiterCount', 'new tl.Semaphore(1).waiting']
    ]
    for (const [what, fn, call] of cases) {
      it(`${what} (${fn} answers undefined) does not run on with it`, async () => {
        const worker = new Worker(`${STUBBED}
          ;(async () => {
            try {
              parentPort.postMessage({ returned: String(${call}) })
            } catch (err) {
              parentPort.postMessage({ threw: String(err && err.stack) })
            }
          })()
        `, { eval: true, workerData: { root: ROOT, fn } })
        try {
          const [out] = await within(once(worker, 'message'), 10000, 'the worker posted nothing')
          assert.ok(out.threw !== undefined, `the call returned ${out.returned} into its caller`)
          assert.match(out.threw, /because the thread is terminating\n/, `it threw something else: ${out.threw}`)
        } finally {
          await worker.terminate()
        }
      })
    }

    // The same answer to a promise request that waits in its thread's queue
    // and is sent to the core from there: the request must leave the queue
    // when the call throws (the CI's arm64 termination stress found it stay
    // first there for good, and the thread's next lock() refused with
    // EDEADLK). Stubbed as above, in a worker, on a lock the main thread holds.
    it('AsyncLock.acquire() sent to the core (gateAcquireAsync answers undefined) leaves the thread\'s queue: its next lock() times out, not EDEADLK', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const worker = new Worker(`${STUBBED}
        const lock = tl.AsyncLock.from(workerData.handle)
        const outcome = (e) => e === undefined ? 'none' : e.code || String(e.message)
        ;(async () => {
          const out = {}
          try { await lock.acquire({ timeout: 5000 }); out.acquire = 'granted' } catch (e) { out.acquire = outcome(e) }
          out.queued = req(path.join(workerData.root, 'lib', 'AsyncLock.js')).hasQueued(lock)
          try { lock.lock({ timeout: 50 }); out.lock = 'granted' } catch (e) { out.lock = outcome(e) }
          parentPort.postMessage(out)
        })()
      `, { eval: true, workerData: { root: ROOT, fn: 'gateAcquireAsync', handle: lock.handle } })
      try {
        const [out] = await within(once(worker, 'message'), 10000, 'the worker posted nothing')
        assert.match(out.acquire, /because the thread is terminating$/)
        assert.strictEqual(out.queued, false, 'the request stayed in the thread\'s queue')
        assert.strictEqual(out.lock, 'ETIMEDOUT')
      } finally {
        await worker.terminate()
        lock.unlock()
      }
    })
  })

  describe('workers that end on their own', () => {
    // Each worker holds `lock`, which the main thread waits for, has a
    // request queued for `other`, which the main thread holds, and has a
    // waitAsync pending on ta[0]. Then it ends.
    const endings = {
      'process.exit()': { code: 7, end: () => process.exit(7) },
      'an uncaught exception': {
        code: 1,
        end: () => { setImmediate(() => { throw new Error('uncaught on purpose') }) }
      },
      'a natural end': { code: 0, end: null }
    }
    for (const [name, { code, end }] of Object.entries(endings)) {
      it(`${name} with pending waits and a held lock: waiters removed, lock passed on with ownerDied`, async () => {
        const ta = sharedInt32()
        const go = sharedInt32(1)
        const lock = track(new AsyncLock())
        const other = track(new AsyncLock())
        other.lock()
        const mine = waitAsync(ta, 0, 0)
        // With a natural end, only the ref'd wait on `go` keeps the worker
        // alive; everything else it leaves pending is ref: false.
        const w = new TestWorker({
          locks: [lock, other],
          data: { ta, go },
          unref: end === null,
          init: ({ tl, locks, workerData, state }) => {
            const ref = { ref: false }
            locks[0].lock()
            state.pending = [
              tl.waitAsync(workerData.ta, 0, 0, undefined, ref).value,
              locks[1].acquire(ref)
            ]
            state.go = tl.waitAsync(workerData.go, 0, 0).value
          }
        })
        await w.ready()
        const next = lock.acquire()
        assert.strictEqual(waiterCount(ta, 0), 2)
        assert.strictEqual(other.waiting, 1)
        assert.strictEqual(lock.waiting, 1)

        if (end !== null) w.run(end).catch(() => {})
        notify(go, 0)
        assert.strictEqual(await w.join(), code)
        if (code === 1) assert.match(w.error.message, /uncaught on purpose/)

        assert.strictEqual(waiterCount(ta, 0), 1, 'the dead worker\'s waiter must leave the list')
        assert.strictEqual(other.waiting, 0, 'the dead worker\'s lock request must leave the queue')
        const release = await within(next, 5000, 'the dead worker\'s lock was not passed on')
        assert.strictEqual(release.ownerDied, true)
        assert.strictEqual(lock.ownerDied, true)
        assert.strictEqual(lock.owner, 0)
        release()
        assert.strictEqual(lock.locked, false)
        assert.strictEqual(lock.ownerDied, false)
        // A notify counts only live waiters and reaches the main thread.
        assert.strictEqual(notify(ta, 0), 1)
        assert.strictEqual(await mine.value, 'ok')
        other.unlock()
        assert.strictEqual(other.locked, false, 'the dead worker\'s request must not receive the lock')
      })
    }

    it('a lock left by a dead thread with nobody waiting is recovered by the next acquirer, flagged, whatever the method', async () => {
      const methods = ['lock-timeout', 'tryLock', 'acquire', 'acquire-nonblocking', 'runExclusive', 'worker-lock']
      const locks = methods.map(() => track(new AsyncLock()))
      const w = new TestWorker({
        locks,
        unref: true,
        init: ({ locks }) => { for (const l of locks) l.lock() }
      })
      await w.ready()
      assert.strictEqual(await w.join(), 0)
      assert.ok(locks.every((l) => l.locked && l.owner === w.threadId), 'the dead worker still appears as the owner')

      const died = {}
      const [l1, l2, l3, l4, l5, l6] = locks
      guarded('lock({ timeout }) of a dead thread\'s lock', () => l1.lock({ timeout: 1000 }))
      died['lock-timeout'] = l1.ownerDied
      l1.unlock()
      assert.strictEqual(l2.tryLock(), true)
      died.tryLock = l2.ownerDied
      l2.unlock()
      let r = await within(l3.acquire(), 5000, 'acquire() did not recover the lock')
      died.acquire = r.ownerDied && l3.ownerDied
      r()
      r = await within(l4.acquire({ blocking: false }), 5000, 'acquire({ blocking: false }) did not recover the lock')
      died['acquire-nonblocking'] = r.ownerDied && l4.ownerDied
      r()
      died.runExclusive = await l5.runExclusive(() => l5.ownerDied)
      const [other] = await started(new TestWorker({ locks: [l6] }))
      died['worker-lock'] = await other.run(({ locks }) => {
        locks[0].lock()
        const d = locks[0].ownerDied
        locks[0].unlock()
        return d
      }, undefined, 5000)
      assert.deepStrictEqual(died, Object.fromEntries(methods.map((m) => [m, true])))
      for (const l of locks) {
        assert.strictEqual(l.locked, false)
        l.lock()
        assert.strictEqual(l.ownerDied, false, 'the flag must not outlive the recovering holder')
        l.unlock()
      }
    })
  })

  describe('keep-alive', () => {
    it('a worker that only awaits a waitAsync stays alive until it is notified', async () => {
      const ta = sharedInt32()
      const w = new TestWorker({
        data: { ta },
        unref: true,
        init: ({ tl, workerData }) => {
          tl.waitAsync(workerData.ta, 0, 0).value.then((v) => {
            Atomics.store(workerData.ta, 1, v === 'ok' ? 1 : 2)
          })
        }
      })
      await w.ready()
      await sleep(300)
      assert.strictEqual(w.exitCode, undefined, 'the worker exited with a waitAsync pending')
      assert.strictEqual(waiterCount(ta, 0), 1)
      assert.strictEqual(notify(ta, 0), 1)
      assert.strictEqual(await w.join(), 0)
      assert.strictEqual(ta[1], 1, 'the worker saw the wait end with ok')
    })

    it('a worker that only awaits acquire() stays alive until it gets the lock', async () => {
      const lock = track(new AsyncLock())
      const flag = sharedInt32(1)
      lock.lock()
      const w = new TestWorker({
        locks: [lock],
        data: { flag },
        unref: true,
        init: ({ locks, workerData }) => {
          locks[0].acquire().then((release) => {
            Atomics.store(workerData.flag, 0, 1)
            release()
          })
        }
      })
      await w.ready()
      await sleep(300)
      assert.strictEqual(w.exitCode, undefined, 'the worker exited with a lock request pending')
      assert.strictEqual(lock.waiting, 1)
      lock.unlock()
      assert.strictEqual(await w.join(), 0)
      assert.strictEqual(flag[0], 1)
      assert.strictEqual(lock.locked, false)
    })

    it('waitAsync(..., { ref: false }) and acquire({ ref: false }) let the worker exit; their requests go away', async () => {
      const ta = sharedInt32()
      const lock = track(new AsyncLock())
      lock.lock()
      const w = new TestWorker({
        locks: [lock],
        data: { ta },
        unref: true,
        init: ({ tl, locks, workerData }) => {
          tl.waitAsync(workerData.ta, 0, 0, undefined, { ref: false })
          tl.waitAsync(workerData.ta, 0, 0, 60000, { ref: false })
          locks[0].acquire({ ref: false })
          locks[0].acquire({ ref: false, timeout: 60000 })
        }
      })
      await w.ready()
      assert.strictEqual(await w.join(5000), 0)
      assert.strictEqual(waiterCount(ta, 0), 0)
      assert.strictEqual(lock.waiting, 0)
      lock.unlock()
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(notify(ta, 0), 0)
    })

    it('a thread with nothing pending exits normally; a wait with a timeout keeps it alive only that long', async () => {
      const ta = sharedInt32()
      const lock = track(new AsyncLock())
      const t0 = Date.now()
      const w = new TestWorker({
        locks: [lock],
        data: { ta },
        unref: true,
        init: async ({ tl, locks, workerData }) => {
          (await locks[0].acquire())()
          const r = await tl.waitAsync(workerData.ta, 0, 0, 150).value
          Atomics.store(workerData.ta, 1, r === 'timed-out' ? 1 : 2)
        }
      })
      assert.strictEqual(await w.join(5000), 0)
      const elapsed = Date.now() - t0
      assert.ok(elapsed >= 140, `the worker exited after ${elapsed} ms, before its 150 ms wait ended`)
      assert.strictEqual(ta[1], 1)
      assert.strictEqual(waiterCount(ta, 0), 0)
    })

    it('the main thread: pending requests keep the process alive, ref: false ones do not', () => {
      // The worker holds the lock for 200 ms, and is unref'd once it holds
      // it: from then on only the main thread's own requests can keep the
      // process alive.
      const script = (ref) => `
        const { waitAsync, AsyncLock } = require(${JSON.stringify(ROOT)})
        const { Worker } = require('worker_threads')
        const ta = new Int32Array(new SharedArrayBuffer(4))
        const lock = new AsyncLock()
        const w = new Worker(\`
          const { workerData, parentPort } = require('worker_threads')
          const l = require(${JSON.stringify(ROOT)}).AsyncLock.from(workerData)
          l.lock()
          parentPort.postMessage('locked')
          setTimeout(() => l.unlock(), 200)\`, { eval: true, workerData: lock.handle })
        w.once('message', () => {
          w.unref()
          // The wait starts only now, so that a slow start of the worker
          // (a loaded machine) cannot use up its 300 ms first.
          waitAsync(ta, 0, 0, 300, { ref: ${ref} }).value.then((v) => console.log('wait', v))
          lock.acquire({ ref: ${ref} }).then((r) => { console.log('lock', r.ownerDied); r() })
        })
      `
      const run = (ref) => {
        const t0 = Date.now()
        const r = spawnSync(process.execPath, ['-e', script(ref)], { encoding: 'utf8', timeout: 20000 })
        assert.strictEqual(r.status, 0, r.stderr)
        return { out: r.stdout.trim().split('\n').sort(), ms: Date.now() - t0 }
      }
      const kept = run(true)
      assert.deepStrictEqual(kept.out, ['lock false', 'wait timed-out'])
      assert.ok(kept.ms >= 290, `the process ended after ${kept.ms} ms, before its 300 ms wait`)
      const free = run(false)
      assert.deepStrictEqual(free.out, [''])
    })
  })

  describe('teardown', () => {
    // 1,000 workers leave RSS within this many MB of where it started: +2 MB
    // or less measured on Linux x64 with Node 20, 17.6 MB once on Node 24
    // (its heap keeps more), so the bound leaves room for Node versions and
    // allocators while still catching a leak of 40 KB per worker. The
    // documentation quotes no figure.
    const RSS_GROWTH_MB = 40

    // Node's gc(), without --expose-gc on the command line, so that RSS is
    // read with the garbage of the run collected.
    function collect () {
      v8.setFlagsFromString('--expose-gc')
      vm.runInNewContext('gc')()
    }

    it('1,000 short-lived workers that load the addon and leave waits and locks behind: no leak', async function () {
      // 1,000 worker starts are CPU-bound: on two cores shared with other
      // work (or with the other mocha job) they may take minutes.
      this.timeout(300000)
      const WORKERS = 1000
      const AT_ONCE = 4
      const ta = sharedInt32()
      const lock = track(new AsyncLock())
      lock.lock()
      const mine = waitAsync(ta, 0, 0)
      const code = `
        const { workerData } = require('worker_threads')
        const tl = require(${JSON.stringify(ROOT)})
        const own = new tl.AsyncLock()
        own.lock()
        tl.waitAsync(workerData.ta, 0, 0, undefined, { ref: false })
        tl.AsyncLock.from(workerData.lock).acquire({ ref: false })
      `
      const one = () => new Promise((resolve, reject) => {
        const w = new Worker(code, { eval: true, workerData: { ta, lock: lock.handle } })
        w.on('error', reject)
        w.on('exit', resolve)
      })
      const batch = async (n) => {
        for (let i = 0; i < n; i += AT_ONCE) {
          const codes = await within(Promise.all(Array.from({ length: Math.min(AT_ONCE, n - i) }, one)),
            20000, `short-lived workers ${i}.. did not exit`)
          assert.ok(codes.every((c) => c === 0), `exit codes ${codes}`)
        }
      }
      const total0 = binding.totalWaiters()
      await batch(50) // warm up the allocator before the first reading
      collect()
      const rss0 = process.memoryUsage().rss
      await batch(WORKERS - 50)
      collect()
      const rss1 = process.memoryUsage().rss
      const grownMb = (rss1 - rss0) / 2 ** 20
      console.log(`      RSS ${(rss0 / 2 ** 20).toFixed(1)} MB -> ${(rss1 / 2 ** 20).toFixed(1)} MB ` +
        `(${grownMb >= 0 ? '+' : ''}${grownMb.toFixed(1)} MB) over ${WORKERS - 50} workers`)
      assert.ok(grownMb < RSS_GROWTH_MB, `RSS grew by ${grownMb.toFixed(1)} MB, more than the bound of ${RSS_GROWTH_MB} MB`)
      assert.strictEqual(waiterCount(ta, 0), 1, 'only the main thread\'s waiter may remain')
      assert.strictEqual(lock.waiting, 0)
      assert.strictEqual(binding.totalWaiters(), total0)
      assert.strictEqual(notify(ta, 0), 1)
      assert.strictEqual(await mine.value, 'ok')
      lock.unlock()
      assert.strictEqual(lock.locked, false)
    })
  })
})
