'use strict'

// Every message starts with the method the user called (docs/api.md,
// "Naming"): `Class.method:`, `Class:` for a constructor, `function:` for
// wait / notify / waitAsync / waiterCount. The wrappers that take a lock
// for a callback (run…, executeLocked) name themselves, not the acquire
// they call. The test walks every public method of every primitive, found
// by reflection, so that a method added without a row here fails it.

const assert = require('assert')
const tl = require('..')
const { AsyncLock, Semaphore, RWLock, ConditionVariable, Barrier, CountDownLatch, LockManager, locks } = tl

const cb = () => 'ran'

// Bad calls per public method, each [label, (fresh objects) => call]. A
// method listed in NO_INPUT takes no argument and cannot fail.
const BAD = {
  AsyncLock: {
    constructor: [['a number for the buffer', () => new AsyncLock(5)]],
    from: [['a posted lock', () => AsyncLock.from({})]],
    lock: [['options a number', ({ lock }) => lock.lock(5)]],
    unlock: [['not held', ({ lock }) => lock.unlock()]],
    acquire: [['options a number', ({ lock }) => lock.acquire(5)]],
    runExclusive: [
      ['options a number', ({ lock }) => lock.runExclusive(cb, 5)],
      ['callback a number', ({ lock }) => lock.runExclusive(5)],
      ['timed out', ({ lock }) => { lock.lock(); return lock.runExclusive(cb, { timeout: 0 }) }],
      ['not available', ({ lock }) => { lock.lock(); return lock.runExclusive(cb, { blocking: false }) }]
    ],
    executeLocked: [['callback a number', ({ lock }) => lock.executeLocked(5)]]
  },
  Semaphore: {
    constructor: [['permits a string', () => new Semaphore('2')]],
    from: [['a number', () => Semaphore.from(5)]],
    tryAcquire: [['permits a string', ({ sem }) => sem.tryAcquire('1')]],
    acquireSync: [['permits a string', ({ sem }) => sem.acquireSync('1')], ['options a number', ({ sem }) => sem.acquireSync(1, 5)]],
    acquire: [['permits 0', ({ sem }) => sem.acquire(0)], ['options a number', ({ sem }) => sem.acquire(1, 5)]],
    release: [['permits a string', ({ sem }) => sem.release('1')]],
    runExclusive: [
      ['options a number', ({ sem }) => sem.runExclusive(cb, 5)],
      ['permits 0', ({ sem }) => sem.runExclusive(cb, { permits: 0 })],
      ['callback a number', ({ sem }) => sem.runExclusive(5)],
      ['timed out', ({ sem }) => sem.runExclusive(cb, { permits: 3, timeout: 0 })],
      ['not available', ({ sem }) => sem.runExclusive(cb, { permits: 3, blocking: false })]
    ]
  },
  RWLock: {
    constructor: [['a string for the buffer', () => new RWLock('buffer')]],
    from: [['a number', () => RWLock.from(5)]],
    acquireReadSync: [['options a number', ({ rw }) => rw.acquireReadSync(5)]],
    acquireWriteSync: [['options a number', ({ rw }) => rw.acquireWriteSync(5)]],
    releaseRead: [['not held', ({ rw }) => rw.releaseRead()]],
    releaseWrite: [['not held', ({ rw }) => rw.releaseWrite()]],
    acquireRead: [['options a number', ({ rw }) => rw.acquireRead(5)]],
    acquireWrite: [['options a number', ({ rw }) => rw.acquireWrite(5)]],
    runRead: [
      ['options a number', ({ rw }) => rw.runRead(cb, 5)],
      ['callback a number', ({ rw }) => rw.runRead(5)],
      ['not available', ({ rw }) => { rw.acquireWriteSync(); return rw.runRead(cb, { blocking: false }) }],
      ['timed out', ({ rw }) => { rw.acquireWriteSync(); return rw.runRead(cb, { timeout: 0 }) }]
    ],
    runWrite: [
      ['options a number', ({ rw }) => rw.runWrite(cb, 5)],
      ['callback a number', ({ rw }) => rw.runWrite(5)],
      ['not available', ({ rw }) => { rw.acquireReadSync(); return rw.runWrite(cb, { blocking: false }) }],
      ['timed out', ({ rw }) => { rw.acquireReadSync(); return rw.runWrite(cb, { timeout: 0 }) }]
    ]
  },
  ConditionVariable: {
    constructor: [['a number for the buffer', () => new ConditionVariable(5)]],
    from: [['a number', () => ConditionVariable.from(5)]],
    waitSync: [['no lock', ({ cv }) => cv.waitSync(5)], ['a lock not held', ({ cv, lock }) => cv.waitSync(lock)]],
    wait: [['no lock', ({ cv }) => cv.wait(5)], ['a lock not held', ({ cv, lock }) => cv.wait(lock)]]
  },
  Barrier: {
    constructor: [['parties 0', () => new Barrier(0)]],
    from: [['a number', () => Barrier.from(5)]],
    arriveAndWaitSync: [['options a number', ({ barrier }) => barrier.arriveAndWaitSync(5)]],
    arriveAndWait: [['options a number', ({ barrier }) => barrier.arriveAndWait(5)]]
  },
  CountDownLatch: {
    constructor: [['count -1', () => new CountDownLatch(-1)]],
    from: [['a number', () => CountDownLatch.from(5)]],
    countDown: [['k a string', ({ latch }) => latch.countDown('1')]],
    waitSync: [['options a number', ({ latch }) => latch.waitSync(5)]],
    wait: [['options a number', ({ latch }) => latch.wait(5)]]
  },
  LockManager: {
    request: [['options a number', () => locks.request('messages', 5, cb)], ['no callback', () => locks.request('messages')]]
  }
}

const NO_INPUT = {
  AsyncLock: ['tryLock'],
  RWLock: ['tryAcquireRead', 'tryAcquireWrite'],
  ConditionVariable: ['notifyOne', 'notifyAll'],
  LockManager: ['query']
}

const FUNCTIONS = {
  wait: () => tl.wait('x', 0, 0),
  notify: () => tl.notify('x', 0),
  waitAsync: () => tl.waitAsync('x', 0, 0),
  waiterCount: () => tl.waiterCount('x', 0)
}

const CLASSES = { AsyncLock, Semaphore, RWLock, ConditionVariable, Barrier, CountDownLatch, LockManager }

function fresh () {
  return {
    lock: new AsyncLock(),
    sem: new Semaphore(2),
    rw: new RWLock(),
    cv: new ConditionVariable(),
    barrier: new Barrier(2),
    latch: new CountDownLatch(1)
  }
}

// The error of a call that throws or returns a promise that rejects.
async function failure (call) {
  let r
  try {
    r = call()
  } catch (err) {
    return err
  }
  if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
    try {
      await r
    } catch (err) {
      return err
    }
  }
  assert.fail(`succeeded (${String(r)})`)
}

// Releases what a row left held, so that no row leaks into the next.
function cleanupObjects (o) {
  while (o.lock.owner !== null) o.lock.unlock()
  if (o.rw.writer !== null) o.rw.releaseWrite()
  while (o.rw.readers > 0) o.rw.releaseRead()
}

describe('every message starts with the method the user called', () => {
  it('the table has a row for every public method, found by reflection', () => {
    for (const [name, C] of Object.entries(CLASSES)) {
      const methods = Object.getOwnPropertyNames(C.prototype)
        .filter((k) => k !== 'constructor' && typeof Object.getOwnPropertyDescriptor(C.prototype, k).value === 'function')
      const listed = Object.keys(BAD[name]).filter((k) => k !== 'constructor' && k !== 'from')
      assert.deepStrictEqual([...listed, ...(NO_INPUT[name] || [])].sort(), methods.sort(), name)
      if (name !== 'LockManager') assert.ok(BAD[name].constructor && BAD[name].from, name)
    }
    const fns = Object.keys(tl).filter((k) => typeof tl[k] === 'function' && !/^[A-Z]/.test(k))
    assert.deepStrictEqual(fns.sort(), Object.keys(FUNCTIONS).sort())
  })

  for (const [name, methods] of Object.entries(BAD)) {
    for (const [method, calls] of Object.entries(methods)) {
      const prefix = method === 'constructor' ? `${name}: ` : `${name}.${method}: `
      for (const [label, call] of calls) {
        it(`${prefix.trim()} (${label})`, async () => {
          const objects = fresh()
          try {
            const err = await failure(() => call(objects))
            assert.ok(err.message.startsWith(prefix), `${err.message} does not start with ${prefix}`)
          } finally {
            cleanupObjects(objects)
          }
        })
      }
    }
  }

  for (const [fn, call] of Object.entries(FUNCTIONS)) {
    it(`${fn}: (a string for the typed array)`, async () => {
      const err = await failure(call)
      assert.ok(err.message.startsWith(`${fn}: `), err.message)
    })
  }

  it('LockManager is the class of threadlock.locks', () => {
    assert.ok(locks instanceof LockManager)
  })
})

// A primitive posted itself instead of its handle arrives as an empty
// object (its state is private); from() says what to post (issue 27, item 6).
describe('from() of a primitive posted instead of its handle', () => {
  const { MessageChannel, receiveMessageOnPort } = require('worker_threads')
  const make = {
    AsyncLock: () => new AsyncLock(),
    Semaphore: () => new Semaphore(1),
    RWLock: () => new RWLock(),
    ConditionVariable: () => new ConditionVariable(),
    Barrier: () => new Barrier(2),
    CountDownLatch: () => new CountDownLatch(1)
  }
  for (const [name, create] of Object.entries(make)) {
    it(`${name}.from says to post its handle`, () => {
      const { port1, port2 } = new MessageChannel()
      port1.postMessage(create())
      const { message } = receiveMessageOnPort(port2)
      port1.close()
      assert.throws(() => CLASSES[name].from(message), {
        name: 'TypeError',
        message: `${name}.from: the handle has no buffer (a SharedArrayBuffer); post the primitive's handle (lock.handle), not the ${name} itself, which arrives as an empty object, and call ${name}.from(handle) there`
      })
    })
  }

  it('a handle written by hand without a buffer is still refused as before', () => {
    assert.throws(() => AsyncLock.from({ type: 'AsyncLock' }), { name: 'TypeError', message: /^AsyncLock\.from: buffer must be a SharedArrayBuffer/ })
  })
})
