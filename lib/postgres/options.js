'use strict'

// Argument checks of createLockManager() and of LockManager.request(). The
// request checks are those of threadlock.locks (lib/requestOptions.js), so
// that code moving from threads to machines sees the same errors;
// test/postgres-input.test.js compares the two side by side. This file
// loads neither the addon nor pg.

const { parseRequest: parseLocksRequest, notSupported } = require('../requestOptions')
const { describe } = require('../validate')

/** Checks request(name, [options], callback) as threadlock.locks does. */
function parseRequest (name, options, callback) {
  const r = parseLocksRequest(name, options, callback)
  // A lock held by another machine cannot be taken away safely: its holder
  // would go on writing until it heard of the steal. See the README.
  if (r.steal) throw notSupported('LockManager.request: steal is not supported by threadlock/postgres')
  return r
}

// The defaults of createLockManager(); README "Across processes and
// machines" explains each.
const DEFAULTS = Object.freeze({
  maxConnections: 10,
  // A classid of the two-key advisory lock functions that names this
  // project's locks: 0x746c6f63, "tloc".
  namespace: 0x746c6f63,
  table: 'threadlock_locks'
})

function checkInteger (name, value, min, max) {
  if (typeof value !== 'number') {
    throw new TypeError(`createLockManager: options.${name} must be an integer, received ${describe(value)}`)
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`createLockManager: options.${name} must be an integer from ${min} to ${max}, received ${value}`)
  }
  return value
}

/** Checks createLockManager(poolOrConfig, options). */
function parseManager (poolOrConfig, options) {
  let pool = null
  let config = null
  if (typeof poolOrConfig === 'string') {
    config = { connectionString: poolOrConfig }
  } else if (poolOrConfig !== null && typeof poolOrConfig === 'object') {
    if (typeof poolOrConfig.connect === 'function' && typeof poolOrConfig.query === 'function') {
      // One client cannot give each request its own session.
      if (!('totalCount' in poolOrConfig)) {
        throw new TypeError('createLockManager: poolOrConfig must be a pg.Pool or a configuration, received a pg.Client (every request needs a session of its own)')
      }
      pool = poolOrConfig
    } else {
      config = { ...poolOrConfig }
    }
  } else if (poolOrConfig !== undefined) {
    throw new TypeError(`createLockManager: poolOrConfig must be a pg.Pool, a configuration object or a connection string, received ${describe(poolOrConfig)}`)
  } else {
    // node-postgres reads PGHOST, PGUSER, ... for what is not given.
    config = {}
  }
  if (options !== undefined && options !== null && typeof options !== 'object') {
    throw new TypeError(`createLockManager: options must be an object, received ${describe(options)}`)
  }
  const o = options == null ? {} : options
  let maxConnections = o.maxConnections === undefined
    ? DEFAULTS.maxConnections
    : checkInteger('maxConnections', o.maxConnections, 1, 10000)
  // A pool the user passes also serves the callbacks' own queries (the
  // fencing example of docs/api.md writes through it) and query(). If the
  // manager's sessions could take every connection, callbacks holding all
  // of them would wait for a connection for ever: the manager leaves one
  // at least, and a pool of one connection is refused.
  if (pool !== null) {
    const poolMax = pool.options && Number.isInteger(pool.options.max) ? pool.options.max : null
    if (poolMax !== null) {
      if (poolMax < 2) {
        throw new RangeError(`createLockManager: the pg.Pool has max ${poolMax}: the manager needs one connection per held lock and leaves one at least for the callbacks' own queries and query(), so the pool needs max 2 or more (or pass a configuration and let the manager make its own pool)`)
      }
      if (o.maxConnections === undefined) {
        maxConnections = Math.min(maxConnections, poolMax - 1)
      } else if (maxConnections >= poolMax) {
        throw new RangeError(`createLockManager: options.maxConnections (${maxConnections}) must be less than the pg.Pool's max (${poolMax}): one connection at least is left for the callbacks' own queries and query(), or callbacks holding every connection wait for one for ever`)
      }
    }
  }
  const namespace = o.namespace === undefined
    ? DEFAULTS.namespace
    : checkInteger('namespace', o.namespace, -0x80000000, 0x7fffffff)
  const table = o.table === undefined ? DEFAULTS.table : o.table
  if (typeof table !== 'string') {
    throw new TypeError(`createLockManager: options.table must be a string, received ${describe(table)}`)
  }
  // A plain or schema-qualified identifier, so that it can be quoted
  // without surprises.
  if (!/^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/.test(table)) {
    throw new RangeError(`createLockManager: options.table must be a lower-case identifier, optionally schema-qualified, received '${table}'`)
  }
  // The manager adds `<table>_tokens` and `<table>_live` beside it, which
  // PostgreSQL would cut to 63 characters.
  if (table.split('.').pop().length > 56) {
    throw new RangeError(`createLockManager: options.table must name a table of at most 56 characters (the manager adds ${table.split('.').pop().slice(0, 20)}..._tokens beside it), received '${table}'`)
  }
  return { pool, config, maxConnections, namespace, table }
}

module.exports = { parseRequest, parseManager, describe, DEFAULTS }
