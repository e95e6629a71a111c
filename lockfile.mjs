// The ES module entry point of threadlock/lockfile: it re-exports the
// CommonJS module, so that `import` and `require` share one instance (and
// one record of the locks this process holds).

import lockfile from './lockfile.js'

export const { lock, unlock, check, lockSync, unlockSync, checkSync, createLockfile } = lockfile
export default lockfile
