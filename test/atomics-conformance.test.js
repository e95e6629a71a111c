'use strict'

// Differential conformance suite: every case below runs once against the
// built-in Atomics and once against threadlock, and both must behave the
// same, because threadlock promises the ECMA-262 semantics of Atomics.wait,
// Atomics.notify and Atomics.waitAsync (DoWait, ValidateIntegerTypedArray,
// ValidateAtomicAccess, ToIndex, ToInt32, ToBigInt64, ToIntegerOrInfinity).
// Case names follow the file names of the language's conformance suite under
// built-ins/Atomics/{wait,notify,waitAsync}; "bigint/" cases use a
// BigInt64Array. Only single-threaded behaviour is checked here; blocking
// waits across threads are in atomics-threads.test.js.
//
// The two implementations keep separate waiter lists, so every case waits
// and notifies through the same implementation.

const assert = require('assert')
const vm = require('vm')
const threadlock = require('..')
const { until, sleep } = require('./fixtures/threads')

const IMPLS = [['Atomics', Atomics], ['threadlock', threadlock]]

// Node 20 ships Atomics.waitAsync unflagged; the differential cases below
// rely on it. Fail loudly rather than silently testing less.
assert.strictEqual(typeof Atomics.waitAsync, 'function',
  'this Node.js has no Atomics.waitAsync to compare threadlock with')

const KINDS = [
  { prefix: '', Ctor: Int32Array, big: false, v: (n) => n },
  { prefix: 'bigint/', Ctor: BigInt64Array, big: true, v: (n) => BigInt(n) }
]

// Every integer and float view type except the two that can be waited on.
const NON_WAITABLE_TYPES = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array,
  Uint32Array, Float32Array, Float64Array, BigUint64Array
]
if (typeof globalThis.Float16Array === 'function') {
  NON_WAITABLE_TYPES.push(globalThis.Float16Array)
}

class Poison extends Error {}

// An object whose conversion to a primitive throws a Poison that names it,
// so that a test can tell which argument was coerced.
function poisoned (label) {
  const fail = () => { throw new Poison(`${label} coerced`) }
  return { [Symbol.toPrimitive]: fail, valueOf: fail, toString: fail }
}

function isPoison (label) {
  return (err) => err instanceof Poison && err.message === `${label} coerced`
}

// Every shared view a case creates, so that the hook below can wake what a
// failed case left waiting: a pending threadlock waiter keeps the event loop
// alive, and mocha would never exit.
const views = new Set()

function remember (ta) {
  views.add(ta)
  return ta
}

afterEach(() => {
  for (const ta of views) {
    for (const [, impl] of IMPLS) {
      for (let k = 0; k < ta.length; k++) impl.notify(ta, k)
    }
  }
  views.clear()
})

function shared (Ctor, length = 4) {
  const ta = new Ctor(new SharedArrayBuffer(Ctor.BYTES_PER_ELEMENT * length))
  return Ctor === Int32Array || Ctor === BigInt64Array ? remember(ta) : ta
}

function nonShared (Ctor, length = 4) {
  return new Ctor(new ArrayBuffer(Ctor.BYTES_PER_ELEMENT * length))
}

function detached (Ctor) {
  const ta = nonShared(Ctor)
  structuredClone(ta.buffer, { transfer: [ta.buffer] })
  assert.strictEqual(ta.length, 0)
  return ta
}

// A view of a resizable ArrayBuffer that shrank below it: out of bounds.
function outOfBounds (Ctor) {
  const rab = new ArrayBuffer(Ctor.BYTES_PER_ELEMENT * 4,
    { maxByteLength: Ctor.BYTES_PER_ELEMENT * 4 })
  const ta = new Ctor(rab, Ctor.BYTES_PER_ELEMENT, 2)
  rab.resize(Ctor.BYTES_PER_ELEMENT)
  assert.strictEqual(ta.length, 0)
  return ta
}

function primitivesThatAreNotViews () {
  return [null, undefined, true, false, 0, 10, 3.14, NaN, 'Hi there', '',
    1n, Symbol('not a view')]
}

function objectsThatAreNotViews () {
  return [
    new Boolean(true), new Number(4), new String('x'), new Date(), /a*b/g,
    { password: 'qumquat' }, { length: 1, 0: 0 }, new ArrayBuffer(16),
    new SharedArrayBuffer(16), new DataView(new SharedArrayBuffer(16)),
    new Error('ouch'), [1, 1, 2, 3, 5, 8], (x) => -x, new Map(), new Set(),
    new WeakMap(), new WeakSet(), Promise.resolve(), Object, Int32Array,
    Math, Atomics, Object.create(Int32Array.prototype),
    new Proxy(shared(Int32Array), {})
  ]
}

// Indices that ToIndex or the length check reject, for a view of length 4.
function outOfRangeIndices (view) {
  const length = view.length
  return [
    ['-1', -1],
    ['"-1"', '-1'],
    ['view.length', length],
    ['view.length * 2', length * 2],
    ['2 ** 53 - 1', 2 ** 53 - 1],
    ['2 ** 53', 2 ** 53],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['{ valueOf: () => length }', { valueOf: () => length }],
    ['{ toString: () => "length", valueOf: false }',
      { toString: () => String(length), valueOf: false }]
  ]
}

// Indices ToIndex accepts, with the element each one designates.
function inRangeIndices (view) {
  const last = view.length - 1
  return [
    ['-0', -0, 0],
    ['"-0"', '-0', 0],
    ['undefined', undefined, 0],
    ['null', null, 0],
    ['false', false, 0],
    ['true', true, 1],
    ['NaN', NaN, 0],
    ['0.5', 0.5, 0],
    ['"0.5"', '0.5', 0],
    ['-0.9', -0.9, 0],
    ['1.9', 1.9, 1],
    ['"2"', '2', 2],
    ['" 0x2 "', ' 0x2 ', 2],
    ['"junk"', 'junk', 0],
    ['{ password }', { password: 'qumquat' }, 0],
    ['view.length - 1', last, last],
    ['{ valueOf: () => 3 }', { valueOf: () => 3 }, 3],
    ['{ toString: () => "1", valueOf: false }',
      { toString: () => '1', valueOf: false }, 1],
    ['{ [Symbol.toPrimitive]: () => 2 }', { [Symbol.toPrimitive]: () => 2 }, 2]
  ]
}

const NANS = [NaN, Number.NaN, 0 / 0, Infinity / Infinity, -(0 / 0),
  Math.pow(-1, 0.5), Number('Not-a-Number'), 'junk', {}, [1, 2]]

// An object that logs every observable step of its conversion to a
// primitive: the lookups of @@toPrimitive, valueOf and toString, and the
// calls. `mode` picks which conversion produces the primitive.
function traced (log, label, primitive, mode = 'valueOf') {
  return {
    get [Symbol.toPrimitive] () {
      log.push(`get ${label}[@@toPrimitive]`)
      if (mode !== 'toPrimitive') return undefined
      return (hint) => {
        log.push(`call ${label}[@@toPrimitive](${hint})`)
        return primitive
      }
    },
    get valueOf () {
      log.push(`get ${label}.valueOf`)
      if (mode === 'toString') return 42 // not callable: skipped
      return () => {
        log.push(`call ${label}.valueOf`)
        return mode === 'valueOfObject' ? {} : primitive
      }
    },
    get toString () {
      log.push(`get ${label}.toString`)
      return () => {
        log.push(`call ${label}.toString`)
        return String(primitive)
      }
    }
  }
}

// The log `traced` writes for a conversion with hint "number".
function expectedSteps (label, mode) {
  const get = (p) => `get ${label}${p}`
  const call = (p) => `call ${label}${p}`
  switch (mode) {
    case 'toPrimitive':
      return [get('[@@toPrimitive]'), call('[@@toPrimitive](number)')]
    case 'valueOf':
      return [get('[@@toPrimitive]'), get('.valueOf'), call('.valueOf')]
    case 'valueOfObject':
      return [get('[@@toPrimitive]'), get('.valueOf'), call('.valueOf'),
        get('.toString'), call('.toString')]
    case 'toString':
      return [get('[@@toPrimitive]'), get('.valueOf'), get('.toString'),
        call('.toString')]
  }
  throw new Error(`unknown mode ${mode}`)
}

const MODES = ['valueOf', 'toString', 'valueOfObject', 'toPrimitive']

function nowMs () {
  return Number(process.hrtime.bigint()) / 1e6
}

// Tracks whether a promise has settled, without awaiting it.
function track (promise) {
  const state = { settled: false, value: undefined }
  state.done = promise.then((value) => {
    state.settled = true
    state.value = value
    return value
  })
  return state
}

// Runs `badCalls` while one async waiter sits on `ta[index]`, then proves
// that the calls neither woke it nor added a waiter anywhere in `ta`: after
// a pause the waiter is still pending, a notify of its element wakes exactly
// one waiter, and every other element has none.
async function assertNoWaiterChange (impl, ta, index, badCalls) {
  const sentinel = impl.waitAsync(ta, index, ta[index])
  assert.strictEqual(sentinel.async, true)
  const state = track(sentinel.value)
  badCalls()
  await sleep(5)
  assert.strictEqual(state.settled, false, 'a bad call woke the waiter')
  assert.strictEqual(impl.notify(ta, index), 1,
    'a bad call added or removed a waiter on that element')
  assert.strictEqual(await state.done, 'ok')
  for (let k = 0; k < ta.length; k++) {
    assert.strictEqual(impl.notify(ta, k), 0,
      `a bad call left a waiter on element ${k}`)
  }
}

// Enqueues `n` async waiters on ta[index] and returns their trackers.
function asyncWaiters (impl, ta, index, n) {
  const out = []
  for (let k = 0; k < n; k++) {
    const r = impl.waitAsync(ta, index, ta[index])
    assert.strictEqual(r.async, true)
    out.push(track(r.value))
  }
  return out
}

// Waits for the waiters that `mask` marks as woken to resolve with "ok",
// then, after a pause, checks that the others are still pending (a pending
// promise can only be observed by waiting a while for nothing to happen).
async function expectWoken (trackers, mask) {
  assert.strictEqual(trackers.length, mask.length)
  const woken = trackers.filter((t, k) => mask[k])
  for (const outcome of await Promise.all(woken.map((t) => t.done))) {
    assert.strictEqual(outcome, 'ok')
  }
  await sleep(5)
  assert.deepStrictEqual(trackers.map((t) => t.settled), mask)
}

function assertResult (result, async, value) {
  assert.strictEqual(Object.getPrototypeOf(result), Object.prototype)
  assert.deepStrictEqual(Reflect.ownKeys(result), ['async', 'value'])
  for (const key of ['async', 'value']) {
    const d = Object.getOwnPropertyDescriptor(result, key)
    assert.strictEqual(d.writable, true, `${key} is writable`)
    assert.strictEqual(d.enumerable, true, `${key} is enumerable`)
    assert.strictEqual(d.configurable, true, `${key} is configurable`)
  }
  assert.strictEqual(result.async, async)
  if (async) {
    assert.ok(result.value instanceof Promise)
    assert.strictEqual(Object.getPrototypeOf(result.value), Promise.prototype)
  } else {
    assert.strictEqual(result.value, value)
  }
}

for (const [name, impl] of IMPLS) {
  // A timeout must never end a wait early. Node 20's own Atomics.waitAsync
  // does resolve early at times (its timer runs on the event loop's cached
  // millisecond clock: a 1 ms wait was seen to end after 0.01 ms, a 25.3 ms
  // one after 24.3 ms, more when the loop is busy), so the lower bound is
  // checked on threadlock only; the outcome is checked on both.
  const assertNotEarly = (elapsed, timeout) => {
    if (impl === Atomics) return
    assert.ok(elapsed >= timeout, `a ${timeout} ms timeout ended after ${elapsed} ms`)
  }

  describe(`conformance (${name})`, function () {
    describe('function objects', () => {
      const expected = { wait: 4, notify: 3, waitAsync: 4 }
      for (const fn of Object.keys(expected)) {
        it(`${fn}/length`, () => {
          assert.strictEqual(impl[fn].length, expected[fn])
          assert.deepStrictEqual(
            Object.getOwnPropertyDescriptor(impl[fn], 'length'),
            { value: expected[fn], writable: false, enumerable: false, configurable: true })
        })

        it(`${fn}/name`, () => {
          assert.deepStrictEqual(
            Object.getOwnPropertyDescriptor(impl[fn], 'name'),
            { value: fn, writable: false, enumerable: false, configurable: true })
        })

        it(`${fn}/not-a-constructor`, () => {
          assert.strictEqual(typeof impl[fn], 'function')
          assert.deepStrictEqual(Object.getOwnPropertyNames(impl[fn]).sort(),
            ['length', 'name'])
          assert.strictEqual(Object.getPrototypeOf(impl[fn]), Function.prototype)
          // Reflect.construct with the function as newTarget throws exactly
          // when the function has no [[Construct]], without calling it.
          assert.throws(() => Reflect.construct(function () {}, [], impl[fn]), TypeError)
          assert.throws(() => new impl[fn](shared(Int32Array), 0, 1, 0), TypeError)
        })
      }
    })

    for (const fn of ['wait', 'waitAsync']) {
      const call = (...args) => impl[fn](...args)
      // What the call returns for a result that is not a promise.
      const settledAs = (value) => (r) => {
        if (fn === 'wait') assert.strictEqual(r, value)
        else assertResult(r, false, value)
      }

      describe(fn, () => {
        for (const { prefix, Ctor, big, v } of KINDS) {
          it(`${prefix}not-an-object-throws`, async () => {
            const p = poisoned('argument')
            for (const value of primitivesThatAreNotViews()) {
              assert.throws(() => call(value, p, p, p), TypeError, String(value))
            }
          })

          it(`${prefix}not-a-typedarray-throws`, async () => {
            const ta = shared(Ctor)
            const p = poisoned('argument')
            await assertNoWaiterChange(impl, ta, 0, () => {
              for (const value of objectsThatAreNotViews()) {
                assert.throws(() => call(value, p, p, p), TypeError)
              }
            })
          })

          it(`${prefix}${big ? 'non-bigint64' : 'non-int32'}-typedarray-throws`, () => {
            const p = poisoned('argument')
            for (const Bad of NON_WAITABLE_TYPES) {
              assert.throws(() => call(shared(Bad), 0, v(0), 0), TypeError, Bad.name)
              assert.throws(() => call(shared(Bad), p, p, p), TypeError, Bad.name)
            }
          })

          for (const arg of ['index', 'value', 'timeout']) {
            it(`${prefix}validate-arraytype-before-${arg}-coercion`, () => {
              const args = { index: 0, value: v(0), timeout: 0 }
              args[arg] = poisoned(arg)
              for (const Bad of NON_WAITABLE_TYPES) {
                assert.throws(() => call(shared(Bad), args.index, args.value, args.timeout),
                  TypeError, Bad.name)
              }
              // With a waitable type the same argument is coerced.
              assert.throws(() => call(shared(Ctor), args.index, args.value, args.timeout),
                isPoison(arg))
            })
          }

          it(`${prefix}non-shared-bufferdata-throws`, () => {
            const p = poisoned('argument')
            assert.throws(() => call(nonShared(Ctor), 0, v(0), 0), TypeError)
            assert.throws(() => call(nonShared(Ctor), p, p, p), TypeError)
            // Even an index that is out of range: the buffer is checked first.
            assert.throws(() => call(nonShared(Ctor), 99, p, p), TypeError)
          })

          it(`${prefix}nonshared-int-views-throws`, () => {
            const p = poisoned('argument')
            for (const Type of [Ctor, ...NON_WAITABLE_TYPES]) {
              assert.throws(() => call(nonShared(Type), p, p, p), TypeError, Type.name)
            }
          })

          it(`${prefix}null-bufferdata-throws`, () => {
            const p = poisoned('argument')
            assert.throws(() => call(detached(Ctor), p, p, p), TypeError)
            assert.throws(() => call(detached(Ctor), 0, v(0), 0), TypeError)
          })

          it(`${prefix}out-of-bounds-typedarray-throws`, () => {
            const p = poisoned('argument')
            assert.throws(() => call(outOfBounds(Ctor), p, p, p), TypeError)
          })

          it(`${prefix}bad-range`, async () => {
            const ta = shared(Ctor)
            const value = poisoned('value')
            const timeout = poisoned('timeout')
            await assertNoWaiterChange(impl, ta, 1, () => {
              for (const [label, index] of outOfRangeIndices(ta)) {
                assert.throws(() => call(ta, index, value, timeout), RangeError, label)
              }
            })
          })

          it(`${prefix}out-of-range-index-throws`, () => {
            const ta = shared(Ctor)
            const p = poisoned('later argument')
            for (const index of [Infinity, 4, 200]) {
              assert.throws(() => call(ta, index, p, p), RangeError, String(index))
            }
          })

          it(`${prefix}negative-index-throws`, () => {
            const ta = shared(Ctor)
            const p = poisoned('later argument')
            for (const index of [-Infinity, -7.999, -1, -300]) {
              assert.throws(() => call(ta, index, p, p), RangeError, String(index))
            }
          })

          it(`${prefix}good-views`, () => {
            // A view at an offset into a larger buffer, as the suite uses.
            const ta = remember(new Ctor(new SharedArrayBuffer(1024), 32, 20))
            for (const [label, index, element] of inRangeIndices(ta)) {
              ta.fill(v(0))
              Atomics.store(ta, element, v(37))
              settledAs('not-equal')(call(ta, index, v(0), 0))
              settledAs('timed-out')(call(ta, index, v(37), 0))
              assert.strictEqual(ta[element], v(37), label)
            }
          })

          it(`${prefix}undefined-index-defaults-to-zero`, () => {
            const ta = shared(Ctor)
            ta[0] = v(5)
            settledAs('timed-out')(call(ta, undefined, v(5), 0))
            settledAs('not-equal')(call(ta, undefined, v(0), 0))
          })

          it(`${prefix}symbol-for-index-throws`, async () => {
            const ta = shared(Ctor)
            const later = poisoned('later argument')
            await assertNoWaiterChange(impl, ta, 0, () => {
              assert.throws(() => call(ta, Symbol('1'), later, later), TypeError)
              assert.throws(() => call(ta, poisoned('index'), later, later), isPoison('index'))
              assert.throws(() => call(ta, { [Symbol.toPrimitive]: () => Symbol('x') }, later, later),
                TypeError)
            })
          })

          it(`${prefix}bigint-for-index-throws`, () => {
            const ta = shared(Ctor)
            const later = poisoned('later argument')
            assert.throws(() => call(ta, 0n, later, later), TypeError)
            assert.throws(() => call(ta, { valueOf: () => 1n }, later, later), TypeError)
          })

          it(`${prefix}symbol-for-value-throws`, async () => {
            const ta = shared(Ctor)
            const timeout = poisoned('timeout')
            await assertNoWaiterChange(impl, ta, 0, () => {
              assert.throws(() => call(ta, 0, Symbol('1'), timeout), TypeError)
              assert.throws(() => call(ta, 0, poisoned('value'), timeout), isPoison('value'))
              assert.throws(() => call(ta, 0, { valueOf: () => Symbol('x') }, timeout), TypeError)
            })
          })

          it(`${prefix}symbol-for-timeout-throws`, async () => {
            const ta = shared(Ctor)
            await assertNoWaiterChange(impl, ta, 0, () => {
              assert.throws(() => call(ta, 0, v(0), Symbol('1')), TypeError)
              assert.throws(() => call(ta, 0, v(0), poisoned('timeout')), isPoison('timeout'))
              assert.throws(() => call(ta, 0, v(0), { [Symbol.toPrimitive]: () => Symbol('x') }),
                TypeError)
            })
          })

          it(`${prefix}bigint-for-timeout-throws`, () => {
            const ta = shared(Ctor)
            assert.throws(() => call(ta, 0, v(0), 0n), TypeError)
            assert.throws(() => call(ta, 0, v(0), { valueOf: () => 10n }), TypeError)
          })

          it(`${prefix}poisoned-object-for-timeout-throws`, async () => {
            const ta = shared(Ctor)
            await assertNoWaiterChange(impl, ta, 0, () => {
              assert.throws(() => call(ta, 0, v(0), { valueOf: false, toString: false }), TypeError)
              assert.throws(() => call(ta, 0, v(0), { valueOf: () => ({}), toString: () => ({}) }),
                TypeError)
            })
          })

          it(`${prefix}object-for-timeout`, () => {
            const ta = shared(Ctor)
            for (const timeout of [
              { valueOf: () => 0 },
              { toString: () => '0' },
              { [Symbol.toPrimitive]: () => 0 },
              { valueOf: () => -1 },
              { valueOf: false, toString: () => '-Infinity' }
            ]) {
              settledAs('timed-out')(call(ta, 0, v(0), timeout))
            }
          })

          it(`${prefix}false-for-timeout`, () => {
            const ta = shared(Ctor)
            settledAs('timed-out')(call(ta, 0, v(0), false))
            settledAs('timed-out')(call(ta, 0, v(0), { valueOf: () => false }))
          })

          it(`${prefix}null-for-timeout`, () => {
            const ta = shared(Ctor)
            settledAs('timed-out')(call(ta, 0, v(0), null))
            settledAs('timed-out')(call(ta, 0, v(0), { valueOf: () => null }))
            settledAs('timed-out')(call(ta, 0, v(0), ''))
            settledAs('timed-out')(call(ta, 0, v(0), []))
          })

          it(`${prefix}negative-timeout`, () => {
            const ta = shared(Ctor)
            for (const timeout of [-5, -0, -Infinity, '-1', -Number.MIN_VALUE]) {
              settledAs('timed-out')(call(ta, 0, v(0), timeout))
            }
          })

          it(`${prefix}value-not-equal`, () => {
            const ta = shared(Ctor)
            Atomics.store(ta, 0, v(42))
            for (const timeout of [0, 10, Infinity, undefined, NaN]) {
              settledAs('not-equal')(call(ta, 0, v(0), timeout))
            }
            settledAs('not-equal')(call(ta, 1, v(42), Infinity))
          })

          if (!big) {
            it('wait-index-value-not-equal', () => {
              const ta = shared(Int32Array, 256)
              settledAs('not-equal')(call(ta, 0, 44, 1000))
              settledAs('not-equal')(call(ta, 0, 251.4, 1000))
            })

            it('value-coerced-by-toint32', () => {
              const ta = shared(Int32Array)
              ta[0] = -1
              for (const value of [-1, 2 ** 32 - 1, -1.9, '-1', '0xffffffff', 4294967295.5,
                { valueOf: () => -1 }, -(2 ** 32) - 1]) {
                settledAs('timed-out')(call(ta, 0, value, 0))
              }
              ta[0] = 0
              for (const value of [0, -0, NaN, Infinity, -Infinity, 2 ** 32, 0.9, undefined,
                null, false, '', 'junk', {}, []]) {
                settledAs('timed-out')(call(ta, 0, value, 0))
              }
              assert.throws(() => call(ta, 0, 0n, 0), TypeError)
              assert.throws(() => call(ta, 0, { valueOf: () => 0n }, 0), TypeError)
            })
          } else {
            it('bigint/value-coerced-by-tobigint64', () => {
              const ta = shared(BigInt64Array)
              ta[0] = -1n
              for (const value of [-1n, 2n ** 64n - 1n, -(2n ** 64n) - 1n, '-1',
                { valueOf: () => -1n }, { toString: () => '-1', valueOf: false }]) {
                settledAs('timed-out')(call(ta, 0, value, 0))
              }
              ta[0] = 1n
              settledAs('timed-out')(call(ta, 0, true, 0))
              settledAs('timed-out')(call(ta, 0, 2n ** 64n + 1n, 0))
              settledAs('not-equal')(call(ta, 0, false, 0))
              ta[0] = 0n
              settledAs('timed-out')(call(ta, 0, '', 0))
              settledAs('timed-out')(call(ta, 0, ' 0x0 ', 0))
              settledAs('timed-out')(call(ta, 0, -(2n ** 63n) * 2n, 0))
            })

            it('bigint/non-bigint-value-throws', () => {
              const ta = shared(BigInt64Array)
              const timeout = poisoned('timeout')
              for (const value of [0, 1, NaN, undefined, null, { valueOf: () => 0 }]) {
                assert.throws(() => call(ta, 0, value, timeout), TypeError, String(value))
              }
              assert.throws(() => call(ta, 0, 'junk', timeout), SyntaxError)
              assert.throws(() => call(ta, 0, '1.5', timeout), SyntaxError)
            })
          }

          it(`${prefix}argument-coercion-order`, () => {
            const ta = shared(Ctor)
            for (const mode of MODES) {
              const log = []
              const r = call(ta,
                traced(log, 'index', 1, mode),
                traced(log, 'value', big ? 3n : 3, mode),
                traced(log, 'timeout', 0, mode))
              settledAs('not-equal')(r)
              assert.deepStrictEqual(log, [
                ...expectedSteps('index', mode),
                ...expectedSteps('value', mode),
                ...expectedSteps('timeout', mode)
              ], mode)
            }
          })

          it(`${prefix}each-argument-coerced-once-before-the-wait`, () => {
            const ta = shared(Ctor)
            const counts = { index: 0, value: 0, timeout: 0 }
            const once = (label, x) => ({ valueOf () { counts[label]++; return x } })
            settledAs('timed-out')(call(ta, once('index', 2), once('value', v(0)), once('timeout', 0)))
            assert.deepStrictEqual(counts, { index: 1, value: 1, timeout: 1 })
            // The value is read after every coercion: a store made by the
            // timeout's valueOf is seen by the comparison.
            const r = call(ta, 2, v(0), { valueOf () { Atomics.store(ta, 2, v(9)); return 0 } })
            settledAs('not-equal')(r)
          })

          it(`${prefix}error-in-later-argument-stops-the-call`, async () => {
            const ta = shared(Ctor)
            await assertNoWaiterChange(impl, ta, 2, () => {
              const log = []
              assert.throws(() => call(ta, traced(log, 'index', 2), poisoned('value'),
                traced(log, 'timeout', 0)), isPoison('value'))
              assert.deepStrictEqual(log, expectedSteps('index', 'valueOf'))
            })
          })

          it(`${prefix}true-for-timeout`, async () => {
            const ta = shared(Ctor)
            const start = nowMs()
            const r = call(ta, 0, v(0), true)
            if (fn === 'wait') {
              assert.strictEqual(r, 'timed-out')
            } else {
              assertResult(r, true)
              assert.strictEqual(await r.value, 'timed-out')
            }
            assertNotEarly(nowMs() - start, 1)
          })

          it(`${prefix}did-timeout`, async () => {
            const ta = shared(Ctor)
            for (const timeout of [25, { valueOf: () => 25 }, '25', 24.5]) {
              const start = nowMs()
              const r = call(ta, 0, v(0), timeout)
              const outcome = fn === 'wait' ? r : await r.value
              const elapsed = nowMs() - start
              assert.strictEqual(outcome, 'timed-out')
              assertNotEarly(elapsed, Number(timeout))
              assert.ok(elapsed < 5000, `timed out only after ${elapsed} ms`)
            }
          })

          if (fn === 'wait') {
            it(`${prefix}suspends-the-agent-no-job-runs-during-the-wait`, () => {
              const ta = shared(Ctor)
              const ran = []
              Promise.resolve().then(() => ran.push('promise job'))
              process.nextTick(() => ran.push('next tick'))
              assert.strictEqual(call(ta, 0, v(0), 40), 'timed-out')
              assert.deepStrictEqual(ran, [])
            })
          }

          it(`${prefix}cross-realm-typedarray`, () => {
            const ta = vm.runInNewContext(
              `new ${Ctor.name}(new SharedArrayBuffer(${Ctor.BYTES_PER_ELEMENT * 2}))`)
            settledAs('timed-out')(call(ta, 1, v(0), 0))
            Atomics.store(ta, 1, v(3))
            settledAs('not-equal')(call(ta, 1, v(0), 0))
            assert.throws(() => call(vm.runInNewContext(`new ${Ctor.name}(2)`), 0, v(0), 0),
              TypeError)
          })

          it(`${prefix}subclass-typedarray`, () => {
            class Sub extends Ctor {}
            const ta = new Sub(new SharedArrayBuffer(Ctor.BYTES_PER_ELEMENT * 2))
            settledAs('timed-out')(call(ta, 1, v(0), 0))
          })

          it(`${prefix}growable-sharedarraybuffer`, () => {
            const gsab = new SharedArrayBuffer(Ctor.BYTES_PER_ELEMENT,
              { maxByteLength: Ctor.BYTES_PER_ELEMENT * 4 })
            const tracking = new Ctor(gsab)
            assert.throws(() => call(tracking, 2, v(0), 0), RangeError)
            gsab.grow(Ctor.BYTES_PER_ELEMENT * 3)
            settledAs('timed-out')(call(tracking, 2, v(0), 0))
          })
        }
      })
    }

    describe('waitAsync', () => {
      for (const { prefix, Ctor, v } of KINDS) {
        it(`${prefix}returns-result-object-value-is-string-not-equal`, () => {
          const ta = shared(Ctor)
          assertResult(impl.waitAsync(ta, 0, v(1)), false, 'not-equal')
          assertResult(impl.waitAsync(ta, 0, v(1), 0), false, 'not-equal')
        })

        it(`${prefix}returns-result-object-value-is-string-timed-out`, () => {
          const ta = shared(Ctor)
          assertResult(impl.waitAsync(ta, 0, v(0), 0), false, 'timed-out')
          assert.strictEqual(impl.notify(ta, 0), 0)
        })

        it(`${prefix}returns-result-object-value-is-promise-resolves-to-ok`, async () => {
          const ta = shared(Ctor)
          const r = impl.waitAsync(ta, 0, v(0), 10000)
          assertResult(r, true)
          Atomics.add(ta, 0, v(1))
          assert.strictEqual(impl.notify(ta, 0, 1), 1)
          assert.strictEqual(await r.value, 'ok')
        })

        it(`${prefix}returns-result-object-value-is-promise-resolves-to-timed-out`, async () => {
          const ta = shared(Ctor)
          const r = impl.waitAsync(ta, 0, v(0), 1)
          assertResult(r, true)
          assert.strictEqual(await r.value, 'timed-out')
          assert.strictEqual(impl.notify(ta, 0), 0, 'a timed-out waiter stays enqueued')
        })

        for (const [label, timeout] of [['implicit-infinity', []], ['undefined-for-timeout', [undefined]],
          ['nan-for-timeout', [NaN]], ['infinity-for-timeout', [Infinity]],
          ['huge-timeout', [1e300]]]) {
          it(`${prefix}${label}`, async () => {
            const ta = shared(Ctor)
            const r = impl.waitAsync(ta, 0, v(0), ...timeout)
            assertResult(r, true)
            const state = track(r.value)
            await sleep(30)
            assert.strictEqual(state.settled, false, 'the wait ended without a notify')
            assert.strictEqual(impl.notify(ta, 0), 1)
            assert.strictEqual(await state.done, 'ok')
          })
        }

        for (const [op, args] of [['store', [5]], ['add', [1]], ['sub', [1]], ['and', [0]],
          ['or', [1]], ['xor', [1]], ['exchange', [1]], ['compareExchange', [0, 1]],
          ['no-operation', null]]) {
          it(`${prefix}no-spurious-wakeup-${op === 'no-operation' ? op : `on-${op}`}`, async () => {
            const ta = shared(Ctor)
            const timeout = 40
            const start = nowMs()
            const r = impl.waitAsync(ta, 0, v(0), timeout)
            assertResult(r, true)
            if (args !== null) Atomics[op](ta, 0, ...args.map(v))
            assert.strictEqual(await r.value, 'timed-out')
            const elapsed = nowMs() - start
            assertNotEarly(elapsed, timeout)
          })
        }

        it(`${prefix}waiterlist-order-of-operations-is-fifo`, async () => {
          const ta = shared(Ctor)
          const order = []
          const waiters = [0, 1, 2, 3, 4].map((k) =>
            impl.waitAsync(ta, 1, v(0)).value.then((outcome) => order.push(`${k}:${outcome}`)))
          for (let k = 0; k < 5; k++) {
            assert.strictEqual(impl.notify(ta, 1, 1), 1)
            await until(() => order.length === k + 1, 'the woken waiter resolves')
            await sleep(5)
            assert.strictEqual(order.length, k + 1, 'one notify resolved two waiters')
          }
          await Promise.all(waiters)
          assert.deepStrictEqual(order, ['0:ok', '1:ok', '2:ok', '3:ok', '4:ok'])
        })

        it(`${prefix}waiterlist-shared-by-views-of-one-location`, async () => {
          const sab = new SharedArrayBuffer(64)
          const whole = remember(new Ctor(sab))
          const offset = new Ctor(sab, Ctor.BYTES_PER_ELEMENT * 2)
          const [w] = asyncWaiters(impl, whole, 3, 1)
          assert.strictEqual(impl.notify(offset, 0), 0, 'another element was notified')
          assert.strictEqual(impl.notify(offset, 1), 1)
          assert.strictEqual(await w.done, 'ok')
          // Int32Array and BigInt64Array views of the same bytes share a list.
          const i32 = new Int32Array(sab)
          const i64 = new BigInt64Array(sab)
          const a = impl.waitAsync(i64, 2, 0n)
          assert.strictEqual(impl.notify(i32, 5), 0)
          assert.strictEqual(impl.notify(i32, 4), 1)
          assert.strictEqual(await a.value, 'ok')
        })

        it(`${prefix}coalesced-resolutions-keep-notify-order`, async () => {
          const ta = shared(Ctor)
          const order = []
          const waiters = []
          for (let k = 0; k < 20; k++) {
            waiters.push(impl.waitAsync(ta, 0, v(0)).value.then(() => order.push(k)))
          }
          assert.strictEqual(impl.notify(ta, 0, 7), 7)
          assert.strictEqual(impl.notify(ta, 0), 13)
          await Promise.all(waiters)
          assert.deepStrictEqual(order, [...Array(20).keys()])
        })
      }
    })

    describe('notify', () => {
      for (const { prefix, Ctor, big, v } of KINDS) {
        it(`${prefix}not-an-object-throws`, () => {
          const p = poisoned('argument')
          for (const value of primitivesThatAreNotViews()) {
            assert.throws(() => impl.notify(value, p, p), TypeError, String(value))
          }
        })

        it(`${prefix}not-a-typedarray-throws`, async () => {
          const ta = shared(Ctor)
          const p = poisoned('argument')
          await assertNoWaiterChange(impl, ta, 0, () => {
            for (const value of objectsThatAreNotViews()) {
              assert.throws(() => impl.notify(value, 0, 1), TypeError)
              assert.throws(() => impl.notify(value, p, p), TypeError)
            }
          })
        })

        it(`${prefix}${big ? 'non-bigint64' : 'non-int32'}-typedarray-throws`, () => {
          const p = poisoned('argument')
          for (const Bad of NON_WAITABLE_TYPES) {
            assert.throws(() => impl.notify(shared(Bad), 0, 0), TypeError, Bad.name)
            assert.throws(() => impl.notify(shared(Bad), p, p), TypeError, Bad.name)
          }
        })

        for (const arg of ['index', 'count']) {
          it(`${prefix}validate-arraytype-before-${arg}-coercion`, () => {
            const args = { index: 0, count: 0 }
            args[arg] = poisoned(arg)
            for (const Bad of NON_WAITABLE_TYPES) {
              assert.throws(() => impl.notify(shared(Bad), args.index, args.count),
                TypeError, Bad.name)
              assert.throws(() => impl.notify(nonShared(Bad), args.index, args.count),
                TypeError, Bad.name)
            }
            assert.throws(() => impl.notify(shared(Ctor), args.index, args.count), isPoison(arg))
          })
        }

        it(`${prefix}non-shared-bufferdata-returns-0`, () => {
          const ta = nonShared(Ctor)
          for (const count of [0, 1, 2, undefined, Infinity, -1, NaN]) {
            assert.strictEqual(impl.notify(ta, 0, count), 0, String(count))
          }
          assert.strictEqual(impl.notify(ta, 3), 0)
          assert.strictEqual(impl.notify(ta), 0)
        })

        it(`${prefix}non-shared-bufferdata-index-evaluation-throws`, () => {
          const ta = nonShared(Ctor)
          assert.throws(() => impl.notify(ta, poisoned('index'), poisoned('count')), isPoison('index'))
          assert.throws(() => impl.notify(ta, Symbol('i'), poisoned('count')), TypeError)
          assert.throws(() => impl.notify(ta, 4, poisoned('count')), RangeError)
          assert.throws(() => impl.notify(ta, -1, poisoned('count')), RangeError)
        })

        it(`${prefix}non-shared-bufferdata-count-evaluation-throws`, () => {
          const ta = nonShared(Ctor)
          assert.throws(() => impl.notify(ta, 0, poisoned('count')), isPoison('count'))
          assert.throws(() => impl.notify(ta, 0, Symbol('c')), TypeError)
          assert.throws(() => impl.notify(ta, 0, 1n), TypeError)
        })

        it(`${prefix}non-shared-bufferdata-detached-during-count-coercion-returns-0`, () => {
          const ta = nonShared(Ctor)
          const count = { valueOf () { structuredClone(ta.buffer, { transfer: [ta.buffer] }); return 1 } }
          assert.strictEqual(impl.notify(ta, 0, count), 0)
          assert.strictEqual(ta.length, 0)
        })

        it(`${prefix}non-shared-bufferdata-coercion-order`, () => {
          const ta = nonShared(Ctor)
          const log = []
          assert.strictEqual(impl.notify(ta, traced(log, 'index', 1), traced(log, 'count', 1)), 0)
          assert.deepStrictEqual(log, [...expectedSteps('index', 'valueOf'),
            ...expectedSteps('count', 'valueOf')])
        })

        it(`${prefix}null-bufferdata-throws`, () => {
          const p = poisoned('argument')
          assert.throws(() => impl.notify(detached(Ctor), p, p), TypeError)
          assert.throws(() => impl.notify(detached(Ctor), 0, 0), TypeError)
          assert.throws(() => impl.notify(detached(Ctor)), TypeError)
        })

        it(`${prefix}out-of-bounds-typedarray-throws`, () => {
          const p = poisoned('argument')
          assert.throws(() => impl.notify(outOfBounds(Ctor), p, p), TypeError)
          assert.throws(() => impl.notify(outOfBounds(Ctor), 0, 0), TypeError)
          // A length-tracking view that shrank to nothing is in bounds: only
          // its index is out of range.
          const rab = new ArrayBuffer(16, { maxByteLength: 16 })
          const tracking = new Ctor(rab, 8)
          rab.resize(8)
          assert.throws(() => impl.notify(tracking, 0, 0), RangeError)
        })

        it(`${prefix}bad-range`, async () => {
          const ta = shared(Ctor)
          await assertNoWaiterChange(impl, ta, 0, () => {
            for (const [label, index] of outOfRangeIndices(ta)) {
              assert.throws(() => impl.notify(ta, index, 0), RangeError, label)
              assert.throws(() => impl.notify(ta, index), RangeError, label)
            }
          })
        })

        it(`${prefix}out-of-range-index-throws`, () => {
          const ta = shared(Ctor)
          const count = poisoned('count')
          for (const index of [Infinity, 4, 200]) {
            assert.throws(() => impl.notify(ta, index, count), RangeError, String(index))
          }
        })

        it(`${prefix}negative-index-throws`, () => {
          const ta = shared(Ctor)
          const count = poisoned('count')
          for (const index of [-Infinity, -7.999, -1, -300]) {
            assert.throws(() => impl.notify(ta, index, count), RangeError, String(index))
          }
        })

        it(`${prefix}symbol-for-index-throws`, async () => {
          const ta = shared(Ctor)
          await assertNoWaiterChange(impl, ta, 0, () => {
            assert.throws(() => impl.notify(ta, Symbol('1'), poisoned('count')), TypeError)
            assert.throws(() => impl.notify(ta, poisoned('index'), poisoned('count')),
              isPoison('index'))
            assert.throws(() => impl.notify(ta, 0n, 1), TypeError)
          })
        })

        it(`${prefix}count-symbol-throws`, async () => {
          const ta = shared(Ctor)
          await assertNoWaiterChange(impl, ta, 0, () => {
            assert.throws(() => impl.notify(ta, 0, Symbol('1')), TypeError)
            assert.throws(() => impl.notify(ta, 0, { [Symbol.toPrimitive]: () => Symbol('c') }),
              TypeError)
          })
        })

        it(`${prefix}count-tointeger-throws-then-wake-throws`, async () => {
          const ta = shared(Ctor)
          await assertNoWaiterChange(impl, ta, 0, () => {
            assert.throws(() => impl.notify(ta, 0, poisoned('count')), isPoison('count'))
            assert.throws(() => impl.notify(ta, 0, 1n), TypeError)
            assert.throws(() => impl.notify(ta, 0, { valueOf: false, toString: false }), TypeError)
          })
        })

        it(`${prefix}good-views`, async () => {
          const ta = remember(new Ctor(new SharedArrayBuffer(1024), 32, 20))
          for (const [label, index, element] of inRangeIndices(ta)) {
            const [w] = asyncWaiters(impl, ta, element, 1)
            assert.strictEqual(impl.notify(ta, index), 1, label)
            assert.strictEqual(await w.done, 'ok')
          }
        })

        it(`${prefix}undefined-index-defaults-to-zero`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 2)
          assert.strictEqual(impl.notify(ta, undefined, 1), 1)
          assert.strictEqual(impl.notify(ta), 1)
          assert.deepStrictEqual(await Promise.all(ws.map((w) => w.done)), ['ok', 'ok'])
        })

        it(`${prefix}notify-with-no-agents-waiting`, () => {
          const ta = shared(Ctor)
          for (let k = 0; k < ta.length; k++) {
            assert.strictEqual(impl.notify(ta, k), 0)
            assert.strictEqual(impl.notify(ta, k, 1), 0)
          }
        })

        it(`${prefix}notify-with-no-matching-agents-waiting`, async () => {
          const ta = shared(Ctor)
          const [w] = asyncWaiters(impl, ta, 1, 1)
          assert.strictEqual(impl.notify(ta, 0), 0)
          assert.strictEqual(impl.notify(ta, 2), 0)
          assert.strictEqual(impl.notify(ta, 1), 1)
          assert.strictEqual(await w.done, 'ok')
        })

        it(`${prefix}notify-zero`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 3)
          for (const count of [0, -0, 0.9, '0', false, null, { valueOf: () => 0 }]) {
            assert.strictEqual(impl.notify(ta, 0, count), 0, String(count))
          }
          await expectWoken(ws, [false, false, false])
          assert.strictEqual(impl.notify(ta, 0), 3)
          await Promise.all(ws.map((w) => w.done))
        })

        it(`${prefix}notify-one`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 3)
          assert.strictEqual(impl.notify(ta, 0, 1), 1)
          await expectWoken(ws, [true, false, false])
          assert.strictEqual(impl.notify(ta, 0, 1.9), 1)
          await expectWoken(ws, [true, true, false])
          assert.strictEqual(impl.notify(ta, 0, true), 1)
          await expectWoken(ws, [true, true, true])
          assert.strictEqual(impl.notify(ta, 0, 1), 0)
        })

        it(`${prefix}notify-two`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 5)
          assert.strictEqual(impl.notify(ta, 0, 2), 2)
          await expectWoken(ws, [true, true, false, false, false])
          assert.strictEqual(impl.notify(ta, 0, '2'), 2)
          await expectWoken(ws, [true, true, true, true, false])
          assert.strictEqual(impl.notify(ta, 0, 2), 1)
          await expectWoken(ws, [true, true, true, true, true])
        })

        it(`${prefix}notify-all`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 4)
          assert.strictEqual(impl.notify(ta, 0, Infinity), 4)
          assert.deepStrictEqual(await Promise.all(ws.map((w) => w.done)),
            ['ok', 'ok', 'ok', 'ok'])
          assert.strictEqual(impl.notify(ta, 0, Infinity), 0)
        })

        it(`${prefix}notify-all-on-loc`, async () => {
          const ta = shared(Ctor, 8)
          const here = asyncWaiters(impl, ta, 2, 3)
          const before = asyncWaiters(impl, ta, 1, 1)
          const after = asyncWaiters(impl, ta, 3, 1)
          assert.strictEqual(impl.notify(ta, 2), 3)
          await expectWoken([...here, ...before, ...after], [true, true, true, false, false])
          assert.strictEqual(impl.notify(ta, 1), 1)
          assert.strictEqual(impl.notify(ta, 3), 1)
          await Promise.all([...before, ...after].map((w) => w.done))
        })

        it(`${prefix}count-defaults-to-infinity-missing`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 5)
          assert.strictEqual(impl.notify(ta, 0), 5)
          await Promise.all(ws.map((w) => w.done))
        })

        it(`${prefix}count-defaults-to-infinity-undefined`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 5)
          assert.strictEqual(impl.notify(ta, 0, undefined), 5)
          await Promise.all(ws.map((w) => w.done))
        })

        it(`${prefix}count-boundary-cases`, async () => {
          const ta = shared(Ctor)
          for (const [count, woken] of [[-3, 0], [Infinity, 3], [undefined, 3], ['33', 3],
            [{ valueOf: 8 }, 0], [{ valueOf: () => 2 }, 2], [2 ** 53, 3], [1e300, 3],
            ['-Infinity', 0], [2.999, 2]]) {
            const ws = asyncWaiters(impl, ta, 0, 3)
            assert.strictEqual(impl.notify(ta, 0, count), woken, String(count))
            assert.strictEqual(impl.notify(ta, 0), 3 - woken)
            await Promise.all(ws.map((w) => w.done))
          }
        })

        it(`${prefix}count-from-nans`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 2)
          for (const nan of NANS) {
            assert.strictEqual(impl.notify(ta, 0, nan), 0, String(nan))
          }
          assert.strictEqual(impl.notify(ta, 0), 2)
          await Promise.all(ws.map((w) => w.done))
        })

        it(`${prefix}notify-nan`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 1)
          assert.strictEqual(impl.notify(ta, 0, NaN), 0)
          await expectWoken(ws, [false])
          assert.strictEqual(impl.notify(ta, 0), 1)
          await ws[0].done
        })

        it(`${prefix}negative-count`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 2)
          for (const count of [-1, -Infinity, -0.5, '-5', { valueOf: () => -2 }]) {
            assert.strictEqual(impl.notify(ta, 0, count), 0, String(count))
          }
          await expectWoken(ws, [false, false])
          assert.strictEqual(impl.notify(ta, 0), 2)
          await Promise.all(ws.map((w) => w.done))
        })

        it(`${prefix}notify-in-order`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 4)
          for (let k = 0; k < 4; k++) {
            assert.strictEqual(impl.notify(ta, 0, 1), 1)
            await expectWoken(ws, ws.map((_, j) => j <= k))
          }
        })

        it(`${prefix}notify-in-order-one-time`, async () => {
          const ta = shared(Ctor)
          const order = []
          const ws = [0, 1, 2].map((k) =>
            impl.waitAsync(ta, 0, v(0)).value.then(() => order.push(k)))
          assert.strictEqual(impl.notify(ta, 0, 3), 3)
          await Promise.all(ws)
          assert.deepStrictEqual(order, [0, 1, 2])
        })

        it(`${prefix}notify-renotify-noop`, async () => {
          const ta = shared(Ctor)
          const ws = asyncWaiters(impl, ta, 0, 2)
          assert.strictEqual(impl.notify(ta, 0), 2)
          assert.strictEqual(impl.notify(ta, 0), 0)
          await Promise.all(ws.map((w) => w.done))
          assert.strictEqual(impl.notify(ta, 0), 0)
        })

        it(`${prefix}notify-skips-timed-out-waiters`, async () => {
          const ta = shared(Ctor)
          const expired = impl.waitAsync(ta, 0, v(0), 1)
          const [live] = asyncWaiters(impl, ta, 0, 1)
          assert.strictEqual(await expired.value, 'timed-out')
          assert.strictEqual(impl.notify(ta, 0), 1)
          assert.strictEqual(await live.done, 'ok')
        })

        it(`${prefix}argument-coercion-order`, async () => {
          const ta = shared(Ctor)
          for (const mode of MODES) {
            const ws = asyncWaiters(impl, ta, 1, 2)
            const log = []
            assert.strictEqual(impl.notify(ta, traced(log, 'index', 1, mode),
              traced(log, 'count', 1, mode)), 1)
            assert.deepStrictEqual(log, [...expectedSteps('index', mode),
              ...expectedSteps('count', mode)], mode)
            assert.strictEqual(impl.notify(ta, 1), 1)
            await Promise.all(ws.map((w) => w.done))
          }
        })

        it(`${prefix}count-coerced-before-waking`, async () => {
          // A waiter that enqueues while count is being coerced is woken by
          // that very notify: the list is read after every coercion.
          const ta = shared(Ctor)
          let late
          const count = {
            valueOf () {
              late = impl.waitAsync(ta, 0, v(0))
              return 1
            }
          }
          assert.strictEqual(impl.notify(ta, 0, count), 1)
          assert.strictEqual(await late.value, 'ok')
        })
      }
    })
  })
}

// Cases where the Node.js 20 engine departs from the specification, so that
// the built-in cannot serve as the reference, and threadlock follows the
// spec alone:
// - ValidateAtomicAccess reads the typed array's length BEFORE it coerces
//   the index; this engine reads it after.
// - DoWait ends an async wait at once only when its timeout t is exactly 0;
//   this engine also does so for positive timeouts below one nanosecond.
describe('conformance (threadlock, where the built-in departs from the spec)', () => {
  const { wait, waitAsync, notify } = threadlock

  for (const [fn, call] of [
    ['wait', (ta, i, value, timeout) => wait(ta, i, value, timeout)],
    ['waitAsync', (ta, i, value, timeout) => waitAsync(ta, i, value, timeout)]
  ]) {
    it(`${fn}/retrieve-length-before-index-coercion`, () => {
      const gsab = new SharedArrayBuffer(0, { maxByteLength: 4 })
      const ta = new Int32Array(gsab)
      const index = { valueOf () { gsab.grow(4); return 0 } }
      assert.throws(() => call(ta, index, poisoned('value'), poisoned('timeout')), RangeError)
      assert.strictEqual(gsab.byteLength, 4)
    })
  }

  it('notify/retrieve-length-before-index-coercion', () => {
    const gsab = new SharedArrayBuffer(0, { maxByteLength: 4 })
    const ta = new Int32Array(gsab)
    const index = { valueOf () { gsab.grow(4); return 0 } }
    assert.throws(() => notify(ta, index, poisoned('count')), RangeError)
    assert.strictEqual(gsab.byteLength, 4)
  })

  it('notify/retrieve-length-before-index-coercion-non-shared-resize-to-zero', () => {
    const rab = new ArrayBuffer(4, { maxByteLength: 4 })
    const ta = new Int32Array(rab)
    const index = { valueOf () { rab.resize(0); return 0 } }
    assert.strictEqual(notify(ta, index), 0)
    assert.strictEqual(rab.byteLength, 0)
  })

  it('waitAsync/positive-timeout-below-a-nanosecond-waits-asynchronously', async () => {
    for (const timeout of [Number.MIN_VALUE, 1e-300, 1e-7]) {
      const ta = shared(Int32Array)
      const r = waitAsync(ta, 0, 0, timeout)
      assertResult(r, true)
      assert.strictEqual(await r.value, 'timed-out')
    }
  })
})

describe('threadlock waitAsync options (not in the built-in)', () => {
  const { waitAsync, notify, waiterCount } = threadlock

  it('rejects a bad options argument after the spec arguments, adding no waiter', () => {
    const ta = shared(Int32Array)
    for (const options of [null, 1, 'ref', { ref: 1 }, { ref: 'yes' }]) {
      assert.throws(() => waitAsync(ta, 0, 0, Infinity, options), TypeError)
    }
    // The spec arguments are still checked first.
    assert.throws(() => waitAsync(ta, 9, 0, 0, null), RangeError)
    assert.strictEqual(waiterCount(ta, 0), 0)
  })

  it('accepts { ref: false } and { ref: true }', async () => {
    const ta = shared(Int32Array)
    const a = waitAsync(ta, 0, 0, Infinity, { ref: false })
    const b = waitAsync(ta, 0, 0, Infinity, { ref: true })
    assert.strictEqual(waiterCount(ta, 0), 2)
    assert.strictEqual(notify(ta, 0), 2)
    assert.deepStrictEqual(await Promise.all([a.value, b.value]), ['ok', 'ok'])
  })
})

// Random combinations of the awkward arguments above, each run against both
// implementations: the outcome (result or error class) and the log of
// coercions must match. Sync waits get only timeouts that cannot block.
describe('conformance (randomized differential)', () => {
  const SEED = Number(process.env.THREADLOCK_CONFORMANCE_SEED) ||
    1 + Math.floor(Math.random() * 0x7fffffff)
  const CASES = 3000

  function generator (seed) {
    let state = seed >>> 0 || 1
    const random = () => {
      state ^= state << 13
      state ^= state >>> 17
      state ^= state << 5
      state >>>= 0
      return state / 4294967296
    }
    return (list) => list[Math.floor(random() * list.length)]
  }

  const typedArrays = {
    'shared Int32Array': () => shared(Int32Array),
    'shared Int32Array at an offset': () => remember(new Int32Array(new SharedArrayBuffer(32), 8, 3)),
    'shared BigInt64Array': () => shared(BigInt64Array),
    'non-shared Int32Array': () => nonShared(Int32Array),
    'non-shared BigInt64Array': () => nonShared(BigInt64Array),
    'detached Int32Array': () => detached(Int32Array),
    'shared Float64Array': () => shared(Float64Array),
    'shared Uint32Array': () => shared(Uint32Array),
    'shared BigUint64Array': () => shared(BigUint64Array),
    'plain object': () => ({}),
    number: () => 1
  }

  function values () {
    return [0, -0, 1, 2, 3, -1, 1.5, -1.5, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53), Infinity,
      -Infinity, NaN, undefined, null, true, false, '', '1', ' 2 ', '0x3', '1e1', 'abc', '-0',
      [], [1], [1, 2], {}, 0n, 1n, -1n, 2n ** 64n, Symbol('s'), { valueOf: () => 2 },
      { toString: () => '1', valueOf: undefined }, { valueOf: () => ({}), toString: () => ({}) },
      { valueOf: () => 1n }, Object(1n), new Date(0)]
  }

  function outcome (impl, fn, build) {
    const log = []
    const args = build(log)
    try {
      const r = impl[fn](...args)
      if (fn === 'waitAsync' && r.async) {
        impl.notify(args[0], args[1])
        return `async ${log.join(',')}`
      }
      return `${JSON.stringify(r)} ${log.join(',')}`
    } catch (err) {
      return `throws ${err.constructor.name} ${log.join(',')}`
    }
  }

  it(`${CASES} random calls behave the same (THREADLOCK_CONFORMANCE_SEED=${SEED})`, () => {
    const seeds = generator(SEED)
    const integers = [...Array(1000).keys()]
    for (let n = 0; n < CASES; n++) {
      const fn = seeds(['wait', 'waitAsync', 'notify'])
      const caseSeed = 1 + seeds(integers) * 1000 + seeds(integers)
      const results = IMPLS.map(([, impl]) => outcome(impl, fn, (log) => {
        // The same choices for both implementations.
        const pick = generator(caseSeed)
        const arg = (label) => {
          const v = pick(values())
          return pick([true, false, false]) && typeof v !== 'symbol'
            ? { valueOf () { log.push(label); return v } }
            : v
        }
        const args = [typedArrays[pick(Object.keys(typedArrays))](), arg('index'),
          arg(fn === 'notify' ? 'count' : 'value')]
        if (fn === 'wait') {
          args.push(pick([0, -1, -Infinity, false, null, '', Symbol('t'),
            { valueOf () { log.push('timeout'); return -0 } }]))
        } else if (fn === 'waitAsync') {
          args.push(arg('timeout'))
        }
        return args
      }))
      assert.strictEqual(results[1], results[0],
        `${fn} case ${n} (seed ${caseSeed}) differs from the built-in`)
    }
  })
})
