'use strict'

// Bad input to every public function, table-driven. Each row must give a
// clear error of the right type (for wait / notify / waitAsync: the same
// outcome as the built-in Atomics, which is the reference) and leave every
// waiter and lock as it was. Live waiters are present throughout: the main
// thread and a worker wait on ta[0], a worker holds the lock, the main thread
// and another worker queue for it.
//
// Every element of `ta` holds 7 and the rows pass 0 as the expected value,
// so that a call wrongly accepted returns 'not-equal' at once instead of
// blocking. A sync lock() wrongly accepted cannot block either: the main
// thread has a request queued, so it would fail with EDEADLK.

const assert = require('assert')
const tl = require('..')
const { AsyncLock, LockError, waiterCount } = tl
const { TestWorker, cleanup, track, mainGuard, guarded, within, until } = require('./fixtures/threads')

const boom = new Error('boom from valueOf')
const log = []
// An object whose coercion to a primitive is logged, or throws.
const logged = (name, value) => ({ valueOf () { log.push(name); return value } })
const poisoned = (name) => ({ valueOf () { log.push(name); throw boom } })
const getterThrows = (key) => Object.defineProperty({}, key, {
  enumerable: true,
  get () { log.push(key); throw boom }
})

const sab = (bytes) => new SharedArrayBuffer(bytes)
const i32 = (length) => new Int32Array(sab(4 * length)).fill(7)

function outcome (fn) {
  log.length = 0
  try {
    const value = fn()
    return { value, log: [...log] }
  } catch (error) {
    return { error, log: [...log] }
  }
}

function describeOutcome (o) {
  if ('error' in o) return `threw ${o.error && o.error.name}: ${o.error && o.error.message}`
  return `returned ${typeof o.value === 'object' ? JSON.stringify(o.value) : String(o.value)}`
}

describe('bad input', function () {
  let ta, lock, holder, queuedWorker, waitingWorker, mineWait, mineLock, held

  function state () {
    return {
      waiters0: waiterCount(ta, 0),
      waiters1: waiterCount(ta, 1),
      ta: [...ta],
      locked: lock.locked,
      owner: lock.owner,
      waiting: lock.waiting,
      word: Atomics.load(new Int32Array(lock.buffer), 0)
    }
  }

  before(async function () {
    await mainGuard()
    ta = track(i32(4))
    lock = track(new AsyncLock(sab(8), 0))
    held = track(new AsyncLock(lock.buffer, 4)) // a second lock, held by the main thread
    holder = new TestWorker({ locks: [lock] })
    queuedWorker = new TestWorker({ locks: [lock] })
    waitingWorker = new TestWorker({ data: { ta } })
    await Promise.all([holder.ready(), queuedWorker.ready(), waitingWorker.ready()])
    await holder.run(({ locks }) => locks[0].lock(), undefined, 5000)
    mineLock = lock.acquire()
    queuedWorker.result = queuedWorker.run(({ locks }) => { locks[0].lock(); locks[0].unlock(); return 'got it' })
    await until(() => lock.waiting === 2, 'the lock waiters did not queue')
    mineWait = tl.waitAsync(ta, 0, 7)
    waitingWorker.result = waitingWorker.run(({ tl, workerData }) => tl.wait(workerData.ta, 0, 7))
    await until(() => waiterCount(ta, 0) === 2, 'the waiters on ta[0] did not queue')
    held.lock()
  })

  after(async function () {
    try {
      await stillWorking()
    } finally {
      await cleanup()
    }
  })

  // The waiters that were there all along still work.
  async function stillWorking () {
    if (mineWait) {
      assert.strictEqual(tl.notify(ta, 0), 2)
      assert.strictEqual(await within(mineWait.value, 5000, 'the main thread\'s wait did not end'), 'ok')
      assert.strictEqual(await within(waitingWorker.result, 5000, 'the worker\'s wait did not end'), 'ok')
      await holder.run(({ locks }) => locks[0].unlock(), undefined, 5000)
      const release = await within(mineLock, 5000, 'the main thread\'s lock request was lost')
      release()
      assert.strictEqual(await within(queuedWorker.result, 5000, 'the worker\'s lock request was lost'), 'got it')
      assert.strictEqual(lock.locked, false)
      held.unlock()
    }
  }

  // [description, () => args] for wait / notify / waitAsync. The reference
  // outcome is the built-in function's.
  const atomicsRows = (fn) => {
    const rows = [
      ['no arguments', () => []],
      ['undefined typed array', () => [undefined, 0, 0]],
      ['a plain object', () => [{ length: 1, 0: 7 }, 0, 0]],
      ['a number', () => [1, 0, 0]],
      ['a Symbol', () => [Symbol('ta'), 0, 0]],
      ['a SharedArrayBuffer itself', () => [sab(8), 0, 0]],
      ['an Int8Array', () => [new Int8Array(sab(8)), 0, 0]],
      ['a Uint32Array', () => [new Uint32Array(sab(8)), 0, 0]],
      ['a Float64Array', () => [new Float64Array(sab(8)), 0, 0]],
      ['a BigUint64Array', () => [new BigUint64Array(sab(8)), 0, 0n]],
      ['a non-shared Int32Array', () => [new Int32Array(4).fill(7), 0, 0]],
      ['a non-shared BigInt64Array', () => [new BigInt64Array(4).fill(7n), 0, 0n]],
      ['a DataView', () => [new DataView(sab(8)), 0, 0]],
      ['a zero-length buffer', () => [new Int32Array(sab(0)), 0, 0]],
      ['a too-short buffer', () => [new Int32Array(sab(4)).fill(7), 1, 0]],
      ['a zero-length BigInt64Array', () => [new BigInt64Array(sab(0)), 0, 0n]],
      ['index = length', () => [ta, 4, 0]],
      ['index -1', () => [ta, -1, 0]],
      ['index -1.5', () => [ta, -1.5, 0]],
      ['index length + 0.5', () => [ta, 4.5, 0]],
      ['index 2^53', () => [ta, 2 ** 53, 0]],
      ['index Infinity', () => [ta, Infinity, 0]],
      ['index -Infinity', () => [ta, -Infinity, 0]],
      ['index "1e3"', () => [ta, '1e3', 0]],
      ['index a Symbol', () => [ta, Symbol('i'), 0]],
      ['index a BigInt', () => [ta, 1n, 0]],
      ['index whose valueOf throws', () => [ta, poisoned('index'), logged('value', 0), logged('timeout', 0)]],
      ['value a Symbol', () => [ta, logged('index', 1), Symbol('v'), logged('timeout', 0)]],
      ['value whose valueOf throws', () => [ta, logged('index', 1), poisoned('value'), logged('timeout', 0)]],
      ['value a Number for a BigInt64Array', () => [new BigInt64Array(sab(16)).fill(7n), 0, 0]],
      ['value a BigInt for an Int32Array', () => [ta, 0, 0n]],
      ['timeout a Symbol', () => [ta, 1, 0, Symbol('t')]],
      ['timeout a BigInt', () => [ta, 1, 0, 10n]],
      ['timeout whose valueOf throws', () => [ta, logged('index', 1), logged('value', 0), poisoned('timeout')]],
      ['an out-of-range index checked before the value is coerced', () => [ta, 9, poisoned('value')]],
      ['the array type checked before the index is coerced', () => [new Float32Array(sab(8)), poisoned('index')]],
      // Coercions that the spec accepts: the same result as the built-in.
      ['fractional index 1.9 (truncated)', () => [ta, 1.9, 0]],
      ['fractional index -0.5 (truncated to 0)', () => [ta, -0.5, 0]],
      ['index NaN (0)', () => [ta, NaN, 0]],
      ['huge timeout', () => [ta, 1, 0, 1e300]],
      ['negative timeout', () => [ta, 1, 0, -Infinity]]
    ]
    if (fn === 'notify') {
      // The count is the third argument: 0 in the rows taken over, so that
      // a call wrongly accepted wakes nobody; index 2 has no waiters.
      return rows.filter(([name]) => !/^(value|timeout|huge|negative) /.test(name))
        .map(([name, args]) => [name, () => {
          const a = args()
          return a.length > 2 ? [a[0], a[1], 0] : a
        }])
        .concat([
          ['count a Symbol', () => [ta, 1, Symbol('c')]],
          ['count a BigInt', () => [ta, 1, 1n]],
          ['count whose valueOf throws', () => [ta, logged('index', 1), poisoned('count')]],
          ['a non-shared Int32Array (0 woken, no error)', () => [new Int32Array(4), 0, 1]],
          ['count 2^53', () => [ta, 2, 2 ** 53]],
          ['count 2^64', () => [ta, 2, 2 ** 64]],
          ['count Infinity', () => [ta, 2, Infinity]],
          ['count 1e300', () => [ta, 2, 1e300]],
          ['count -Infinity', () => [ta, 2, -Infinity]],
          ['count NaN', () => [ta, 2, NaN]],
          ['count -1', () => [ta, 2, -1]]
        ])
    }
    return rows
  }

  function assertSameAsBuiltin (fn, args) {
    const ref = outcome(() => Atomics[fn](...args()))
    const ours = outcome(() => tl[fn](...args()))
    const label = `${fn}: built-in ${describeOutcome(ref)}; threadlock ${describeOutcome(ours)}`
    assert.strictEqual('error' in ours, 'error' in ref, label)
    if ('error' in ref) {
      if (ref.error === boom) {
        assert.strictEqual(ours.error, boom, label)
      } else {
        assert.strictEqual(ours.error.constructor, ref.error.constructor, label)
        assert.ok(typeof ours.error.message === 'string' && ours.error.message.length > 0, label)
      }
    } else if (fn === 'waitAsync') {
      assert.strictEqual(ours.value.async, false, label)
      assert.strictEqual(ours.value.value, ref.value.value, label)
    } else {
      assert.strictEqual(ours.value, ref.value, label)
    }
    assert.deepStrictEqual(ours.log, ref.log, `${fn}: arguments coerced in another order than the built-in's`)
  }

  for (const fn of ['wait', 'notify', 'waitAsync']) {
    describe(fn, () => {
      for (const [name, args] of atomicsRows(fn)) {
        it(`${name}: as the built-in, nothing changes`, () => {
          const before = state()
          assertSameAsBuiltin(fn, args)
          assert.deepStrictEqual(state(), before)
        })
      }
    })
  }

  describe('waitAsync options (threadlock\'s fifth argument)', () => {
    for (const [name, options] of [
      ['null', null], ['a number', 1], ['a string', 'ref'], ['ref a string', { ref: 'no' }],
      ['ref a number', { ref: 0 }], ['ref getter throws', getterThrows('ref')]
    ]) {
      it(`${name}: ${name === 'ref getter throws' ? 'the error propagates' : 'TypeError'}, nothing changes`, () => {
        const before = state()
        const o = outcome(() => tl.waitAsync(ta, 1, 7, undefined, options))
        if (name === 'ref getter throws') assert.strictEqual(o.error, boom)
        else assert.ok(o.error instanceof TypeError, describeOutcome(o))
        assert.deepStrictEqual(state(), before)
      })
    }
  })

  it('notify with a huge count wakes the waiters of that element only', async () => {
    const other = i32(2)
    const pending = [0, 1, 2].map(() => tl.waitAsync(other, 0, 7))
    const before = state()
    assert.strictEqual(tl.notify(other, 0, 2 ** 64), 3)
    assert.deepStrictEqual(await Promise.all(pending.map((p) => p.value)), ['ok', 'ok', 'ok'])
    assert.deepStrictEqual(state(), before)
  })

  // AsyncLock: [description, call, expected]; expected is an error
  // constructor, `boom` for an error that must propagate unchanged, or a
  // function that checks a returned value.
  const noop = () => {}
  const lockRows = () => [
    ['constructor', 'null buffer', () => new AsyncLock(null), TypeError],
    ['constructor', 'a number', () => new AsyncLock(4), TypeError],
    ['constructor', 'a string', () => new AsyncLock('sab'), TypeError],
    ['constructor', 'a Symbol', () => new AsyncLock(Symbol('sab')), TypeError],
    ['constructor', 'a plain object', () => new AsyncLock({ byteLength: 4 }), TypeError],
    ['constructor', 'a non-shared ArrayBuffer', () => new AsyncLock(new ArrayBuffer(4)), TypeError],
    ['constructor', 'an Int32Array over a SharedArrayBuffer', () => new AsyncLock(new Int32Array(sab(4))), TypeError],
    ['constructor', 'a zero-length buffer', () => new AsyncLock(sab(0)), RangeError],
    ['constructor', 'a too-short buffer', () => new AsyncLock(sab(2)), RangeError],
    ['constructor', 'offset at the end', () => new AsyncLock(lock.buffer, 8), RangeError],
    ['constructor', 'misaligned offset', () => new AsyncLock(lock.buffer, 2), RangeError],
    ['constructor', 'negative offset', () => new AsyncLock(lock.buffer, -4), RangeError],
    ['constructor', 'offset 2^53', () => new AsyncLock(lock.buffer, 2 ** 53), RangeError],
    ['constructor', 'fractional offset', () => new AsyncLock(lock.buffer, 1.5), RangeError],
    ['constructor', 'offset NaN', () => new AsyncLock(lock.buffer, NaN), RangeError],
    ['constructor', 'offset Infinity', () => new AsyncLock(lock.buffer, Infinity), RangeError],
    ['constructor', 'offset a string', () => new AsyncLock(lock.buffer, '0'), TypeError],
    ['constructor', 'offset null', () => new AsyncLock(lock.buffer, null), TypeError],
    ['constructor', 'offset a BigInt', () => new AsyncLock(lock.buffer, 0n), TypeError],
    ['constructor', 'offset a Symbol', () => new AsyncLock(lock.buffer, Symbol('o')), TypeError],
    ['constructor', 'offset an object with valueOf (not coerced)', () => new AsyncLock(lock.buffer, logged('offset', 0)), TypeError],
    ['constructor', 'offset whose valueOf throws (not coerced)', () => new AsyncLock(lock.buffer, poisoned('offset')), TypeError],
    ['constructor', 'called without new', () => AsyncLock(lock.buffer), TypeError],
    ['from', 'no handle', () => AsyncLock.from(), TypeError],
    ['from', 'null', () => AsyncLock.from(null), TypeError],
    ['from', 'a string', () => AsyncLock.from('lock'), TypeError],
    ['from', 'a SharedArrayBuffer instead of a handle', () => AsyncLock.from(lock.buffer), TypeError],
    ['from', 'an empty object', () => AsyncLock.from({}), TypeError],
    ['from', 'a non-shared buffer', () => AsyncLock.from({ buffer: new ArrayBuffer(8) }), TypeError],
    ['from', 'misaligned offset', () => AsyncLock.from({ buffer: lock.buffer, byteOffset: 6 }), RangeError],
    ['from', 'out-of-range offset', () => AsyncLock.from({ buffer: lock.buffer, byteOffset: 8 }), RangeError],
    ['from', 'buffer getter throws', () => AsyncLock.from(getterThrows('buffer')), boom],
    ['lock', 'options null', () => lock.lock(null), TypeError],
    ['lock', 'options a number', () => lock.lock(100), TypeError],
    ['lock', 'options a string', () => lock.lock('100'), TypeError],
    ['lock', 'timeout -1', () => lock.lock({ timeout: -1 }), RangeError],
    ['lock', 'timeout -Infinity', () => lock.lock({ timeout: -Infinity }), RangeError],
    ['lock', 'timeout NaN', () => lock.lock({ timeout: NaN }), RangeError],
    ['lock', 'timeout a string', () => lock.lock({ timeout: '10' }), TypeError],
    ['lock', 'timeout a BigInt', () => lock.lock({ timeout: 10n }), TypeError],
    ['lock', 'timeout a Symbol', () => lock.lock({ timeout: Symbol('t') }), TypeError],
    ['lock', 'timeout with a throwing valueOf (not coerced)', () => lock.lock({ timeout: poisoned('timeout') }), TypeError],
    ['lock', 'timeout getter throws', () => lock.lock(getterThrows('timeout')), boom],
    ['lock', 'wrong receiver', () => AsyncLock.prototype.lock.call({}), TypeError],
    ['tryLock', 'wrong receiver', () => AsyncLock.prototype.tryLock.call({}), TypeError],
    ['tryLock', 'extra arguments are ignored', () => lock.tryLock(Symbol('x'), poisoned('x')), (v) => v === false],
    ['unlock', 'by a thread that does not hold it', () => lock.unlock(), LockError],
    ['unlock', 'wrong receiver', () => AsyncLock.prototype.unlock.call(null), TypeError],
    ['acquire', 'options null', () => lock.acquire(null), TypeError],
    ['acquire', 'options a number', () => lock.acquire(5), TypeError],
    ['acquire', 'options a Symbol', () => lock.acquire(Symbol('o')), TypeError],
    ['acquire', 'blocking a string', () => lock.acquire({ blocking: 'no' }), TypeError],
    ['acquire', 'blocking a number', () => lock.acquire({ blocking: 0 }), TypeError],
    ['acquire', 'timeout -1', () => lock.acquire({ timeout: -1 }), RangeError],
    ['acquire', 'timeout NaN', () => lock.acquire({ timeout: NaN }), RangeError],
    ['acquire', 'timeout a string', () => lock.acquire({ timeout: '1' }), TypeError],
    ['acquire', 'timeout a Symbol', () => lock.acquire({ timeout: Symbol('t') }), TypeError],
    ['acquire', 'a bad timeout with blocking: false', () => lock.acquire({ blocking: false, timeout: 'x' }), TypeError],
    ['acquire', 'signal a plain object', () => lock.acquire({ signal: { aborted: false } }), TypeError],
    ['acquire', 'signal an EventTarget', () => lock.acquire({ signal: new EventTarget() }), TypeError],
    ['acquire', 'signal an AbortController', () => lock.acquire({ signal: new AbortController() }), TypeError],
    ['acquire', 'signal null', () => lock.acquire({ signal: null }), TypeError],
    ['acquire', 'ref a string', () => lock.acquire({ ref: 'no' }), TypeError],
    ['acquire', 'blocking getter throws', () => lock.acquire(getterThrows('blocking')), boom],
    ['acquire', 'wrong receiver', () => AsyncLock.prototype.acquire.call({}), TypeError],
    ['runExclusive', 'no callback', () => lock.runExclusive(), TypeError],
    ['runExclusive', 'callback null', () => lock.runExclusive(null), TypeError],
    ['runExclusive', 'callback a string', () => lock.runExclusive('noop'), TypeError],
    ['runExclusive', 'callback a Symbol', () => lock.runExclusive(Symbol('f')), TypeError],
    ['runExclusive', 'callback an object', () => lock.runExclusive({ call () {} }), TypeError],
    ['runExclusive', 'options a number', () => lock.runExclusive(noop, 1), TypeError],
    ['runExclusive', 'timeout -5', () => lock.runExclusive(noop, { timeout: -5 }), RangeError],
    ['runExclusive', 'timeout NaN', () => lock.runExclusive(noop, { timeout: NaN }), RangeError],
    ['runExclusive', 'signal a string', () => lock.runExclusive(noop, { signal: 'abort' }), TypeError],
    ['runExclusive', 'blocking null', () => lock.runExclusive(noop, { blocking: null }), TypeError],
    ['runExclusive', 'wrong receiver', () => AsyncLock.prototype.runExclusive.call({}, noop), TypeError],
    ['executeLocked', 'no function', () => lock.executeLocked(), TypeError],
    ['executeLocked', 'null', () => lock.executeLocked(null), TypeError],
    ['executeLocked', 'a number', () => lock.executeLocked(42), TypeError],
    ['executeLocked', 'a Symbol', () => lock.executeLocked(Symbol('f')), TypeError],
    ['executeLocked', 'a promise', () => lock.executeLocked(Promise.resolve()), TypeError],
    ['executeLocked', 'wrong receiver', () => AsyncLock.prototype.executeLocked.call({}, noop), TypeError]
  ]

  const PROMISED = new Set(['acquire', 'runExclusive', 'executeLocked'])

  describe('AsyncLock', () => {
    for (const [method, name, call, expected] of lockRows()) {
      it(`${method}: ${name}`, async () => {
        const before = state()
        const heldBefore = [held.locked, held.owner]
        let o = method === 'lock' ? guarded(`lock: ${name}`, () => outcome(call)) : outcome(call)
        const coerced = o.log
        if (PROMISED.has(method)) {
          assert.ok(!('error' in o), `${method} threw synchronously (${describeOutcome(o)}) instead of returning a rejected promise`)
          assert.ok(o.value instanceof Promise, `${method} did not return a promise`)
          o = await within(o.value.then((value) => ({ value }), (error) => ({ error })), 5000,
            `${method} did not settle`)
        }
        if (expected === boom) {
          assert.strictEqual(o.error, boom, describeOutcome(o))
        } else if (expected.prototype instanceof Error) {
          assert.ok(o.error instanceof expected, `expected a ${expected.name}, ${describeOutcome(o)}`)
          assert.ok(o.error.message.length > 10, `unclear message: ${o.error.message}`)
          if (expected === LockError) assert.strictEqual(o.error.code, 'ENOTOWNER')
          if (!/receiver|without new/.test(name)) {
            assert.match(o.error.message, new RegExp(method === 'constructor' ? 'AsyncLock' : method),
              'the message should name the function')
          }
          assert.deepStrictEqual(coerced, [], 'AsyncLock does not coerce its arguments')
        } else {
          assert.ok(!('error' in o), describeOutcome(o))
          assert.ok(expected(o.value), describeOutcome(o))
        }
        assert.deepStrictEqual(state(), before)
        assert.deepStrictEqual([held.locked, held.owner], heldBefore)
      })
    }
  })
})
