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

const exported = {
  wait,
  notify,
  waitAsync,
  waiterCount,
  AsyncLock,
  Semaphore: () => require('./lib/Semaphore').Semaphore,
  RWLock: () => require('./lib/RWLock').RWLock,
  ConditionVariable: () => require('./lib/ConditionVariable').ConditionVariable,
  Barrier: () => require('./lib/Barrier').Barrier,
  CountDownLatch: () => require('./lib/CountDownLatch').CountDownLatch,
  locks: () => require('./lib/locks').locks,
  LockManager: () => require('./lib/locks').LockManager,
  Lock: () => require('./lib/locks').Lock,
  LockError,
  AbortError,
  lockPolicy: () => require('./lib/policy').lockPolicy
}
const loaded = new Set([wait, notify, waitAsync, waiterCount, AsyncLock, LockError, AbortError])
for (const [name, value] of Object.entries(exported)) {
  if (loaded.has(value)) {
    Object.defineProperty(module.exports, name, { value, enumerable: true, writable: true, configurable: true })
    continue
  }
  Object.defineProperty(module.exports, name, {
    enumerable: true,
    configurable: true,
    get () {
      const v = value()
      Object.defineProperty(module.exports, name, { value: v, enumerable: true, writable: true, configurable: true })
      return v
    },
    set (v) {
      Object.defineProperty(module.exports, name, { value: v, enumerable: true, writable: true, configurable: true })
    }
  })
}
