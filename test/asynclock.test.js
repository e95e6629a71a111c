'use strict'

// AsyncLock within one thread: construction, the sync and promise APIs,
// FIFO order, the demos of the article "JavaScriptでロックを実装する",
// timeouts, AbortSignal, and ownership errors. Behaviour across threads is in
// asynclock-threads.test.js.

const assert = require('assert')
const { threadId } = require('worker_threads')
const timersPromises = require('timers/promises')
const { AsyncLock, LockError, AbortError } = require('..')
const { cleanup, track, mainGuard, guarded, within, sleep, thrown, rejection, assertCode } = require('./fixtures/threads')

const seq = Array.from({ length: 10 }, (_, i) => i + 1)

describe('AsyncLock (one thread)', () => {
  before(mainGuard)
  afterEach(cleanup)

  describe('construction', () => {
    it('allocates its own 4-byte SharedArrayBuffer by default', () => {
      const lock = track(new AsyncLock())
      assert.ok(lock.buffer instanceof SharedArrayBuffer)
      assert.strictEqual(lock.buffer.byteLength, 4)
      assert.strictEqual(lock.byteOffset, 0)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.owner, null)
      assert.strictEqual(lock.waiting, 0)
      assert.notStrictEqual(new AsyncLock().buffer, lock.buffer)
    })

    it('uses one Int32 slot of a given buffer, so many locks share one buffer', () => {
      const sab = new SharedArrayBuffer(16)
      const words = new Int32Array(sab)
      const locks = [0, 4, 8, 12].map((offset) => track(new AsyncLock(sab, offset)))
      locks[2].lock()
      assert.deepStrictEqual(locks.map((l) => l.locked), [false, false, true, false])
      assert.deepStrictEqual([...words].map((w) => w !== 0), [false, false, true, false])
      // The word records the owner: its thread id (plus one, so 0 means free).
      assert.strictEqual(words[2] & 0x1fffffff, threadId + 1)
      assert.strictEqual(locks[2].owner, threadId)
      assert.strictEqual(locks[1].tryLock(), true)
      locks[2].unlock()
      assert.deepStrictEqual(locks.map((l) => l.locked), [false, true, false, false])
      locks[1].unlock()
      assert.deepStrictEqual([...words], [0, 0, 0, 0])
    })

    it('describes itself by a handle that AsyncLock.from reopens as the same lock', () => {
      const sab = new SharedArrayBuffer(8)
      const lock = track(new AsyncLock(sab, 4))
      const handle = lock.handle
      assert.deepStrictEqual(Object.keys(handle).sort(), ['buffer', 'byteOffset', 'fifo', 'type'])
      assert.strictEqual(handle.buffer, sab)
      assert.strictEqual(handle.byteOffset, 4)
      assert.strictEqual(handle.fifo, false)
      // The handle survives structured cloning, as in postMessage.
      const copy = AsyncLock.from(structuredClone(handle))
      lock.lock()
      assert.strictEqual(copy.locked, true)
      assert.strictEqual(copy.owner, threadId)
      copy.unlock()
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(AsyncLock.from({ buffer: sab }).byteOffset, 0)
    })
  })

  describe('lock / tryLock / unlock', () => {
    it('lock() takes a free lock and unlock() frees it', () => {
      const lock = track(new AsyncLock())
      lock.lock()
      assert.strictEqual(lock.locked, true)
      assert.strictEqual(lock.owner, threadId)
      assert.strictEqual(lock.ownerDied, false)
      lock.unlock()
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.owner, null)
    })

    it('tryLock() takes a free lock and refuses a held one, even to its holder', () => {
      const lock = track(new AsyncLock())
      assert.strictEqual(lock.tryLock(), true)
      assert.strictEqual(lock.tryLock(), false)
      assert.strictEqual(lock.owner, threadId)
      lock.unlock()
      assert.strictEqual(lock.locked, false)
    })

    it('unlock() of a lock that is not held throws ENOTOWNER and changes nothing', () => {
      const lock = track(new AsyncLock())
      const err = thrown(() => lock.unlock())
      assertCode(err, 'ENOTOWNER')
      assert.match(err.message, /not held/)
      assert.strictEqual(lock.locked, false)
      lock.lock()
      lock.unlock()
      assertCode(thrown(() => lock.unlock()), 'ENOTOWNER')
    })

    it('a blocking lock() by the holder throws EDEADLK instead of hanging; the lock stays held', () => {
      const lock = track(new AsyncLock())
      lock.lock()
      assertCode(thrown(() => guarded('lock() by the holder', () => lock.lock())), 'EDEADLK')
      assertCode(thrown(() => lock.lock({ timeout: 10 })), 'EDEADLK')
      assert.strictEqual(lock.owner, threadId)
      assert.strictEqual(lock.waiting, 0)
      lock.unlock()
      assert.strictEqual(lock.locked, false)
    })

    it('lock({ timeout }) on a free lock takes it at once', () => {
      const lock = track(new AsyncLock())
      lock.lock({ timeout: 0 })
      assert.strictEqual(lock.owner, threadId)
      lock.unlock()
      lock.lock({ timeout: Infinity })
      lock.unlock()
    })
  })

  describe('acquire', () => {
    it('resolves with a release function that is harmless to call twice', async () => {
      const lock = track(new AsyncLock())
      const release = await lock.acquire()
      assert.strictEqual(typeof release, 'function')
      assert.strictEqual(release.ownerDied, false)
      assert.strictEqual(lock.locked, true)
      assert.strictEqual(lock.owner, threadId)
      release()
      assert.strictEqual(lock.locked, false)
      release()
      assert.strictEqual(lock.locked, false)
      // A stale release must not free a later acquisition.
      const again = await lock.acquire()
      release()
      assert.strictEqual(lock.locked, true)
      again()
      assert.strictEqual(lock.locked, false)
    })

    it('the release function has [Symbol.dispose]', async () => {
      const lock = track(new AsyncLock())
      const release = await lock.acquire()
      assert.strictEqual(typeof release[Symbol.dispose], 'function')
      release[Symbol.dispose]()
      assert.strictEqual(lock.locked, false)
      release()
      assert.strictEqual(lock.locked, false)
    })

    it('grants queued requests of one thread in FIFO order, whatever their options', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const order = []
      const ac = new AbortController()
      const options = [undefined, { timeout: 10000 }, { signal: ac.signal }, {}, { timeout: 5000, signal: ac.signal }]
      const done = options.map((o, i) => lock.acquire(o).then(async (release) => {
        order.push(i + 1)
        await sleep(Math.random() * 5)
        release()
      }))
      assert.strictEqual(lock.waiting, 5)
      await sleep(20)
      assert.deepStrictEqual(order, [], 'nothing may be granted while the lock is held')
      lock.unlock()
      await within(Promise.all(done), 5000, 'queued acquires were not all granted')
      assert.deepStrictEqual(order, [1, 2, 3, 4, 5])
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.waiting, 0)
    })

    it('blocking: false resolves on a free lock and rejects EBUSY on a held one', async () => {
      const lock = track(new AsyncLock())
      const release = await lock.acquire({ blocking: false })
      const err = await rejection(lock.acquire({ blocking: false }))
      assertCode(err, 'EBUSY')
      assert.strictEqual(lock.waiting, 0)
      release()
      assert.strictEqual(lock.locked, false)
    })

    it('timeout: rejects ETIMEDOUT no earlier than the timeout, removes the waiter, and never takes the lock', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const t0 = Date.now()
      const p = lock.acquire({ timeout: 50 })
      assert.strictEqual(lock.waiting, 1)
      const err = await rejection(p, 5000)
      const elapsed = Date.now() - t0
      assertCode(err, 'ETIMEDOUT')
      assert.ok(elapsed >= 45, `timed out after ${elapsed} ms, before the 50 ms timeout`)
      assert.strictEqual(lock.waiting, 0)
      assert.strictEqual(lock.owner, threadId)
      lock.unlock()
      assert.strictEqual(lock.locked, false, 'the timed-out request must not receive the lock')
      assertCode(await rejection((async () => {
        lock.lock()
        try {
          return await lock.acquire({ timeout: 0 })
        } finally {
          lock.unlock()
        }
      })()), 'ETIMEDOUT')
    })

    it('a timed-out request leaves its place to the next one', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const first = lock.acquire({ timeout: 30 })
      const second = lock.acquire()
      assertCode(await rejection(first), 'ETIMEDOUT')
      assert.strictEqual(lock.waiting, 1)
      lock.unlock()
      const release = await within(second, 5000, 'the request behind a timed-out one was not granted')
      release()
      assert.strictEqual(lock.locked, false)
    })
  })

  it('LockError.codes holds exactly the codes a lock operation throws', () => {
    assert.deepStrictEqual(Object.keys(LockError.codes), ['ETIMEDOUT', 'ENOTOWNER', 'EDEADLK', 'EBUSY'])
    assert.ok(Object.isFrozen(LockError.codes))
  })

  describe('AbortSignal', () => {
    it('rejects like Node\'s own APIs: an AbortError whose cause is signal.reason', async () => {
      const reason = new Error('stop')
      const nodeAc = new AbortController()
      const nodeP = timersPromises.setTimeout(10000, null, { signal: nodeAc.signal })
      nodeAc.abort(reason)
      const nodeErr = await rejection(nodeP)

      const lock = track(new AsyncLock())
      lock.lock()
      const ac = new AbortController()
      const p = lock.acquire({ signal: ac.signal })
      assert.strictEqual(lock.waiting, 1)
      ac.abort(reason)
      const err = await rejection(p)
      assert.ok(err instanceof AbortError)
      assert.ok(err instanceof Error)
      assert.strictEqual(err.name, nodeErr.name)
      assert.strictEqual(err.code, nodeErr.code)
      assert.strictEqual(err.message, nodeErr.message)
      assert.strictEqual(err.cause, reason)
      assert.strictEqual(lock.waiting, 0, 'an aborted request must leave the queue')
      lock.unlock()
      assert.strictEqual(lock.locked, false)
    })

    it('an already aborted signal rejects at once and queues nothing', async () => {
      const lock = track(new AsyncLock())
      const signal = AbortSignal.abort('why')
      const err = await rejection(lock.acquire({ signal }))
      assert.strictEqual(err.name, 'AbortError')
      assert.strictEqual(err.cause, 'why')
      assert.strictEqual(lock.locked, false)
      let called = false
      const err2 = await rejection(lock.runExclusive(() => { called = true }, { signal }))
      assert.strictEqual(err2.name, 'AbortError')
      assert.strictEqual(called, false)
      assert.strictEqual(lock.locked, false)
    })

    it('an aborted request leaves its place to the next one', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const ac = new AbortController()
      const order = []
      const a = lock.acquire().then((r) => { order.push('a'); r() })
      const b = lock.acquire({ signal: ac.signal }).then(() => order.push('b'), (e) => e)
      const c = lock.acquire().then((r) => { order.push('c'); r() })
      assert.strictEqual(lock.waiting, 3)
      ac.abort()
      assert.strictEqual(lock.waiting, 2)
      lock.unlock()
      await within(Promise.all([a, c]), 5000, 'requests around an aborted one were not granted')
      assert.strictEqual((await b).name, 'AbortError')
      assert.deepStrictEqual(order, ['a', 'c'])
      assert.strictEqual(lock.locked, false)
    })

    it('an abort after the lock was granted is ignored: the request resolves', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const ac = new AbortController()
      const p = lock.acquire({ signal: ac.signal })
      lock.unlock() // hands the lock to the queued request at once
      ac.abort()
      const release = await within(p, 5000, 'the granted request did not resolve')
      assert.strictEqual(lock.owner, threadId)
      release()
      assert.strictEqual(lock.locked, false)
    })

    it('AbortSignal.timeout() aborts a long wait', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      const err = await rejection(lock.runExclusive(() => assert.fail('must not run'),
        { signal: AbortSignal.timeout(30) }))
      assert.strictEqual(err.name, 'AbortError')
      assert.strictEqual(err.cause && err.cause.name, 'TimeoutError')
      assert.strictEqual(lock.waiting, 0)
      lock.unlock()
    })
  })

  describe('runExclusive and executeLocked', () => {
    it('runExclusive resolves with the callback\'s result, sync or async, and releases', async () => {
      const lock = track(new AsyncLock())
      assert.strictEqual(await lock.runExclusive(() => {
        assert.strictEqual(lock.owner, threadId)
        return 42
      }), 42)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await lock.runExclusive(async () => {
        await sleep(5)
        assert.strictEqual(lock.locked, true)
        return 'x'
      }, { blocking: true, timeout: 500 }), 'x')
      assert.strictEqual(lock.locked, false)
    })

    it('a throwing or rejecting callback rejects with its error and releases the lock', async () => {
      const lock = track(new AsyncLock())
      const boom = new Error('boom')
      assert.strictEqual(await rejection(lock.runExclusive(() => { throw boom })), boom)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await rejection(lock.runExclusive(async () => { await sleep(1); throw boom })), boom)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await rejection(lock.executeLocked(() => { throw boom })), boom)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await rejection(lock.executeLocked(() => Promise.reject(boom))), boom)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await lock.runExclusive(() => 'still usable'), 'still usable')
    })

    it('executeLocked waits without blocking the thread, then runs f', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      let ran = false
      const p = lock.executeLocked(() => { ran = true; return lock.owner })
      const tick = await timersPromises.setTimeout(20, 'loop alive')
      assert.strictEqual(tick, 'loop alive')
      assert.strictEqual(ran, false)
      assert.strictEqual(lock.waiting, 1)
      lock.unlock()
      assert.strictEqual(await within(p, 5000, 'executeLocked never ran'), threadId)
      assert.strictEqual(ran, true)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(await lock.executeLocked(async () => { await sleep(2); return 7 }), 7)
    })

    it('runExclusive with a timeout rejects ETIMEDOUT without running the callback', async () => {
      const lock = track(new AsyncLock())
      lock.lock()
      let ran = false
      assertCode(await rejection(lock.runExclusive(() => { ran = true }, { timeout: 20 })), 'ETIMEDOUT')
      assertCode(await rejection(lock.runExclusive(() => { ran = true }, { blocking: false })), 'EBUSY')
      assert.strictEqual(ran, false)
      lock.unlock()
    })
  })

  // The demos of "JavaScriptでロックを実装する": ten calls issued in a loop,
  // each pushing its number after a random delay of up to 100 ms.
  describe('the article\'s demos', () => {
    function push (a, x, ms = Math.random() * 100) {
      return sleep(ms).then(() => a.push(x))
    }

    it('runExclusive keeps the calls in order: [1..10]', async () => {
      const lock = track(new AsyncLock())
      const b = []
      await within(Promise.all(seq.map((x) => lock.runExclusive(async () => await push(b, x)))),
        5000, 'the ten calls did not finish')
      assert.deepStrictEqual(b, seq)
      assert.strictEqual(lock.locked, false)
    })

    it('blocking: false runs only the first; the nine others reject EBUSY', async () => {
      const lock = track(new AsyncLock())
      const a = []
      const results = await Promise.allSettled(seq.map((x) =>
        lock.runExclusive(async () => await push(a, x), { blocking: false })))
      assert.deepStrictEqual(a, [1])
      assert.strictEqual(results[0].status, 'fulfilled')
      for (const r of results.slice(1)) {
        assert.strictEqual(r.status, 'rejected')
        assertCode(r.reason, 'EBUSY')
      }
      assert.strictEqual(lock.locked, false)
    })

    it('timeout: 200 completes the calls whose turn comes in time, in order; the rest reject ETIMEDOUT', async () => {
      // Random delays, drawn again while a call's turn would come within
      // 40 ms of the deadline, so that the expected outcome is certain.
      let delays, expected
      for (;;) {
        delays = seq.map(() => Math.random() * 100)
        let start = 0
        expected = []
        let clear = true
        for (let i = 0; i < 10; i++) {
          if (Math.abs(start - 200) < 40) clear = false
          if (start < 200) expected.push(i + 1)
          start += delays[i]
        }
        if (clear && expected.length < 10) break
      }
      const lock = track(new AsyncLock())
      const b = []
      const results = await within(Promise.allSettled(seq.map((x, i) =>
        lock.runExclusive(async () => await push(b, x, delays[i]), { timeout: 200 }))),
      5000, 'the ten calls did not settle')
      assert.deepStrictEqual(b, expected, `delays ${delays.map(Math.round)}`)
      results.forEach((r, i) => {
        if (i < expected.length) {
          assert.strictEqual(r.status, 'fulfilled')
        } else {
          assert.strictEqual(r.status, 'rejected')
          assertCode(r.reason, 'ETIMEDOUT')
        }
      })
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.waiting, 0)
    })
  })
})
