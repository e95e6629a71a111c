'use strict'

// threadlock/lockfile: the API of proper-lockfile (lock, unlock, check and
// their Sync forms, its options and error codes) on the named locks of
// threadlock/host. Nothing is written next to the file and nothing is
// polled:
//
// - A file's lock is the host lock named after the file's resolved path
//   (`lockfilePath`, when given, names it instead), in the host directory
//   of createLockManager's defaults, or the `path` given to
//   createLockfile(). Every process that resolves the same path shares it.
// - `retries: 0` (the default) is one non-waiting attempt (ifAvailable):
//   ELOCKED when held. Other `retries` wait in the kernel, in the host's
//   queue, for at most the time the retries would have taken, and a
//   release by the holder grants the lock at once; ELOCKED when that time
//   runs out.
// - A holder that dies (even by SIGKILL) frees the lock at once: the host
//   table drops a dead process's locks. So `stale` and `update` have
//   nothing to do, and a slow holder is never declared stale: they are
//   accepted and checked, not used. `onCompromised` is called if the lock
//   is ever lost under its holder (the host manager closed), which a lock
//   held here otherwise never is.
// - This process's own locks are tracked here: a second lock() of a file
//   this process holds fails with ELOCKED at once, as proper-lockfile's
//   does, and unlock() of a lock this process does not hold is
//   ENOTACQUIRED.
//
// Only the public createLockManager of threadlock/host is used.

const crypto = require('crypto')
const nodeFs = require('fs')
const path = require('path')
const { createLockManager } = require('./host')
const { describe, isPlainObject, checkKeys, readFlag } = require('./validate')

// The longest host lock name, in bytes of UTF-8 (lib/host/options.js).
const NAME_MAX = 255

const LOCK_KEYS = ['stale', 'update', 'realpath', 'fs', 'onCompromised', 'lockfilePath', 'retries']
const UNLOCK_KEYS = ['realpath', 'fs', 'lockfilePath']
const CHECK_KEYS = ['stale', 'realpath', 'fs', 'lockfilePath']
const RETRY_KEYS = ['retries', 'factor', 'minTimeout', 'maxTimeout', 'randomize', 'forever', 'unref', 'maxRetryTime']

// The defaults of the retry schedule that proper-lockfile hands its
// `retries` to (the `retry` package): factor 2, 1 s first, no maximum.
const RETRY_DEFAULTS = { factor: 2, minTimeout: 1000, maxTimeout: Infinity, randomize: false }

/** An error with proper-lockfile's `code` and the file it is about. */
function lockfileError (code, where, message, file) {
  const err = new Error(`${where}: ${message}`)
  err.code = code
  err.file = file
  return err
}

function readNumber (value, where, key, min) {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || value !== value || value < min) {
    throw new TypeError(`${where}: options.${key} must be a number >= ${min}, received ${typeof value === 'number' ? value : describe(value)}`)
  }
  return value
}

/**
 * The longest time `retries` would have spent waiting between attempts:
 * the sum of its delays, min(maxTimeout, minTimeout * factor^i), doubled
 * when randomized (the retry package multiplies by a random 1 to 2).
 * 0 for no retries, Infinity for `forever`.
 */
function retryBudget (retries, where) {
  if (retries === undefined) return 0
  if (typeof retries === 'number') {
    readNumber(retries, where, 'retries', 0)
    retries = { retries }
  } else if (!isPlainObject(retries)) {
    throw new TypeError(`${where}: options.retries must be a number or { retries, factor, minTimeout, maxTimeout, randomize }, received ${describe(retries)}`)
  } else {
    checkKeys(retries, RETRY_KEYS, `${where} (options.retries)`)
  }
  const o = { ...RETRY_DEFAULTS, retries: 10, ...retries }
  for (const key of ['retries', 'factor', 'minTimeout', 'maxTimeout']) readNumber(o[key], where, `retries.${key}`, 0)
  readFlag(o.randomize, false, where, 'retries.randomize')
  if (o.forever === true) return Infinity
  let total = 0
  for (let i = 0; i < o.retries; i++) total += Math.min(o.maxTimeout, o.minTimeout * o.factor ** i)
  if (o.randomize) total *= 2
  if (o.maxRetryTime !== undefined) total = Math.min(total, readNumber(o.maxRetryTime, where, 'retries.maxRetryTime', 0))
  return total
}

/** Options of lock/unlock/check, checked; unknown ones are refused. */
function readOptions (options, keys, where) {
  if (options === undefined) options = {}
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object, received ${describe(options)}`)
  }
  checkKeys(options, keys, where)
  readNumber(options.stale, where, 'stale', 0)
  readNumber(options.update, where, 'update', 0)
  const realpath = readFlag(options.realpath, true, where, 'realpath')
  const fs = options.fs === undefined ? nodeFs : options.fs
  if (fs === null || typeof fs !== 'object' || (realpath && typeof fs.realpath !== 'function')) {
    throw new TypeError(`${where}: options.fs must be an fs-like object with realpath, received ${describe(options.fs)}`)
  }
  if (options.onCompromised !== undefined && typeof options.onCompromised !== 'function') {
    throw new TypeError(`${where}: options.onCompromised must be a function, received ${describe(options.onCompromised)}`)
  }
  if (options.lockfilePath !== undefined && typeof options.lockfilePath !== 'string') {
    throw new TypeError(`${where}: options.lockfilePath must be a string, received ${describe(options.lockfilePath)}`)
  }
  return { realpath, fs, onCompromised: options.onCompromised, lockfilePath: options.lockfilePath }
}

function checkFile (file, where) {
  if (typeof file !== 'string' || file === '') {
    throw new TypeError(`${where}: file must be a non-empty string, received ${describe(file)}`)
  }
}

// The host lock name of a resolved path; a path too long for the table
// is named by its SHA-256 (names of paths start with '/', so the two never
// meet).
function lockName (resolved) {
  const name = `lockfile:${resolved}`
  if (Buffer.byteLength(name, 'utf8') <= NAME_MAX) return name
  return `lockfile#sha256:${crypto.createHash('sha256').update(resolved).digest('hex')}`
}

/**
 * Creates the six functions on the host directory of `hostOptions`
 * (createLockManager's options; its default directory when absent).
 */
function createLockfile (hostOptions) {
  let manager = null
  const getManager = () => {
    if (manager === null) manager = createLockManager(hostOptions)
    return manager
  }
  // What this process holds, by lock name: { release, sync }.
  const held = new Map()

  // The lock name of `file` with `o` read: realpath (ENOENT for a missing
  // file) unless realpath is false or lockfilePath names the lock.
  function resolveSync (file, o) {
    if (o.lockfilePath !== undefined) return lockName(path.resolve(o.lockfilePath))
    return lockName(o.realpath ? o.fs.realpathSync(path.resolve(file)) : path.resolve(file))
  }

  async function resolve (file, o) {
    if (o.lockfilePath !== undefined) return lockName(path.resolve(o.lockfilePath))
    if (!o.realpath) return lockName(path.resolve(file))
    const real = await new Promise((resolve, reject) => {
      o.fs.realpath(path.resolve(file), (err, p) => err ? reject(err) : resolve(p))
    })
    return lockName(real)
  }

  // Called when a held lock is lost under its holder (its signal aborted).
  function watch (lock, name, file, o, entry) {
    lock.signal.addEventListener('abort', () => {
      if (held.get(name) !== entry) return
      held.delete(name)
      const err = lockfileError('ECOMPROMISED', 'lockfile', 'the lock was lost', file)
      err.cause = lock.signal.reason
      if (o.onCompromised !== undefined) o.onCompromised(err)
      else throw err // as proper-lockfile's default does
    }, { once: true })
  }

  async function lock (file, options) {
    const where = 'lockfile.lock'
    checkFile(file, where)
    const o = readOptions(options, LOCK_KEYS, where)
    const budget = retryBudget(options && options.retries, where)
    const name = await resolve(file, o)
    if (held.has(name)) throw lockfileError('ELOCKED', where, `${file} is already locked by this process`, file)
    const mgr = getManager()
    const entry = { sync: false }
    held.set(name, entry) // this process's later lock() of the file fails at once
    let release
    const done = new Promise((resolve) => { release = resolve })
    let settled // the request's promise: settles once the host released the lock
    try {
      const lockObject = await new Promise((resolve, reject) => {
        const request = budget === 0 ? { ifAvailable: true } : budget === Infinity ? {} : { timeout: budget }
        settled = mgr.request(name, request, (l) => {
          if (l === null) return reject(lockfileError('ELOCKED', where, `${file} is locked`, file))
          resolve(l)
          return done
        })
        settled.catch((err) => {
          reject(err.code === 'ETIMEDOUT' ? lockfileError('ELOCKED', where, `${file} is locked (still held after ${budget} ms of retries)`, file) : err)
        })
      })
      entry.release = release
      watch(lockObject, name, file, o, entry)
    } catch (err) {
      held.delete(name)
      throw err
    }
    let released = false
    return async () => {
      if (released || held.get(name) !== entry) {
        throw lockfileError('ERELEASED', 'lockfile.release', `the lock of ${file} is already released`, file)
      }
      released = true
      held.delete(name)
      release()
      await settled.catch(() => {}) // released in the host table too
    }
  }

  function lockSync (file, options) {
    const where = 'lockfile.lockSync'
    checkFile(file, where)
    const o = readOptions(options, LOCK_KEYS, where)
    const budget = retryBudget(options && options.retries, where)
    const name = resolveSync(file, o)
    if (held.has(name)) throw lockfileError('ELOCKED', where, `${file} is already locked by this process`, file)
    let h
    try {
      h = getManager().requestSync(name, budget === 0 ? { ifAvailable: true } : budget === Infinity ? {} : { timeout: budget })
    } catch (err) {
      if (err.code === 'ETIMEDOUT') throw lockfileError('ELOCKED', where, `${file} is locked (still held after ${budget} ms of retries)`, file)
      throw err
    }
    if (h === null) throw lockfileError('ELOCKED', where, `${file} is locked`, file)
    const entry = { sync: true, release: () => h.release() }
    held.set(name, entry)
    watch(h, name, file, o, entry)
    let released = false
    return () => {
      if (released || held.get(name) !== entry) {
        throw lockfileError('ERELEASED', 'lockfile.release', `the lock of ${file} is already released`, file)
      }
      released = true
      held.delete(name)
      h.release()
    }
  }

  // Whether this process holds the lock `name` (a lock() still waiting
  // for it has an entry without `release`).
  const holds = (name) => held.has(name) && held.get(name).release !== undefined

  function unlockHeld (name, file, where) {
    const entry = held.get(name)
    if (entry === undefined || entry.release === undefined) throw lockfileError('ENOTACQUIRED', where, `${file} is not locked by this process`, file)
    held.delete(name)
    entry.release()
  }

  async function unlock (file, options) {
    const where = 'lockfile.unlock'
    checkFile(file, where)
    const o = readOptions(options, UNLOCK_KEYS, where)
    unlockHeld(await resolve(file, o), file, where)
  }

  function unlockSync (file, options) {
    const where = 'lockfile.unlockSync'
    checkFile(file, where)
    const o = readOptions(options, UNLOCK_KEYS, where)
    unlockHeld(resolveSync(file, o), file, where)
  }

  async function check (file, options) {
    const where = 'lockfile.check'
    checkFile(file, where)
    const o = readOptions(options, CHECK_KEYS, where)
    const name = await resolve(file, o)
    if (holds(name)) return true
    const { held: locked } = await getManager().query()
    return locked.some((l) => l.name === name)
  }

  // The blocking form has no snapshot to read: it asks for the lock in
  // shared mode without waiting and gives it back at once. A file locked
  // (exclusively) by anyone refuses that.
  function checkSync (file, options) {
    const where = 'lockfile.checkSync'
    checkFile(file, where)
    const o = readOptions(options, CHECK_KEYS, where)
    const name = resolveSync(file, o)
    if (holds(name)) return true
    const probe = getManager().requestSync(name, { mode: 'shared', ifAvailable: true })
    if (probe === null) return true
    probe.release()
    return false
  }

  return { lock, unlock, check, lockSync, unlockSync, checkSync }
}

module.exports = { createLockfile, retryBudget }
