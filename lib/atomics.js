'use strict'

// wait / notify / waitAsync with the argument checks and coercions of
// ECMA-262 (Atomics.wait, Atomics.notify, Atomics.waitAsync and DoWait), in
// the spec's order, before anything reaches the native waiter list.

const { types } = require('util')
const native = require('./native')
const { RESULTS } = require('./gate')
const { describe, readObject, readFlag, checkKeys } = require('./validate')
const { stopTerminated } = require('./errors')
const shmWait = require('./shmWait')

const { RESULT_INTERRUPTED } = native.constants
const SHM_ROUTE = native.shmConstants === undefined ? -1 : native.shmConstants.ROUTE

const TypedArrayPrototype = Object.getPrototypeOf(Int32Array.prototype)
const getLength = Object.getOwnPropertyDescriptor(TypedArrayPrototype, 'length').get
const getBuffer = Object.getOwnPropertyDescriptor(TypedArrayPrototype, 'buffer').get
const typedArrayKeys = TypedArrayPrototype.keys
const { isTypedArray, isInt32Array, isBigInt64Array, isSharedArrayBuffer } = types
const { asIntN } = BigInt
const { trunc } = Math

const MAX_SAFE_INDEX = Number.MAX_SAFE_INTEGER

// IsTypedArrayOutOfBounds for a view of a non-detached buffer: the
// prototype's iterator methods run ValidateTypedArray and throw a TypeError
// exactly when the view no longer fits in its buffer.
function isOutOfBounds (typedArray) {
  try {
    typedArrayKeys.call(typedArray)
    return false
  } catch {
    return true
  }
}

// ValidateIntegerTypedArray(typedArray, waitable = true). Returns the buffer.
function validateWaitable (typedArray, fn) {
  if (!isTypedArray(typedArray)) {
    throw new TypeError(`${fn}: typedArray must be an Int32Array or BigInt64Array, received ${describe(typedArray)}`)
  }
  const buffer = getBuffer.call(typedArray)
  // ValidateTypedArray step 4: a detached buffer, or a resizable one that
  // shrank below the view, throws. Only a non-shared buffer can do either,
  // and the length getter then reads 0, so the common path costs nothing.
  if (!isSharedArrayBuffer(buffer) && getLength.call(typedArray) === 0) {
    if (native.isDetached(buffer)) {
      throw new TypeError(`${fn}: the typed array's buffer is detached`)
    }
    if (isOutOfBounds(typedArray)) {
      throw new TypeError(`${fn}: the typed array is out of bounds of its resized buffer`)
    }
  }
  if (!isInt32Array(typedArray) && !isBigInt64Array(typedArray)) {
    throw new TypeError(`${fn}: typedArray must be an Int32Array or BigInt64Array, received ${describe(typedArray)}`)
  }
  return buffer
}

// ToIntegerOrInfinity.
function toIntegerOrInfinity (value) {
  const n = +value
  if (n !== n || n === 0) return 0 // NaN and -0 become +0
  return trunc(n)
}

// ValidateAtomicAccess: returns the element index.
function validateIndex (typedArray, index, fn) {
  const length = getLength.call(typedArray)
  const i = toIntegerOrInfinity(index)
  if (i < 0 || i > MAX_SAFE_INDEX) {
    throw new RangeError(`${fn}: index must be an integer between 0 and 2^53 - 1, received ${String(i)}`)
  }
  if (i >= length) {
    throw new RangeError(`${fn}: index ${i} is out of range for a typed array of length ${length}`)
  }
  return i
}

// DoWait steps 6-7.
function toExpected (typedArray, value) {
  return isBigInt64Array(typedArray) ? asIntN(64, value) : (+value | 0)
}

// DoWait steps 8-9: NaN and undefined wait forever, negative means 0.
function toTimeout (timeout) {
  const q = +timeout
  if (q !== q) return Infinity
  return q > 0 ? q : 0
}

// DoWait steps 1-9 shared by wait and waitAsync.
function prepareWait (typedArray, index, value, timeout, fn) {
  const buffer = validateWaitable(typedArray, fn)
  if (!isSharedArrayBuffer(buffer)) {
    throw new TypeError(`${fn}: the typed array must be backed by a SharedArrayBuffer`)
  }
  const i = validateIndex(typedArray, index, fn)
  const v = toExpected(typedArray, value)
  const t = toTimeout(timeout)
  return [i, v, t]
}

// threadlock's own { ref = true } of waitAsync.
function readRef (options, fn) {
  const o = readObject(options, fn)
  checkKeys(o, ['ref'], fn)
  return readFlag(o.ref, true, fn, 'ref')
}

// Method definitions are not constructors and get the right name and length,
// like the built-in Atomics functions.
const api = {
  wait (typedArray, index, value, timeout) {
    const [i, v, t] = prepareWait(typedArray, index, value, timeout, 'wait')
    const r = native.wait(typedArray, i, v, t)
    // Ended by the termination probe: nothing may return into the caller.
    if (r === RESULT_INTERRUPTED) stopTerminated('wait')
    return RESULTS[r]
  },

  notify (typedArray, index, count) {
    const buffer = validateWaitable(typedArray, 'notify')
    const i = validateIndex(typedArray, index, 'notify')
    let c = Infinity
    if (count !== undefined) {
      c = toIntegerOrInfinity(count)
      if (c < 0) c = 0
    }
    if (!isSharedArrayBuffer(buffer)) return 0
    return native.notify(typedArray, i, c)
  },

  waitAsync (typedArray, index, value, timeout) {
    const [i, v, t] = prepareWait(typedArray, index, value, timeout, 'waitAsync')
    // A fifth argument, { ref = true }, is threadlock's own: ref: false lets
    // the thread exit while the wait is pending.
    const ref = readRef(arguments[4], 'waitAsync')
    const r = native.waitAsync(typedArray, i, v, t, ref)
    if (r === SHM_ROUTE) return shmWaitAsync(typedArray, i, v, t, ref)
    if (typeof r === 'number') return { async: false, value: RESULTS[r] }
    return { async: true, value: r }
  }
}

// waitAsync on memory shared by processes (threadlock/host's
// openSharedMemory): a waiter in the file's list (lib/shmWait.js).
function shmWaitAsync (typedArray, i, v, t, ref) {
  if (t === 0) {
    return { async: false, value: Atomics.load(typedArray, i) === v ? 'timed-out' : 'not-equal' }
  }
  const r = shmWait.waitAsync(typedArray, i, v, { timeout: t, ref })
  if (typeof r === 'number') return { async: false, value: RESULTS[r] }
  return { async: true, value: r }
}

// For tests and diagnostics: waiters enqueued on one element.
function waiterCount (typedArray, index) {
  validateWaitable(typedArray, 'waiterCount')
  const i = validateIndex(typedArray, index, 'waiterCount')
  return native.waiterCount(typedArray, i)
}

module.exports = {
  wait: api.wait,
  notify: api.notify,
  waitAsync: api.waitAsync,
  waiterCount
}
