'use strict'

// Argument checks shared by the primitives. Each one throws a TypeError for a
// value of the wrong type and a RangeError for a number out of range, as
// Node's own validators do, with a message that starts with `where` (the
// public `Class.method`), and each runs before anything changes. None of
// them coerces: an object with a valueOf is refused, not converted.

const { types } = require('util')

/** How a refused value is named in a message, without coercing it. */
function describe (value) {
  if (value === null) return 'null'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'object') {
    const name = value.constructor && value.constructor.name
    return name ? `an instance of ${name}` : 'an object'
  }
  if (typeof value === 'symbol') return 'a symbol'
  return `type ${typeof value}`
}

/** A slot of `bytes` bytes at `byteOffset` in a SharedArrayBuffer. */
function validateSlot (buffer, byteOffset, bytes, where) {
  if (!types.isSharedArrayBuffer(buffer)) {
    throw new TypeError(`${where}: buffer must be a SharedArrayBuffer, received ${describe(buffer)}`)
  }
  if (typeof byteOffset !== 'number') {
    throw new TypeError(`${where}: byteOffset must be a number, received ${describe(byteOffset)}`)
  }
  // A number that is not a usable offset (fractional, NaN, out of range) is
  // a RangeError, as in Node's own validators.
  if (!Number.isInteger(byteOffset)) {
    throw new RangeError(`${where}: byteOffset must be an integer, received ${byteOffset}`)
  }
  if (byteOffset < 0 || byteOffset % 4 !== 0 || byteOffset + bytes > buffer.byteLength) {
    throw new RangeError(`${where}: byteOffset must be a multiple of 4 with ${bytes} bytes available in the buffer (byteLength ${buffer.byteLength}), received ${byteOffset}`)
  }
}

/** "a Semaphore", "an AsyncLock", "an RWLock": a primitive's name in a sentence. */
function aName (name) {
  return `${/^(?:[AEIOU]|RW)/.test(name) ? 'an' : 'a'} ${name}`
}

/**
 * The `{ type, buffer, byteOffset = 0 }` of a handle given to a static
 * from(). A handle written by hand may leave out `type`; one that names a
 * type is opened only as that type (lib/SharedSlot.js).
 */
function readHandle (handle, where) {
  if (handle === null || typeof handle !== 'object') {
    throw new TypeError(`${where}: handle must be an object { type, buffer, byteOffset }, received ${describe(handle)}`)
  }
  const { type, buffer, byteOffset = 0 } = handle
  if (buffer === undefined && type === undefined) {
    // What arrives of a primitive posted itself: its state is private, so
    // structured cloning leaves an empty object.
    const cls = where.slice(0, where.indexOf('.'))
    throw new TypeError(`${where}: the handle has no buffer (a SharedArrayBuffer); post the primitive's handle (lock.handle), not the ${cls} itself, which arrives as an empty object, and call ${cls}.from(handle) there`)
  }
  if (type !== undefined && typeof type !== 'string') {
    throw new TypeError(`${where}: handle.type must be the name of a primitive, received ${describe(type)}`)
  }
  return { type, buffer, byteOffset }
}

/** Whether `value` is an object literal (or one without a prototype). */
function isPlainObject (value) {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Refuses every own key of `options` that is not in `known`. */
function checkKeys (options, known, where) {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue
    if (key === 'type' && !where.includes('.')) { // a constructor's
      throw new TypeError(`${where}: options.type is not an option; to open a handle, call ${where}.from(handle)`)
    }
    const list = known.length === 0 ? 'there are none here' : `known: ${known.join(', ')}`
    throw new TypeError(`${where}: unknown option '${key}' (${list})`)
  }
}

/**
 * Where a primitive's constructor puts its slot of `words` Int32s, from its
 * trailing arguments `[buffer, byteOffset, options]` as given. Either
 * positional, `(buffer = new, byteOffset = 0, options)` with only the
 * primitive's own option `keys` in `options`, or one options object
 * `{ buffer, byteOffset, ...own }` alone, told apart by the first: a plain
 * object is the options. A missing buffer is allocated, zeroed. Returns
 * `{ buffer, byteOffset, options }`, with {} for no options.
 */
function readSlotArgs (args, words, keys, where) {
  const [first, second, third] = args
  let buffer, byteOffset, options
  if (isPlainObject(first)) {
    if (second !== undefined || third !== undefined) {
      throw new TypeError(`${where}: an options object must be the last argument, received ${describe(second !== undefined ? second : third)} after it`)
    }
    checkKeys(first, ['buffer', 'byteOffset', ...keys], where)
    options = first
    ;({ buffer, byteOffset } = first)
    if (buffer !== undefined && !types.isSharedArrayBuffer(buffer)) {
      throw new TypeError(`${where}: options.buffer must be a SharedArrayBuffer, received ${describe(buffer)}`)
    }
  } else {
    buffer = first
    byteOffset = second
    if (buffer !== undefined && !types.isSharedArrayBuffer(buffer)) {
      throw new TypeError(`${where}: buffer must be a SharedArrayBuffer (or pass one options object), received ${describe(buffer)}`)
    }
    options = readObject(third, where)
    checkKeys(options, keys, where)
  }
  if (byteOffset === undefined) byteOffset = 0
  if (buffer === undefined) buffer = new SharedArrayBuffer(4 * words)
  validateSlot(buffer, byteOffset, 4 * words, where)
  return { buffer, byteOffset, options }
}

/** An integer count from `min` to `max`, named `name` in messages. */
function readCount (value, min, max, where, name) {
  if (typeof value !== 'number') {
    throw new TypeError(`${where}: ${name} must be an integer, received ${describe(value)}`)
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${where}: ${name} must be an integer from ${min} to ${max}, received ${value}`)
  }
  return value
}

/** Milliseconds, Infinity when absent. */
function readTimeout (timeout, where) {
  if (timeout === undefined) return Infinity
  if (typeof timeout !== 'number') {
    throw new TypeError(`${where}: timeout must be a number of milliseconds, received ${describe(timeout)}`)
  }
  if (timeout !== timeout || timeout < 0) {
    throw new RangeError(`${where}: timeout must be >= 0 (Infinity for none), received ${timeout}`)
  }
  return timeout
}

/** An options object; {} when absent. */
function readObject (options, where) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  return options
}

/** A boolean member `key` of options already read, `fallback` when absent. */
function readFlag (value, fallback, where, key) {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') {
    throw new TypeError(`${where}: options.${key} must be a boolean, received ${describe(value)}`)
  }
  return value
}

// The options each kind of method knows. A method refuses every other key,
// so that a misspelt option ({ timout: 10 }) is not silently ignored.
const SYNC_KEYS = ['timeout']
const ASYNC_KEYS = ['timeout', 'signal', 'ref']
const ACQUIRE_KEYS = ['blocking', 'timeout', 'signal', 'ref']

/**
 * { timeout } of the blocking forms: the timeout. `extra` names keys that
 * the method reads itself (Semaphore's permits).
 */
function readSyncOptions (options, where, extra = undefined) {
  const o = readObject(options, where)
  checkKeys(o, extra === undefined ? SYNC_KEYS : [...extra, ...SYNC_KEYS], where)
  return readTimeout(o.timeout, where)
}

/**
 * { blocking = true, timeout, signal, ref = true } of the promise forms;
 * `blocking` only where a non-blocking attempt makes sense. Every member is
 * read before any is checked, in this order.
 */
// What readAsyncOptions gives for no options: one frozen object, so that a
// request without options reads nothing and allocates nothing.
const NO_ASYNC_OPTIONS = Object.freeze({ blocking: true, timeout: Infinity, signal: undefined, ref: true })

function readAsyncOptions (options, where, allowBlocking, extra = undefined) {
  if (options === undefined) return NO_ASYNC_OPTIONS
  const o = readObject(options, where)
  const known = allowBlocking ? ACQUIRE_KEYS : ASYNC_KEYS
  checkKeys(o, extra === undefined ? known : [...extra, ...known], where)
  const { blocking, timeout, signal, ref } = o
  const b = readFlag(blocking, true, where, 'blocking')
  const t = readTimeout(timeout, where)
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`${where}: options.signal must be an AbortSignal, received ${describe(signal)}`)
  }
  const r = readFlag(ref, true, where, 'ref')
  // As in the promise lock of "JavaScriptでロックを実装する": a timeout
  // applies to blocking requests only; a non-blocking attempt ignores it.
  return { blocking: b, timeout: b ? t : 0, signal, ref: r }
}

function readCallback (callback, where) {
  if (typeof callback !== 'function') {
    throw new TypeError(`${where}: callback must be a function, received ${describe(callback)}`)
  }
}

module.exports = {
  describe,
  validateSlot,
  readHandle,
  readSlotArgs,
  aName,
  isPlainObject,
  checkKeys,
  readCount,
  readTimeout,
  readObject,
  readFlag,
  readSyncOptions,
  readAsyncOptions,
  readCallback
}
