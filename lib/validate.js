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

/** The `{ buffer, byteOffset = 0 }` of a handle given to a static from(). */
function readHandle (handle, where) {
  if (handle === null || typeof handle !== 'object') {
    throw new TypeError(`${where}: handle must be an object { buffer, byteOffset }, received ${describe(handle)}`)
  }
  const { buffer, byteOffset = 0 } = handle
  return { buffer, byteOffset }
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

/** { timeout } of the blocking forms: the timeout. */
function readSyncOptions (options, where) {
  return readTimeout(readObject(options, where).timeout, where)
}

/**
 * { blocking = true, timeout, signal, ref = true } of the promise forms;
 * `blocking` only where a non-blocking attempt makes sense. Every member is
 * read before any is checked, in this order.
 */
function readAsyncOptions (options, where, allowBlocking) {
  const o = readObject(options, where)
  const { blocking, timeout, signal, ref } = o
  const b = readFlag(blocking, true, where, 'blocking')
  if (!allowBlocking && blocking !== undefined) {
    throw new TypeError(`${where}: options.blocking is not supported here`)
  }
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
  readCount,
  readTimeout,
  readObject,
  readFlag,
  readSyncOptions,
  readAsyncOptions,
  readCallback
}
