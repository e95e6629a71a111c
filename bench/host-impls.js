'use strict'

// The locks that bench/host.js compares, each behind one shape: open(dir)
// resolves with { acquire(), close() }, where acquire() resolves with (or
// returns) a release function. The peers of other packages are loaded from
// THREADLOCK_BENCH_DEPS (a directory with node_modules/proper-lockfile and
// node_modules/fs-ext), or from this checkout's node_modules; a missing one
// is reported as n/a.

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

// Acquire through the callback API of a Web Locks style manager: the lock
// is held until the returned function is called.
function viaCallback (request) {
  return () => new Promise((resolve, reject) => {
    request(() => new Promise((release) => resolve(release))).catch(reject)
  })
}

const impls = {
  // threadlock/host, blocking form: requestSync + release.
  'host sync': {
    available: () => true,
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
    available: () => true,
    open (dir) {
      const m = require('../host').createLockManager({ path: dir })
      return { acquire: viaCallback((cb) => m.request('bench', cb)), close: () => m.close() }
    }
  },
  // threadlock.locks: one process only (worker threads), for scale.
  'threadlock.locks': {
    available: () => true,
    inProcess: true,
    open () {
      const { locks } = require('..')
      return { acquire: viaCallback((cb) => locks.request('bench/host', cb)), close () {} }
    }
  },
  // flock(2) through fs-ext: a blocking call (here in a process of its own,
  // so that blocking its only thread is harmless).
  'flock (fs-ext)': {
    available: () => load('fs-ext') !== null,
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
    available: () => load('proper-lockfile') !== null,
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
  }
}

module.exports = { impls }
