'use strict'

// The locks that bench/host.js compares, each behind one shape: open(dir)
// resolves with { acquire(), close() }, where acquire() resolves with (or
// returns) a release function. The peers of other packages are loaded from
// THREADLOCK_BENCH_DEPS (a directory with node_modules/proper-lockfile and
// node_modules/fs-ext), or from this checkout's node_modules. missing()
// resolves with null, or with why the row is skipped: a package that is not
// installed, or (for threadlock/postgres) no PostgreSQL server, found as the
// postgres tests find theirs: THREADLOCK_PG_URL, or node-postgres's PG*
// variables.

const fs = require('fs')
const path = require('path')
const { createRequire } = require('module')

function load (name) {
  const dirs = [process.env.THREADLOCK_BENCH_DEPS, path.join(__dirname, '..')].filter(Boolean)
  for (const dir of dirs) {
    try {
      return createRequire(path.join(dir, 'package.json'))(name)
    } catch {
      // Not there: try the next directory.
    }
  }
  return null
}

const NOT_INSTALLED = 'not installed (see bench/README.md)'

function installed (name) {
  return load(name) !== null ? null : NOT_INSTALLED
}

// The connection of threadlock/postgres: a URL, or {} so that node-postgres
// reads PGHOST, PGUSER, ...
function pgConfig () {
  return process.env.THREADLOCK_PG_URL || {}
}

// Whether a PostgreSQL server answers; asked once per process.
let pgProblem = null
let pgVersion = null
function pgMissing () {
  if (pgProblem === null) {
    pgProblem = (async () => {
      const pg = load('pg')
      if (pg === null) return 'pg is not installed'
      if (!process.env.THREADLOCK_PG_URL && !process.env.PGHOST && !process.env.PGDATABASE) {
        return 'THREADLOCK_PG_URL is not set (bash .ci/postgres.sh start prints one)'
      }
      const config = process.env.THREADLOCK_PG_URL ? { connectionString: process.env.THREADLOCK_PG_URL } : {}
      const client = new pg.Client({ ...config, connectionTimeoutMillis: 3000 })
      client.on('error', () => {})
      try {
        await client.connect()
        const { rows: [{ v }] } = await client.query('SELECT version() AS v')
        pgVersion = v.split(' on ')[0]
        return null
      } catch (err) {
        return `no PostgreSQL server at THREADLOCK_PG_URL or PG* (${err.message})`
      } finally {
        await client.end().catch(() => {})
      }
    })()
  }
  return pgProblem
}

// Acquire through the callback API of a Web Locks style manager: the lock
// is held until the returned function is called.
function viaCallback (request) {
  return () => new Promise((resolve, reject) => {
    request(() => new Promise((release) => resolve(release))).catch(reject)
  })
}

// openSharedMemory needs Node.js 22 and Linux.
function shmMissing () {
  const { binding } = require('../lib/native')
  return binding.shmSupported === true ? null : `openSharedMemory needs Node.js 22 or later (this is ${process.version})`
}

// A lock of `Kind` (AsyncLock, RWLock) on openSharedMemory's memory.
function shmLock (dir, Kind = require('..').AsyncLock) {
  const { openSharedMemory } = require('../host')
  return new Kind(openSharedMemory('bench', { path: dir, size: 8 }), 0)
}

// A row's blocking form: `take()` blocks until held, `give()` releases.
function blocking (take, give) {
  return { sync: true, acquire: () => { take(); return give }, close () {} }
}

const impls = {
  // threadlock/host, blocking form: requestSync + release.
  'host sync': {
    missing: () => null,
    open (dir) {
      const m = require('../host').createLockManager({ path: dir })
      return {
        sync: true,
        acquire: () => { const held = m.requestSync('bench'); return () => held.release() },
        close: () => m.close()
      }
    }
  },
  // threadlock/host, event-loop form: await request(name, callback).
  'host async': {
    missing: () => null,
    open (dir) {
      const m = require('../host').createLockManager({ path: dir })
      return { acquire: viaCallback((cb) => m.request('bench', cb)), close: () => m.close() }
    }
  },
  // threadlock.locks: one process only (worker threads), for scale.
  'threadlock.locks': {
    missing: () => null,
    inProcess: true,
    open () {
      const { locks } = require('..')
      return { acquire: viaCallback((cb) => locks.request('bench/host', cb)), close () {} }
    }
  },
  // AsyncLock on openSharedMemory's memory (Node.js 22 and later): the
  // lock across processes, blocking and promise forms.
  'shm AsyncLock sync': {
    missing: shmMissing,
    open (dir) {
      const lock = shmLock(dir)
      return blocking(() => lock.lock(), () => lock.unlock())
    }
  },
  'shm AsyncLock async': {
    missing: shmMissing,
    open (dir) {
      const lock = shmLock(dir)
      return { acquire: () => lock.acquire(), close () {} }
    }
  },
  // An RWLock's write lock across processes (blocking form), and the same
  // in one process below: the writers' path, readers aside.
  'shm RWLock write sync': {
    missing: shmMissing,
    open (dir) {
      const rw = shmLock(dir, require('..').RWLock)
      return blocking(() => rw.acquireWriteSync(), () => rw.releaseWrite())
    }
  },
  'RWLock threads write sync': {
    missing: () => null,
    inProcess: true,
    handoff: true,
    open (dir, buffer) {
      const rw = new (require('..').RWLock)(buffer || new SharedArrayBuffer(4), 0)
      return blocking(() => rw.acquireWriteSync(), () => rw.releaseWrite())
    }
  },
  // The same AsyncLock in one process (worker threads, one buffer): what
  // the lock across processes is measured against.
  'AsyncLock threads sync': {
    missing: () => null,
    inProcess: true,
    handoff: true,
    open (dir, buffer) {
      const lock = new (require('..').AsyncLock)(buffer || new SharedArrayBuffer(4), 0)
      return blocking(() => lock.lock(), () => lock.unlock())
    }
  },
  'AsyncLock threads async': {
    missing: () => null,
    inProcess: true,
    handoff: true,
    open (dir, buffer) {
      const lock = new (require('..').AsyncLock)(buffer || new SharedArrayBuffer(4), 0)
      return { acquire: () => lock.acquire(), close () {} }
    }
  },
  // flock(2) through fs-ext: a blocking call (here in a process of its own,
  // so that blocking its only thread is harmless).
  'flock (fs-ext)': {
    missing: () => installed('fs-ext'),
    open (dir) {
      const fsext = load('fs-ext')
      const fd = fs.openSync(path.join(dir, 'flock.lock'), 'a')
      return {
        sync: true,
        acquire: () => { fsext.flockSync(fd, 'ex'); return () => fsext.flockSync(fd, 'un') },
        close: () => fs.closeSync(fd)
      }
    }
  },
  // proper-lockfile with `retries: 10`, the usual way to make it wait
  // (the `retry` package's back-off, from 1 s).
  'proper-lockfile': {
    missing: () => installed('proper-lockfile'),
    slow: true,
    open (dir) {
      const lockfile = load('proper-lockfile')
      const file = path.join(dir, 'proper.lock')
      fs.writeFileSync(file, '')
      return {
        acquire: () => lockfile.lock(file, { retries: 10 }),
        close () {}
      }
    }
  },
  // threadlock/postgres: await request(name, callback) on session advisory
  // locks, one network round trip (or more) per step; it has no blocking
  // form. Every grant also commits the fencing counter (a durable write),
  // so the uncontended loop is shorter. The lock's name comes from the
  // directory, which is fresh for each measure, so measures and runs do not
  // meet on the server. Two connections: the next request of the name waits
  // on the server while the current one holds.
  postgres: {
    missing: pgMissing,
    about: () => pgVersion,
    uncontended: 300,
    async open (dir) {
      const m = require('../postgres').createLockManager(pgConfig(), { maxConnections: 2 })
      const name = `bench/host/${path.basename(dir)}`
      // The first request creates the name's row and connects.
      await m.request(name, () => {})
      return { acquire: viaCallback((cb) => m.request(name, cb)), close: () => m.close() }
    }
  }
}

module.exports = { impls }
