// The ES module entry point. It re-exports the CommonJS module, so that
// `import` and `require` share one instance of the module, of its native
// addon and of its per-thread state. The names are listed here because
// index.js defines most of its exports as getters that load on first use,
// which Node's reading of a CommonJS module for names does not follow;
// test/loader.test.js checks that every export of index.js is reachable by
// name from here. (Importing this module reads them all.)

import threadlock from './index.js'

// What Node itself adds to a CommonJS module's namespace (Node 23 and later
// add a 'module.exports' name) passes on; the names below take precedence.
export * from './index.js'

export const {
  wait,
  notify,
  waitAsync,
  waiterCount,
  AsyncLock,
  Semaphore,
  RWLock,
  ConditionVariable,
  Barrier,
  CountDownLatch,
  locks,
  LockManager,
  Lock,
  LockError,
  AbortError,
  lockPolicy
} = threadlock
export default threadlock
