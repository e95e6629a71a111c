'use strict'

// threadlock/postgres: the named locks of threadlock.locks across processes
// and machines, on PostgreSQL advisory locks through node-postgres (pg), an
// optional peer dependency that only this entry point loads.

const { parseManager } = require('./options')
const { SessionError, codes } = require('./errors')
const { LockManager } = require('./LockManager')
const { Lock } = require('./Lock')
// A request's timeout rejects with the LockError ETIMEDOUT of threadlock's
// primitives (lib/errors.js loads no addon).
const { LockError } = require('../errors')

function loadPg () {
  try {
    return require('pg')
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && /'pg'/.test(err.message)) {
      throw new Error("threadlock/postgres needs the package 'pg' (node-postgres), an optional peer dependency of threadlock: install it with `npm install pg`", { cause: err })
    }
    throw err
  }
}

const pg = loadPg()

function ignore () {}

/**
 * Creates a LockManager whose locks live on a PostgreSQL server. Takes a
 * pg.Pool (left open by close()) or a pg configuration or connection string
 * (the manager then creates and ends its own pool).
 */
function createLockManager (poolOrConfig, options) {
  const settings = parseManager(poolOrConfig, options)
  let pool = settings.pool
  const ownPool = pool === null
  if (ownPool) {
    pool = new pg.Pool({
      // A half-open connection is noticed by TCP keepalive: see the README.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10000,
      // A server that does not answer (unreachable, or packets dropped)
      // fails a request with ECONNECT after 10 s instead of the system's
      // connect timeout of about two minutes.
      connectionTimeoutMillis: 10000,
      allowExitOnIdle: true,
      ...settings.config,
      // One session per held or waiting request, and one for query().
      max: settings.maxConnections + 1
    })
    // An idle connection that fails is dropped by the pool; its error
    // concerns no request.
    pool.on('error', ignore)
  }
  return new LockManager(pg, pool, ownPool, settings)
}

module.exports = { createLockManager, LockManager, Lock, SessionError, LockError, codes }
