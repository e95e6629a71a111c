'use strict'

// Every method that takes options refuses the ones it does not know, as the
// constructors do (docs/api.md, "Common rules"): a misspelt option
// (`acquire({ timout: 10 })`) is a TypeError that names the method and the
// option, not a request that silently waits without a timeout. Promise
// forms reject, blocking forms throw, and nothing changes before: a lock is
// not taken, a permit not counted, an arrival not made.
// locks.request follows the Web Locks specification instead: a dictionary
// ignores members it does not define.

const assert = require('assert')
const tl = require('..')
const { AsyncLock, Semaphore, RWLock, ConditionVariable, Barrier, CountDownLatch } = tl

// Each row: [method as the message names it, the state before, the call
// with an unknown option, the state after (must equal the one before), the
// options the method knows]. The calls would return at once if the unknown
// option were ignored, so a missing check fails the test instead of hanging
// it. Each test calls rows() for fresh primitives.
function rows () {
  const lock = new AsyncLock()
  const sem = new Semaphore(2)
  const rw = new RWLock()
  const cv = new ConditionVariable()
  const held = new AsyncLock()
  const barrier = new Barrier(1)
  const latch = new CountDownLatch(0)
  const ta = new Int32Array(new SharedArrayBuffer(4))
  const cb = () => 'ran'
  const lockState = () => [lock.locked, lock.waiting]
  const semState = () => [sem.value, sem.waiting]
  const rwState = () => [rw.readers, rw.writer, rw.waiting]
  return [
    ['AsyncLock.lock', lockState, () => lock.lock({ timout: 10 }), 'timeout'],
    ['AsyncLock.acquire', lockState, () => lock.acquire({ timout: 10 }), 'blocking, timeout, signal, ref'],
    ['AsyncLock.runExclusive', lockState, () => lock.runExclusive(cb, { timout: 10 }), 'blocking, timeout, signal, ref'],
    ['Semaphore.acquireSync', semState, () => sem.acquireSync(1, { timout: 10 }), 'timeout'],
    ['Semaphore.acquire', semState, () => sem.acquire(1, { timout: 10 }), 'blocking, timeout, signal, ref'],
    ['Semaphore.runExclusive', semState, () => sem.runExclusive(cb, { timout: 10 }), 'permits, blocking, timeout, signal, ref'],
    ['RWLock.acquireReadSync', rwState, () => rw.acquireReadSync({ timout: 10 }), 'timeout'],
    ['RWLock.acquireWriteSync', rwState, () => rw.acquireWriteSync({ timout: 10 }), 'timeout'],
    ['RWLock.acquireRead', rwState, () => rw.acquireRead({ timout: 10 }), 'blocking, timeout, signal, ref'],
    ['RWLock.acquireWrite', rwState, () => rw.acquireWrite({ timout: 10 }), 'blocking, timeout, signal, ref'],
    ['RWLock.runRead', rwState, () => rw.runRead(cb, { timout: 10 }), 'blocking, timeout, signal, ref'],
    ['RWLock.runWrite', rwState, () => rw.runWrite(cb, { timout: 10 }), 'blocking, timeout, signal, ref'],
    // The condition variable's waits would time out after 10 ms.
    ['ConditionVariable.waitSync', () => [held.owner, cv.waiting], () => { held.lock(); try { return cv.waitSync(held, { timout: 10, timeout: 10 }) } finally { held.unlock() } }, 'timeout'],
    ['ConditionVariable.wait', () => [held.owner, cv.waiting], () => { held.lock(); return cv.wait(held, { timout: 10, timeout: 10 }).finally(() => held.unlock()) }, 'timeout, signal, ref'],
    ['Barrier.arriveAndWaitSync', () => [barrier.phase, barrier.arrived], () => barrier.arriveAndWaitSync({ timout: 10 }), 'timeout'],
    ['Barrier.arriveAndWait', () => [barrier.phase, barrier.arrived], () => barrier.arriveAndWait({ timout: 10 }), 'timeout, signal, ref'],
    ['CountDownLatch.waitSync', () => [latch.count], () => latch.waitSync({ timout: 10 }), 'timeout'],
    ['CountDownLatch.wait', () => [latch.count], () => latch.wait({ timout: 10 }), 'timeout, signal, ref'],
    ['waitAsync', () => [tl.waiterCount(ta, 0)], () => tl.waitAsync(ta, 0, 1, 10, { timout: 10 }), 'ref']
  ]
}

// What a call did: { threw } or { rejected } with the error, or { value }.
async function outcome (call) {
  let r
  try {
    r = call()
  } catch (err) {
    return { threw: err }
  }
  if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
    try {
      return { value: await r }
    } catch (err) {
      return { rejected: err }
    }
  }
  return { value: r }
}

describe('methods refuse unknown options', () => {
  for (const [k, [where,,, known]] of rows().entries()) {
    it(`${where} refuses { timout: 10 }, naming itself and the option, before anything changes`, async () => {
      const [, state, call] = rows()[k]
      const before = state()
      const o = await outcome(call)
      const promiseForm = !/Sync$|^AsyncLock\.lock$|^waitAsync$/.test(where)
      const err = promiseForm ? o.rejected : o.threw
      assert.ok(err, `${where} accepted the misspelt option: ${JSON.stringify(o)}`)
      assert.strictEqual(err.constructor, TypeError)
      assert.strictEqual(err.message, `${where}: unknown option 'timout' (known: ${known})`)
      assert.deepStrictEqual(state(), before)
    })
  }

  it('a promise form rejects, never throws, for an unknown option', () => {
    const lock = new AsyncLock()
    const p = lock.acquire({ timout: 10 })
    assert.ok(p instanceof Promise)
    return assert.rejects(p, TypeError)
  })

  it('waits that cannot be non-blocking refuse `blocking` as an unknown option', async () => {
    const cv = new ConditionVariable()
    const lock = new AsyncLock()
    await lock.acquire()
    await assert.rejects(cv.wait(lock, { blocking: false }),
      { name: 'TypeError', message: "ConditionVariable.wait: unknown option 'blocking' (known: timeout, signal, ref)" })
    lock.unlock()
    await assert.rejects(new CountDownLatch(1).wait({ blocking: false }),
      { name: 'TypeError', message: "CountDownLatch.wait: unknown option 'blocking' (known: timeout, signal, ref)" })
  })

  it('the known options are still taken (a timeout runs out, blocking: false fails at once)', async () => {
    const lock = new AsyncLock()
    lock.lock()
    await assert.rejects(lock.acquire({ timeout: 5 }), { code: 'ETIMEDOUT' })
    await assert.rejects(lock.acquire({ blocking: false, signal: new AbortController().signal, ref: true }), { code: 'EBUSY' })
    lock.unlock()
  })

  it('a promise request sent to the core names its own timeout when it runs out, not the time it had left when sent', async () => {
    // Another thread holds the lock: the worker's request goes to the core
    // at once, with what is left of its 200 ms (a fraction less).
    const lock = new AsyncLock()
    lock.lock()
    const { Worker } = require('worker_threads')
    const w = new Worker(`const { AsyncLock } = require(${JSON.stringify(require('path').join(__dirname, '..'))})
      const { workerData, parentPort } = require('worker_threads')
      AsyncLock.from(workerData).acquire({ timeout: 200 }).then(() => parentPort.postMessage('granted'), (e) => parentPort.postMessage(e.code + ': ' + e.message))`,
    { eval: true, workerData: lock.handle })
    try {
      const [said] = await require('events').once(w, 'message')
      assert.strictEqual(said, 'ETIMEDOUT: AsyncLock.acquire: not acquired within 200 ms')
    } finally {
      lock.unlock()
      await w.terminate()
    }
  })

  it('locks.request follows Web Locks: an unknown member is ignored', async () => {
    const r = await tl.locks.request('method-options-unknown', { timout: 10 }, (l) => l.mode)
    assert.strictEqual(r, 'exclusive')
  })
})

// Semaphore takes its count inside the options object too, as
// runExclusive(cb, { permits }) always did (issue 27, item 2).
describe('Semaphore: the count inside the options object', () => {
  it('acquire({ permits, timeout }) takes that many permits and times out with that timeout', async () => {
    const sem = new Semaphore(3)
    const release = await sem.acquire({ permits: 2, timeout: 50 })
    assert.strictEqual(sem.value, 1)
    await assert.rejects(sem.acquire({ permits: 2, timeout: 5 }),
      { code: 'ETIMEDOUT', message: 'Semaphore.acquire: not acquired within 5 ms' })
    release()
    assert.strictEqual(sem.value, 3)
  })

  it('acquire({ timeout, signal, ref, blocking }) without permits takes one', async () => {
    const sem = new Semaphore(1)
    const release = await sem.acquire({ timeout: 50, signal: new AbortController().signal, ref: false })
    assert.strictEqual(sem.value, 0)
    await assert.rejects(sem.acquire({ blocking: false }), { code: 'EBUSY' })
    release()
    assert.strictEqual(sem.value, 1)
  })

  it('acquireSync({ permits, timeout }) and tryAcquire({ permits })', () => {
    const sem = new Semaphore(3)
    sem.acquireSync({ permits: 2, timeout: 50 })
    assert.strictEqual(sem.value, 1)
    assert.throws(() => sem.acquireSync({ permits: 2, timeout: 1 }), { code: 'ETIMEDOUT' })
    assert.strictEqual(sem.tryAcquire({ permits: 2 }), false)
    assert.strictEqual(sem.tryAcquire({ permits: 1 }), true)
    assert.strictEqual(sem.value, 0)
    sem.release(3)
  })

  it('refuses a bad count, an unknown key, and options after the options object, changing nothing', async () => {
    const sem = new Semaphore(3)
    await assert.rejects(sem.acquire({ permits: 0 }), { name: 'RangeError', message: /^Semaphore\.acquire: permits must be an integer from 1/ })
    await assert.rejects(sem.acquire({ permit: 2 }), { name: 'TypeError', message: "Semaphore.acquire: unknown option 'permit' (known: permits, blocking, timeout, signal, ref)" })
    await assert.rejects(sem.acquire({ permits: 2 }, {}), { name: 'TypeError', message: /^Semaphore\.acquire: an options object must be the last argument/ })
    await assert.rejects(sem.acquire(2, { permits: 2 }), { name: 'TypeError', message: "Semaphore.acquire: unknown option 'permits' (known: blocking, timeout, signal, ref)" })
    assert.throws(() => sem.acquireSync({ permits: '2' }), { name: 'TypeError', message: /^Semaphore\.acquireSync: permits must be an integer/ })
    assert.throws(() => sem.tryAcquire({ permits: 1, timeout: 1 }), { name: 'TypeError', message: "Semaphore.tryAcquire: unknown option 'timeout' (known: permits)" })
    assert.strictEqual(sem.value, 3)
  })
})
