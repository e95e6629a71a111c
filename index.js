'use strict'

// What nearly every program of threadlock uses loads with the package: the
// Atomics-style calls, AsyncLock and the error classes. The other exports
// load on first use (a getter that replaces itself with the value), so that
// a worker thread that needs only a lock starts without compiling the rest:
// a thread's start-up is paid by every worker of a pool. Each export is the
// same object whenever and from wherever it is read, and the ES module
// entry (index.mjs) names every export.

const { wait, notify, waitAsync, waiterCount } = require('./lib/atomics')
const { AsyncLock } = require('./lib/AsyncLock')
const { LockError, AbortError } = require('./lib/errors')

// An export read the first time it is used.
class OnFirstRead {
  constructor (load) { this.load = load }
}

const exported = {
  wait,
  notify,
  waitAsync,
  waiterCount,
  AsyncLock,
  Semaphore: new OnFirstRead(() => require('./lib/Semaphore').Semaphore),
  RWLock: new OnFirstRead(() => require('./lib/RWLock').RWLock),
  ConditionVariable: new OnFirstRead(() => require('./lib/ConditionVariable').ConditionVariable),
  Barrier: new OnFirstRead(() => require('./lib/Barrier').Barrier),
  CountDownLatch: new OnFirstRead(() => require('./lib/CountDownLatch').CountDownLatch),
  locks: new OnFirstRead(() => require('./lib/locks').locks),
  LockManager: new OnFirstRead(() => require('./lib/locks').LockManager),
  Lock: new OnFirstRead(() => require('./lib/locks').Lock),
  LockError,
  AbortError,
  lockPolicy: new OnFirstRead(() => require('./lib/policy').lockPolicy)
}

// A plain, writable export from then on, as every export was before.
function settle (name, value) {
  Object.defineProperty(module.exports, name, { value, enumerable: true, writable: true, configurable: true })
  return value
}

for (const [name, value] of Object.entries(exported)) {
  if (!(value instanceof OnFirstRead)) {
    settle(name, value)
    continue
  }
  Object.defineProperty(module.exports, name, {
    enumerable: true,
    configurable: true,
    get: () => settle(name, value.load()),
    set (v) { settle(name, v) }
  })
}
