'use strict'

// Named locks in one thread, checked against the behaviour the Web Locks
// specification describes for LockManager.request() and query(): argument
// checks, exclusive and shared modes, the FIFO queue, ifAvailable, steal,
// signal, the Lock object and the query() snapshot. The same behaviour
// across real worker threads is in test/named-locks-threads.test.js.

const assert = require('assert')
const path = require('path')
const { execFile } = require('child_process')
const { threadId } = require('worker_threads')
const { locks, Lock, LockError } = require('..')
const { binding } = require('../lib/native')
const { outcome, deferred } = require('./fixtures/named-locks-harness')
const { within, until, sleep, promised } = require('./fixtures/threads')

let serial = 0
/** A name no other test uses, so that tests never see each other's locks. */
function unique (label) {
  return `named-locks.test/${label}/${++serial}`
}

/**
 * Requests `name` and keeps it until release() (or fail()). `granted`
 * resolves with the Lock; `settled` with the request's outcome.
 */
function hold (name, options = {}) {
  const release = deferred()
  const granted = deferred()
  const request = locks.request(name, options, (lock) => {
    granted.resolve(lock)
    return release.promise
  })
  return {
    // A watchdog only for those who wait for the grant.
    get granted () { return within(granted.promise, 5000, `lock ${name} granted`) },
    release: release.resolve,
    fail: release.reject,
    settled: outcome(request)
  }
}

/** Whether `name` could be granted in `mode` right now (ifAvailable probe). */
function available (name, mode = 'exclusive') {
  return locks.request(name, { mode, ifAvailable: true }, (lock) => lock !== null)
}

/** The query() entries of one name, as [mode, ...] lists. */
async function stateOf (name) {
  const { held, pending } = await locks.query()
  return {
    held: held.filter((l) => l.name === name).map((l) => l.mode),
    pending: pending.filter((l) => l.name === name).map((l) => l.mode)
  }
}

function assertDOMException (err, name) {
  assert.ok(err instanceof DOMException, `expected a DOMException, got ${err && err.stack}`)
  assert.strictEqual(err.name, name)
}

async function rejectsWith (promise, check) {
  const r = await within(outcome(promise), 5000, 'request settled')
  assert.ok('error' in r, `expected a rejection, got the value ${String(r.value)}`)
  check(r.error)
  return r.error
}

function isTypeError (err) {
  assert.ok(err instanceof TypeError, `expected a TypeError, got ${err && err.stack}`)
}

describe('named locks (one thread)', function () {
  afterEach(async function () {
    // Every test releases what it took: nothing may stay in the table.
    await until(() => binding.namedCount() === 0, 'the name table is empty again', 2000)
    assert.deepStrictEqual(await locks.query(), { held: [], pending: [] })
  })

  describe('argument checks', function () {
    it('a name and a callback are required', async () => {
      await rejectsWith(locks.request(), isTypeError)
      await rejectsWith(locks.request(unique('no-callback')), isTypeError)
    })

    it('bad input rejects the returned promise instead of throwing', () => {
      const results = [
        () => locks.request(unique('sync'), 42),
        () => locks.request(Symbol('s'), () => {}),
        () => locks.request('-reserved', () => {})
      ].map((call) => {
        return outcome(promised(call))
      })
      return Promise.all(results).then((all) => all.forEach((r) => assert.ok('error' in r)))
    })

    it('the callback must be a function', async () => {
      const name = unique('callback')
      for (const bad of [123, 'abc', null, {}, [], true]) {
        await rejectsWith(locks.request(name, bad), isTypeError)
        await rejectsWith(locks.request(name, {}, bad), isTypeError)
        await rejectsWith(locks.request(name, { mode: 'shared' }, bad), isTypeError)
      }
      assert.strictEqual(binding.namedCount(), 0, 'a refused request must not be queued')
    })

    it('options must be a dictionary; null and undefined mean the defaults', async () => {
      const name = unique('options')
      for (const bad of [42, 'exclusive', true, Symbol('o')]) {
        await rejectsWith(locks.request(name, bad, () => 'ran'), isTypeError)
      }
      assert.strictEqual(await locks.request(name, null, (lock) => lock.mode), 'exclusive')
      assert.strictEqual(await locks.request(name, undefined, (lock) => lock.mode), 'exclusive')
      assert.strictEqual(await locks.request(name, {}, (lock) => lock.mode), 'exclusive')
    })

    it("mode must be 'exclusive' or 'shared'", async () => {
      const name = unique('mode')
      let ran = false
      for (const bad of ['foo', null, 'Exclusive', 'SHARED', '', 0]) {
        await rejectsWith(locks.request(name, { mode: bad }, () => { ran = true }), isTypeError)
      }
      assert.strictEqual(ran, false, 'the callback of a refused request must not run')
      assert.strictEqual(await locks.request(name, { mode: 'exclusive' }, (lock) => lock.mode), 'exclusive')
      assert.strictEqual(await locks.request(name, { mode: 'shared' }, (lock) => lock.mode), 'shared')
      // Enum values are converted with ToString first, as WebIDL does.
      assert.strictEqual(await locks.request(name, { mode: { toString: () => 'shared' } }, (lock) => lock.mode), 'shared')
    })

    it('a symbol name is a TypeError; any other name is converted with String()', async () => {
      await rejectsWith(locks.request(Symbol('name'), () => {}), isTypeError)
      const values = [1, -0, NaN, Infinity, null, undefined, true, {}, [1, 2], { toString: () => 'custom' }]
      for (const value of values) {
        const seen = await locks.request(value, async (lock) => {
          const { held } = await locks.query()
          return { name: lock.name, queried: held.map((l) => l.name) }
        })
        assert.deepStrictEqual(seen, { name: String(value), queried: [String(value)] })
      }
      const boom = new Error('toString failed')
      const err = await rejectsWith(locks.request({ toString () { throw boom } }, () => {}), () => {})
      assert.strictEqual(err, boom)
    })

    it("names starting with '-' are reserved (NotSupportedError)", async () => {
      let ran = false
      for (const name of ['-', '-x', '--']) {
        await rejectsWith(locks.request(name, () => { ran = true }), (e) => assertDOMException(e, 'NotSupportedError'))
        await rejectsWith(locks.request(name, { ifAvailable: true }, () => { ran = true }),
          (e) => assertDOMException(e, 'NotSupportedError'))
      }
      assert.strictEqual(ran, false)
      // Only a leading hyphen-minus is reserved.
      for (const name of [' -x', 'x-', '\u2010x', '']) {
        assert.strictEqual(await locks.request(name, (lock) => lock.name), name)
      }
    })

    it('steal with ifAvailable, steal in shared mode, and signal with steal or ifAvailable are NotSupportedError', async () => {
      const name = unique('not-supported')
      const { signal } = new AbortController()
      const combos = [
        { steal: true, ifAvailable: true },
        { steal: true, mode: 'shared' },
        { steal: true, signal },
        { ifAvailable: true, signal }
      ]
      let ran = false
      for (const options of combos) {
        await rejectsWith(locks.request(name, options, () => { ran = true }),
          (e) => assertDOMException(e, 'NotSupportedError'))
      }
      // These checks come before the one for an aborted signal.
      const aborted = AbortSignal.abort(new Error('reason'))
      for (const [n, options] of [[name, { steal: true, signal: aborted }], [name, { ifAvailable: true, signal: aborted }], ['-x', { signal: aborted }]]) {
        await rejectsWith(locks.request(n, options, () => { ran = true }),
          (e) => assertDOMException(e, 'NotSupportedError'))
      }
      assert.strictEqual(ran, false)
    })

    it('signal must be an AbortSignal', async () => {
      const name = unique('signal-type')
      for (const signal of ['string', 12.34, false, {}, () => {}, null, Symbol('s'), new AbortController()]) {
        await rejectsWith(locks.request(name, { signal }, () => {}), isTypeError)
      }
    })

    it('ifAvailable and steal are converted with ToBoolean', async () => {
      const name = unique('coerce')
      const h = hold(name)
      await h.granted
      assert.strictEqual(await locks.request(name, { ifAvailable: 'yes' }, (lock) => lock), null)
      assert.strictEqual(await locks.request(name, { steal: 1 }, (lock) => lock.name), name)
      assertDOMException((await h.settled).error, 'AbortError')
      assert.strictEqual(await locks.request(name, { ifAvailable: 0, steal: '' }, (lock) => lock.name), name)
      h.release()
    })

    it('the options dictionary is read as WebIDL reads it: each member once, in lexicographic order, converted as it is read', async () => {
      const name = unique('options-order')
      // Every read of the options object, through a Proxy.
      const traced = (members) => {
        const reads = []
        const proxy = new Proxy(members, {
          get (target, key, receiver) {
            if (typeof key === 'string') reads.push(key)
            return Reflect.get(target, key, receiver)
          }
        })
        return { proxy, reads }
      }
      const all = traced({ mode: 'shared', ifAvailable: false, steal: false, signal: new AbortController().signal, ref: true })
      assert.strictEqual(await locks.request(name, all.proxy, (lock) => lock.mode), 'shared')
      assert.deepStrictEqual(all.reads, ['ifAvailable', 'mode', 'ref', 'signal', 'steal', 'timeout'])
      // Absent members are read all the same, and getters run once each.
      const empty = traced({})
      assert.strictEqual(await locks.request(name, empty.proxy, (lock) => lock.mode), 'exclusive')
      assert.deepStrictEqual(empty.reads, ['ifAvailable', 'mode', 'ref', 'signal', 'steal', 'timeout'])
      // A member that does not convert ends the reading: the later ones are
      // never read.
      const badMode = traced({ mode: 'bogus', steal: true })
      await rejectsWith(locks.request(name, badMode.proxy, () => {}), isTypeError)
      assert.deepStrictEqual(badMode.reads, ['ifAvailable', 'mode'])
      const badSignal = traced({ signal: 'no', steal: true })
      await rejectsWith(locks.request(name, badSignal.proxy, () => {}), isTypeError)
      assert.deepStrictEqual(badSignal.reads, ['ifAvailable', 'mode', 'ref', 'signal'])
      // Conversion comes before the method's own checks: a NotSupportedError
      // combination is reported only once every member was read.
      const combo = traced({ steal: true, ifAvailable: true })
      await rejectsWith(locks.request(name, combo.proxy, () => {}), (e) => assertDOMException(e, 'NotSupportedError'))
      assert.deepStrictEqual(combo.reads, ['ifAvailable', 'mode', 'ref', 'signal', 'steal', 'timeout'])
      // The options are converted before the callback, as the arguments come.
      const beforeCallback = traced({})
      await rejectsWith(locks.request(name, beforeCallback.proxy, 'not a function'), isTypeError)
      assert.deepStrictEqual(beforeCallback.reads, ['ifAvailable', 'mode', 'ref', 'signal', 'steal', 'timeout'])
    })

    it('null and undefined options read nothing, an object reads through its prototype', async () => {
      const name = unique('options-proto')
      const reads = []
      const members = ['ifAvailable', 'mode', 'ref', 'signal', 'steal']
      for (const key of members) {
        Object.defineProperty(Object.prototype, key, {
          configurable: true,
          get () { reads.push(key); return undefined }
        })
      }
      let requests
      try {
        requests = [
          locks.request(name, undefined, () => 'u'),
          locks.request(name, null, () => 'n'),
          locks.request(name, () => 'none')
        ]
        assert.deepStrictEqual(reads, [])
        requests.push(locks.request(name, {}, () => 'object'))
        assert.deepStrictEqual(reads, members)
      } finally {
        for (const key of members) delete Object.prototype[key]
      }
      assert.deepStrictEqual(await Promise.all(requests), ['u', 'n', 'none', 'object'])
    })
  })

  describe('granting and releasing', function () {
    it('the callback runs asynchronously with a Lock of the requested name and mode', async () => {
      const name = unique('lock-object')
      let lock = null
      const p = locks.request(name, (l) => { lock = l })
      assert.strictEqual(lock, null, 'the callback must not run inside request()')
      await p
      assert.ok(lock instanceof Lock)
      assert.strictEqual(lock.name, name)
      assert.strictEqual(lock.mode, 'exclusive')
      assert.strictEqual(Object.prototype.toString.call(lock), '[object Lock]')
      const shared = await locks.request(name, { mode: 'shared' }, (l) => l)
      assert.strictEqual(shared.mode, 'shared')
      assert.strictEqual(shared.name, name)
    })

    it('Lock attributes are read-only and Lock cannot be constructed by script', async () => {
      const lock = await locks.request(unique('attributes'), (l) => l)
      const name = lock.name
      assert.throws(() => { lock.name = 'other' }, TypeError)
      assert.throws(() => { lock.mode = 'shared' }, TypeError)
      assert.strictEqual(lock.name, name)
      assert.strictEqual(lock.mode, 'exclusive')
      assert.deepStrictEqual(Object.keys(Lock.prototype).sort(), ['mode', 'name'])
      assert.throws(() => new Lock('x', 'exclusive'), TypeError)
      assert.throws(() => Reflect.apply(Object.getOwnPropertyDescriptor(Lock.prototype, 'name').get, {}, []), TypeError)
    })

    it('locks is a LockManager shaped like the built-in one', () => {
      assert.strictEqual(Object.prototype.toString.call(locks), '[object LockManager]')
      assert.strictEqual(locks.request.length, 2)
      assert.strictEqual(typeof locks.query, 'function')
      assert.deepStrictEqual(Object.keys(Object.getPrototypeOf(locks)).sort(), ['query', 'request'])
    })

    it('ifAvailable null callbacks run asynchronously too', async () => {
      const name = unique('async-null')
      const h = hold(name)
      await h.granted
      let called = false
      const p = locks.request(name, { ifAvailable: true }, () => { called = true })
      assert.strictEqual(called, false)
      await p
      assert.strictEqual(called, true)
      h.release()
      await h.settled
    })

    it('the callback runs from a task: microtasks queued after request() run before it', async () => {
      const name = unique('task')
      const order = []
      // A chain of microtasks: each queues the next, so all of them must
      // run before the next task, however long the chain.
      const chain = (label, n) => {
        let p = Promise.resolve()
        for (let k = 1; k <= n; k++) p = p.then(() => order.push(`${label} ${k}`))
        return p
      }
      const granted = locks.request(name, () => { order.push('callback') })
      process.nextTick(() => order.push('tick'))
      queueMicrotask(() => order.push('queued'))
      chain('then', 20)
      await granted
      assert.deepStrictEqual(order, ['tick', 'queued', ...Array.from({ length: 20 }, (_, k) => `then ${k + 1}`), 'callback'])

      // The same for the null callback of ifAvailable.
      const h = hold(name)
      await h.granted
      order.length = 0
      const none = locks.request(name, { ifAvailable: true }, (lock) => { order.push(`callback ${lock}`) })
      chain('then', 5)
      await none
      assert.deepStrictEqual(order, ['then 1', 'then 2', 'then 3', 'then 4', 'then 5', 'callback null'])
      h.release()
      await h.settled
    })

    it('callbacks granted together run in tasks of their own: the microtasks of one run before the next', async () => {
      const name = unique('task-each')
      const order = []
      const callback = (label) => () => {
        order.push(label)
        Promise.resolve().then(() => order.push(`${label} then`)).then(() => order.push(`${label} then then`))
      }
      await Promise.all([
        locks.request(name, { mode: 'shared' }, callback('a')),
        locks.request(name, { mode: 'shared' }, callback('b'))
      ])
      assert.deepStrictEqual(order, ['a', 'a then', 'a then then', 'b', 'b then', 'b then then'])
      // Queued behind an exclusive holder, they are granted together by
      // its release, and still run one task each.
      order.length = 0
      const h = hold(name)
      await h.granted
      const queued = ['c', 'd', 'e'].map((label) => locks.request(name, { mode: 'shared' }, callback(label)))
      h.release()
      await Promise.all([h.settled, ...queued])
      assert.deepStrictEqual(order, ['c', 'c then', 'c then then', 'd', 'd then', 'd then then', 'e', 'e then', 'e then then'])
    })

    it("the request resolves with the callback's return value", async () => {
      const name = unique('result')
      assert.strictEqual(await locks.request(name, () => 42), 42)
      assert.strictEqual(await locks.request(name, async () => 'async'), 'async')
      const obj = {}
      assert.strictEqual(await locks.request(name, () => obj), obj)
      assert.strictEqual(await locks.request(name, () => ({ then: (resolve) => resolve('thenable') })), 'thenable')
      assert.strictEqual(await locks.request(name, { ifAvailable: true }, () => 7), 7)
    })

    it("a thrown error or rejected promise becomes the request's rejection, and the lock is released", async () => {
      const name = unique('throw')
      const sync = new Error('sync')
      const async = new Error('async')
      assert.strictEqual(await rejectsWith(locks.request(name, () => { throw sync }), () => {}), sync)
      assert.strictEqual(await available(name), true)
      assert.strictEqual(await rejectsWith(locks.request(name, async () => { throw async }), () => {}), async)
      assert.strictEqual(await available(name), true)
      // A non-Error thrown value is passed through as it is.
      assert.strictEqual(await rejectsWith(locks.request(name, () => { throw 123 }), () => {}), 123)
      // The callback of an ifAvailable request that got null may throw too.
      const h = hold(name)
      await h.granted
      assert.strictEqual(await rejectsWith(locks.request(name, { ifAvailable: true }, () => { throw sync }), () => {}), sync)
      h.release()
      await h.settled
    })

    it("the lock is held until the callback's promise settles, and released before the request settles", async () => {
      const name = unique('held-until')
      const h = hold(name)
      await h.granted
      assert.strictEqual(await available(name), false)
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
      await sleep(20)
      assert.strictEqual(await available(name), false, 'still held while the callback is pending')
      let freeWhenSettled = null
      const check = h.settled.then(async () => { freeWhenSettled = await available(name) })
      h.release('done')
      assert.deepStrictEqual(await h.settled, { value: 'done' })
      await check
      assert.strictEqual(freeWhenSettled, true, 'the lock must be free once the request settles')

      // Released on rejection as well.
      const f = hold(name)
      await f.granted
      f.fail(new Error('no'))
      assert.strictEqual((await f.settled).error.message, 'no')
      assert.strictEqual(await available(name), true)
    })

    it('locks with different names are independent', async () => {
      const a = unique('a')
      const b = unique('b')
      const granted = []
      let inner
      await locks.request(a, async () => {
        inner = Promise.all([
          locks.request(a, () => { granted.push('a') }),
          locks.request(b, () => { granted.push('b') })
        ])
        await sleep(20)
        assert.deepStrictEqual(granted, ['b'], 'b is granted while a is held')
      })
      await inner
      assert.deepStrictEqual(granted, ['b', 'a'])
    })
  })

  describe('exclusive and shared modes', function () {
    it('exclusive requests are granted one at a time, in the order they were made', async () => {
      const name = unique('exclusive')
      const log = []
      let inside = 0
      let most = 0
      const requests = [1, 2, 3, 4, 5].map((n) => locks.request(name, async () => {
        inside++
        most = Math.max(most, inside)
        log.push(n)
        await sleep(5)
        inside--
        return n
      }))
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: Array(4).fill('exclusive') })
      assert.deepStrictEqual(await Promise.all(requests), [1, 2, 3, 4, 5])
      assert.deepStrictEqual(log, [1, 2, 3, 4, 5])
      assert.strictEqual(most, 1, 'two exclusive callbacks ran at once')
    })

    it('shared locks of one name are held together', async () => {
      const name = unique('shared')
      const all = deferred()
      let entered = 0
      const requests = [1, 2, 3].map(() => locks.request(name, { mode: 'shared' }, async () => {
        if (++entered === 3) all.resolve()
        // Each callback waits for the others: this only ends if all three
        // hold the lock at the same time.
        await all.promise
      }))
      await within(Promise.all(requests), 5000, 'three shared holders at once')
      assert.strictEqual(entered, 3)
    })

    it('an exclusive request waits for every shared holder', async () => {
      const name = unique('exclusive-after-shared')
      const s1 = hold(name, { mode: 'shared' })
      const s2 = hold(name, { mode: 'shared' })
      await Promise.all([s1.granted, s2.granted])
      const e = hold(name)
      assert.deepStrictEqual(await stateOf(name), { held: ['shared', 'shared'], pending: ['exclusive'] })
      s1.release()
      await s1.settled
      assert.deepStrictEqual(await stateOf(name), { held: ['shared'], pending: ['exclusive'] })
      s2.release()
      await e.granted
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
      e.release()
      await e.settled
    })

    it('a shared request waits behind a queued exclusive request', async () => {
      const name = unique('shared-behind-exclusive')
      const order = []
      const s1 = hold(name, { mode: 'shared' })
      await s1.granted
      const e = hold(name)
      e.granted.then(() => order.push('e'))
      const s2 = hold(name, { mode: 'shared' })
      s2.granted.then(() => order.push('s2'))
      // The held lock alone would let s2 in; the queued exclusive request
      // ahead of it does not.
      await sleep(20)
      assert.deepStrictEqual(order, [])
      assert.deepStrictEqual(await stateOf(name), { held: ['shared'], pending: ['exclusive', 'shared'] })
      s1.release()
      await e.granted
      await sleep(20)
      assert.deepStrictEqual(order, ['e'])
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['shared'] })
      e.release()
      await s2.granted
      assert.deepStrictEqual(order, ['e', 's2'])
      s2.release()
      await Promise.all([s1.settled, e.settled, s2.settled])
    })

    it('a mixed queue is granted in order; an exclusive release lets the next run of shared requests in together', async () => {
      const name = unique('mixed')
      const log = []
      const modes = ['shared', 'shared', 'shared', 'exclusive', 'shared', 'shared', 'exclusive']
      const gate = deferred()
      const requests = modes.map((mode, i) => locks.request(name, { mode }, async () => {
        log.push(`+${i}`)
        if (i === 0) await gate.promise
        else await sleep(5)
        log.push(`-${i}`)
      }))
      await until(() => log.length >= 3, 'the first three shared locks granted')
      assert.deepStrictEqual(log, ['+0', '+1', '+2'])
      gate.resolve()
      await Promise.all(requests)
      // 3 starts only once 0, 1 and 2 ended; 4 and 5 overlap; 6 waits for both.
      const at = (e) => log.indexOf(e)
      for (const i of [0, 1, 2]) assert.ok(at(`-${i}`) < at('+3'), log.join(' '))
      assert.ok(at('-3') < at('+4') && at('-3') < at('+5'), log.join(' '))
      assert.ok(at('+5') < at('-4') && at('+4') < at('-5'), `4 and 5 must overlap: ${log.join(' ')}`)
      assert.ok(at('-4') < at('+6') && at('-5') < at('+6'), log.join(' '))
    })
  })

  describe('ifAvailable', function () {
    it('grants the lock when it is available', async () => {
      const name = unique('if-available')
      const lock = await locks.request(name, { ifAvailable: true }, (l) => l)
      assert.ok(lock instanceof Lock)
      assert.strictEqual(lock.name, name)
    })

    it('calls back with null when the lock is held, and queues nothing', async () => {
      const name = unique('if-available-held')
      const h = hold(name)
      await h.granted
      const result = await locks.request(name, { ifAvailable: true }, async (lock) => {
        assert.strictEqual(lock, null)
        assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
        return 123
      })
      assert.strictEqual(result, 123)
      h.release()
      await h.settled
    })

    it('follows the modes: shared joins shared, nothing joins exclusive, exclusive does not join shared', async () => {
      const name = unique('if-available-modes')
      const s = hold(name, { mode: 'shared' })
      await s.granted
      assert.strictEqual(await available(name, 'shared'), true)
      assert.strictEqual(await available(name, 'exclusive'), false)
      s.release()
      await s.settled
      const e = hold(name)
      await e.granted
      assert.strictEqual(await available(name, 'shared'), false)
      assert.strictEqual(await available(name, 'exclusive'), false)
      e.release()
      await e.settled
      assert.strictEqual(await available(name, 'exclusive'), true)
    })

    it('calls back with null when only the queue stands in the way', async () => {
      const name = unique('if-available-queue')
      const s = hold(name, { mode: 'shared' })
      await s.granted
      const e = hold(name)
      // A shared lock is held, so the held set alone would allow another
      // shared lock; the exclusive request queued first does not.
      assert.strictEqual(await available(name, 'shared'), false)
      assert.deepStrictEqual(await stateOf(name), { held: ['shared'], pending: ['exclusive'] })
      s.release()
      await e.granted
      e.release()
      await Promise.all([s.settled, e.settled])
    })

    it('is available again as soon as the previous holder released', async () => {
      const name = unique('if-available-again')
      const lock = await locks.request(name, async () => {
        // Inside the callback the lock is held...
        assert.strictEqual(await available(name), false)
      }).then(() => locks.request(name, { ifAvailable: true }, (l) => l))
      assert.notStrictEqual(lock, null)
    })
  })

  describe('steal', function () {
    it('grants a free lock', async () => {
      const name = unique('steal-free')
      assert.strictEqual(await locks.request(name, { steal: true }, (lock) => lock.name), name)
    })

    it("takes a held lock at once; the holder's request rejects with an AbortError DOMException", async () => {
      const name = unique('steal-held')
      const h = hold(name)
      await h.granted
      let stealerRan = false
      const stolen = await within(locks.request(name, { steal: true }, async (lock) => {
        stealerRan = true
        assert.strictEqual(lock.mode, 'exclusive')
        // Only the stealer is listed as holding the name.
        assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
        return 'stolen'
      }), 5000, 'the stealer runs although the holder never released')
      assert.strictEqual(stolen, 'stolen')
      assert.strictEqual(stealerRan, true)
      const r = await h.settled
      assert.ok('error' in r, "the holder's request must reject")
      assertDOMException(r.error, 'AbortError')
      // The holder's callback ending later changes nothing.
      h.release('late')
      assert.strictEqual(await available(name), true)
    })

    it("the stolen holder's callback ending later does not release the stealer's lock", async () => {
      const name = unique('steal-late-release')
      const h = hold(name)
      await h.granted
      const s = hold(name, { steal: true })
      await s.granted
      h.release()
      assertDOMException((await h.settled).error, 'AbortError')
      assert.strictEqual(await available(name), false, "the stealer's lock must survive the old holder's release")
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
      s.release('mine')
      assert.deepStrictEqual(await s.settled, { value: 'mine' })
    })

    it('goes ahead of queued requests, which keep their order', async () => {
      const name = unique('steal-queue')
      const order = []
      const h = hold(name)
      await h.granted
      const q1 = hold(name)
      const q2 = hold(name, { mode: 'shared' })
      q1.granted.then(() => order.push('q1'))
      q2.granted.then(() => order.push('q2'))
      const s = hold(name, { steal: true })
      await s.granted
      order.push('s')
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['exclusive', 'shared'] })
      s.release()
      await q1.granted
      q1.release()
      await q2.granted
      q2.release()
      assert.deepStrictEqual(order, ['s', 'q1', 'q2'])
      assertDOMException((await h.settled).error, 'AbortError')
      h.release()
      await Promise.all([q1.settled, q2.settled, s.settled])
    })

    it('breaks every shared holder', async () => {
      const name = unique('steal-shared')
      const a = hold(name, { mode: 'shared' })
      const b = hold(name, { mode: 'shared' })
      await Promise.all([a.granted, b.granted])
      assert.strictEqual(await locks.request(name, { steal: true }, () => 'x'), 'x')
      assertDOMException((await a.settled).error, 'AbortError')
      assertDOMException((await b.settled).error, 'AbortError')
      a.release()
      b.release()
    })

    it('the last stealer wins', async () => {
      const name = unique('steal-last')
      const h = hold(name)
      await h.granted
      const first = hold(name, { steal: true })
      await first.granted
      const second = await locks.request(name, { steal: true }, () => 'second')
      assert.strictEqual(second, 'second')
      assertDOMException((await h.settled).error, 'AbortError')
      assertDOMException((await first.settled).error, 'AbortError')
      h.release()
      first.release()
    })

    it('a lock stolen in the same turn as it was granted still rejects its request', async () => {
      const name = unique('steal-same-turn')
      // Granted at once; the callback would finish in the next microtask,
      // but the steal comes first.
      const victim = locks.request(name, () => 'victim')
      const thief = locks.request(name, { steal: true }, () => 'thief')
      assertDOMException((await outcome(victim)).error, 'AbortError')
      assert.strictEqual(await thief, 'thief')
    })

    it('a queued request granted and then stolen before its callback ran rejects with AbortError', async () => {
      const name = unique('steal-before-callback')
      const first = hold(name)
      await first.granted
      let calls = 0
      const second = locks.request(name, () => { calls++; return 'second' })
      first.release()
      await first.settled
      // `second` is granted now, but its callback has not run yet.
      const thief = hold(name, { steal: true })
      await thief.granted
      assertDOMException((await outcome(second)).error, 'AbortError')
      // As the specification says, the callback of a granted request runs
      // even though the lock was taken from it before.
      assert.strictEqual(calls, 1)
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: [] })
      assert.strictEqual(await available(name), false, "the thief's lock must survive")
      thief.release()
      await thief.settled
    })
  })

  describe('steal and memory', function () {
    it('a lock stolen and released before its thread heard of the steal is freed safely', async function () {
      // In a child process with --expose-gc and freed memory poisoned, so
      // that a use after free crashes instead of passing by luck.
      this.timeout(30000)
      const fixture = path.join(__dirname, 'fixtures', 'named-locks-stolen-gc.js')
      const env = { ...process.env, MALLOC_PERTURB_: '165', GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' }
      const r = await new Promise((resolve) => {
        execFile(process.execPath, ['--expose-gc', fixture], { env, timeout: 25000 }, (error, stdout, stderr) => {
          resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr })
        })
      })
      assert.deepStrictEqual({ code: r.code, stdout: r.stdout }, { code: 0, stdout: 'ok\n' }, r.stderr)
    })
  })

  describe('signal', function () {
    it('an already aborted signal rejects with its reason and queues nothing', async () => {
      const name = unique('aborted')
      let ran = false
      const reason = { why: 'custom reason' }
      const c1 = new AbortController()
      c1.abort(reason)
      assert.strictEqual(await rejectsWith(locks.request(name, { signal: c1.signal }, () => { ran = true }), () => {}), reason)
      const c2 = new AbortController()
      c2.abort()
      await rejectsWith(locks.request(name, { signal: c2.signal }, () => { ran = true }),
        (e) => assertDOMException(e, 'AbortError'))
      assert.strictEqual(ran, false)
      assert.strictEqual(binding.namedCount(), 0)
    })

    it('an abort while queued rejects with the reason and takes the request out of the queue', async () => {
      const name = unique('abort-queued')
      const h = hold(name)
      await h.granted
      const c = new AbortController()
      let ran = false
      const p = outcome(locks.request(name, { signal: c.signal }, () => { ran = true }))
      const after = hold(name)
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['exclusive', 'exclusive'] })
      const reason = new Error('gave up')
      c.abort(reason)
      assert.strictEqual((await p).error, reason)
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['exclusive'] })
      h.release()
      await after.granted
      after.release()
      await Promise.all([h.settled, after.settled])
      assert.strictEqual(ran, false)
    })

    it('an abort on a timer while queued', async () => {
      const name = unique('abort-timeout')
      const h = hold(name)
      await h.granted
      const t0 = Date.now()
      const r = await within(outcome(locks.request(name, { signal: AbortSignal.timeout(30) }, () => {})), 5000, 'timeout abort')
      assertDOMException(r.error, 'TimeoutError')
      assert.ok(Date.now() - t0 >= 20, 'rejected before the signal fired')
      h.release()
      await h.settled
    })

    it('an aborted exclusive request lets the shared requests queued behind it in', async () => {
      const name = unique('abort-unblocks')
      const s1 = hold(name, { mode: 'shared' })
      await s1.granted
      const c = new AbortController()
      const e = outcome(locks.request(name, { signal: c.signal }, () => {}))
      const s2 = hold(name, { mode: 'shared' })
      assert.deepStrictEqual(await stateOf(name), { held: ['shared'], pending: ['exclusive', 'shared'] })
      c.abort()
      assertDOMException((await e).error, 'AbortError')
      await s2.granted
      assert.deepStrictEqual(await stateOf(name), { held: ['shared', 'shared'], pending: [] })
      s1.release()
      s2.release()
      await Promise.all([s1.settled, s2.settled])
    })

    it('an abort in the same turn as a grantable request rejects it, skips its callback and frees the lock', async () => {
      const name = unique('abort-sync')
      const c = new AbortController()
      let ran = false
      const p = locks.request(name, { signal: c.signal }, () => { ran = true })
      const next = locks.request(name, () => 'next')
      c.abort()
      assertDOMException((await outcome(p)).error, 'AbortError')
      assert.strictEqual(await within(next, 5000, 'the next request'), 'next')
      assert.strictEqual(ran, false, 'the callback must not run once the signal was aborted')
    })

    it('an abort after the grant but before the callback ran rejects and frees the lock', async () => {
      const name = unique('abort-granted')
      const first = hold(name)
      await first.granted
      const c = new AbortController()
      let ran = false
      const p = outcome(locks.request(name, { signal: c.signal }, () => { ran = true }))
      first.release()
      await first.settled
      // Granted in the table now; the callback has not run yet.
      c.abort()
      assertDOMException((await p).error, 'AbortError')
      // The lock is given back once this thread hears of the grant, without
      // running the callback.
      await until(() => available(name), 'the lock granted to an aborted request is released', 2000)
      assert.strictEqual(ran, false)
    })

    it('an abort once the callback runs is ignored', async () => {
      const name = unique('abort-late')
      const c = new AbortController()
      const result = await locks.request(name, { signal: c.signal }, async () => {
        c.abort()
        await sleep(5)
        return 'kept'
      })
      assert.strictEqual(result, 'kept')
      const c2 = new AbortController()
      const h = hold(name, { signal: c2.signal })
      await h.granted
      c2.abort()
      assert.strictEqual(await available(name), false, 'an abort does not release a granted lock')
      h.release('ok')
      assert.deepStrictEqual(await h.settled, { value: 'ok' })
      // And after the release.
      const c3 = new AbortController()
      assert.strictEqual(await locks.request(name, { signal: c3.signal }, () => 'done'), 'done')
      c3.abort()
    })
  })

  // threadlock's addition: Web Locks has only the signal.
  describe('timeout', function () {
    function isTimeout (name, ms) {
      return (err) => {
        assert.ok(err instanceof LockError, `expected a LockError, got ${err && err.stack}`)
        assert.strictEqual(err.code, 'ETIMEDOUT')
        assert.strictEqual(err.message, `LockManager.request: lock ${JSON.stringify(name)}: not acquired within ${ms} ms`)
      }
    }

    it('a queued request rejects with LockError ETIMEDOUT once it has waited that long, and leaves the queue', async () => {
      const name = unique('timeout-queued')
      const h = hold(name)
      await h.granted
      let ran = false
      const t0 = Date.now()
      const p = locks.request(name, { timeout: 40 }, () => { ran = true })
      const after = hold(name, { mode: 'shared' })
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['exclusive', 'shared'] })
      await rejectsWith(p, isTimeout(name, 40))
      assert.ok(Date.now() - t0 >= 30, 'rejected before its timeout')
      assert.deepStrictEqual(await stateOf(name), { held: ['exclusive'], pending: ['shared'] })
      h.release()
      await after.granted
      after.release()
      await Promise.all([h.settled, after.settled])
      assert.strictEqual(ran, false)
      assert.deepStrictEqual(await stateOf(name), { held: [], pending: [] })
    })

    it('a timed-out exclusive request lets the shared requests queued behind it in', async () => {
      const name = unique('timeout-unblocks')
      const s1 = hold(name, { mode: 'shared' })
      await s1.granted
      const e = locks.request(name, { timeout: 20 }, () => {})
      const s2 = hold(name, { mode: 'shared' })
      await rejectsWith(e, isTimeout(name, 20))
      await s2.granted
      assert.deepStrictEqual(await stateOf(name), { held: ['shared', 'shared'], pending: [] })
      s1.release()
      s2.release()
      await Promise.all([s1.settled, s2.settled])
    })

    it('a request granted in time runs, and the timeout does not cut its callback short', async () => {
      const name = unique('timeout-in-time')
      assert.strictEqual(await locks.request(name, { timeout: 0 }, (lock) => lock.name), name)
      const result = await locks.request(name, { timeout: 10 }, async () => {
        await sleep(40)
        return 'kept'
      })
      assert.strictEqual(result, 'kept')
      const h = hold(name)
      await h.granted
      const p = locks.request(name, { timeout: 5000 }, () => 'second')
      h.release()
      assert.strictEqual(await within(p, 5000, 'the queued request'), 'second')
      await h.settled
    })

    it('a timeout beyond 2^31 - 1 ms does not fire early', async () => {
      const name = unique('timeout-long')
      const h = hold(name)
      await h.granted
      let settled = false
      const p = locks.request(name, { timeout: 2 ** 31 + 1000 }, () => 'late')
      p.then(() => { settled = true }, () => { settled = true })
      await sleep(50)
      assert.strictEqual(settled, false)
      h.release()
      assert.strictEqual(await within(p, 5000, 'the long-timeout request'), 'late')
      await h.settled
    })

    it('whichever of the signal and the timeout comes first ends the request', async () => {
      const name = unique('timeout-signal')
      const h = hold(name)
      await h.granted
      const c = new AbortController()
      const reason = new Error('aborted first')
      const p1 = outcome(locks.request(name, { signal: c.signal, timeout: 5000 }, () => {}))
      c.abort(reason)
      assert.strictEqual((await p1).error, reason)
      const p2 = locks.request(name, { signal: new AbortController().signal, timeout: 10 }, () => {})
      await rejectsWith(p2, isTimeout(name, 10))
      h.release()
      await h.settled
      assert.deepStrictEqual(await stateOf(name), { held: [], pending: [] })
    })

    it('must be a number >= 0, and cannot be combined with steal or ifAvailable', async () => {
      for (const bad of ['10', null, {}, 10n, true]) {
        await rejectsWith(locks.request('n', { timeout: bad }, () => {}), isTypeError)
      }
      for (const bad of [-1, NaN, -Infinity]) {
        await rejectsWith(locks.request('n', { timeout: bad }, () => {}), (e) => assert.ok(e instanceof RangeError, e.stack))
      }
      for (const combo of [{ steal: true }, { ifAvailable: true }]) {
        await rejectsWith(locks.request('n', { ...combo, timeout: 10 }, () => {}), (e) => {
          assertDOMException(e, 'NotSupportedError')
          assert.strictEqual(e.message, 'LockManager.request: timeout cannot be combined with steal or ifAvailable')
        })
      }
      // Infinity is no limit, as everywhere in threadlock.
      assert.strictEqual(await locks.request(unique('timeout-infinity'), { timeout: Infinity }, () => 1), 1)
    })
  })

  describe('query()', function () {
    it('resolves with { held, pending } of { name, mode, clientId } entries', async () => {
      const name = unique('query-shape')
      const empty = locks.query()
      assert.ok(empty instanceof Promise)
      assert.deepStrictEqual(await empty, { held: [], pending: [] })
      const h = hold(name)
      await h.granted
      const q = hold(name, { mode: 'shared' })
      const snapshot = await locks.query()
      assert.deepStrictEqual(Object.keys(snapshot).sort(), ['held', 'pending'])
      assert.ok(Array.isArray(snapshot.held) && Array.isArray(snapshot.pending))
      const me = String(threadId)
      assert.deepStrictEqual(snapshot.held, [{ name, mode: 'exclusive', clientId: me }])
      assert.deepStrictEqual(snapshot.pending, [{ name, mode: 'shared', clientId: me }])
      for (const info of [...snapshot.held, ...snapshot.pending]) {
        assert.deepStrictEqual(Object.keys(info).sort(), ['clientId', 'mode', 'name'])
      }
      // A snapshot is a copy: it does not follow later changes.
      h.release()
      await q.granted
      assert.deepStrictEqual(snapshot.held, [{ name, mode: 'exclusive', clientId: me }])
      assert.deepStrictEqual(await stateOf(name), { held: ['shared'], pending: [] })
      q.release()
      await Promise.all([h.settled, q.settled])
    })

    it('lists held locks and pending requests of a name in order', async () => {
      const a = unique('query-order-a')
      const b = unique('query-order-b')
      const held = [hold(a, { mode: 'shared' }), hold(b), hold(a, { mode: 'shared' })]
      await Promise.all(held.map((h) => h.granted))
      const modesA = ['exclusive', 'shared', 'exclusive', 'shared', 'shared']
      const modesB = ['shared', 'exclusive', 'shared']
      const pending = []
      for (let i = 0; i < 5; i++) {
        pending.push(hold(a, { mode: modesA[i] }))
        if (i < 3) pending.push(hold(b, { mode: modesB[i] }))
      }
      assert.deepStrictEqual(await stateOf(a), { held: ['shared', 'shared'], pending: modesA })
      assert.deepStrictEqual(await stateOf(b), { held: ['exclusive'], pending: modesB })
      // Release everything; the queues drain in order.
      for (const h of held) h.release()
      for (const p of pending) {
        await p.granted
        p.release()
      }
      await Promise.all([...held, ...pending].map((h) => h.settled))
    })

    it('names that are not valid UTF-16 or hold NUL are kept exactly', async () => {
      const names = ['\uD800', '\uDC00', '\uD800\uDC00', '\uFFFD', 'a\u0000b', 'a\u0000c', 'é', 'e\u0301']
      const held = names.map((n) => hold(n))
      const locksSeen = await Promise.all(held.map((h) => h.granted))
      assert.deepStrictEqual(locksSeen.map((l) => l.name), names)
      const { held: infos } = await locks.query()
      assert.deepStrictEqual(infos.map((i) => i.name).sort(), [...names].sort(),
        'every name is distinct and round-trips')
      for (const h of held) h.release()
      await Promise.all(held.map((h) => h.settled))
    })

    it('long names work like short ones', async () => {
      const long = unique('long') + 'x'.repeat(5000)
      const h = hold(long)
      const lock = await h.granted
      assert.strictEqual(lock.name, long)
      assert.deepStrictEqual(await stateOf(long), { held: ['exclusive'], pending: [] })
      assert.strictEqual(await available(long.slice(0, -1)), true, 'a prefix is another name')
      h.release()
      await h.settled
    })
  })
})
