// The ES module entry point. It re-exports the CommonJS module, so that
// `import` and `require` share one instance of the module, of its native
// addon and of its per-thread state.

import threadlock from './index.js'

export const {
  wait,
  notify,
  waitAsync,
  waiterCount,
  AsyncLock,
  LockError,
  AbortError
} = threadlock

export default threadlock
