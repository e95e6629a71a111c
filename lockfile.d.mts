// Types of the ES module entry point (lockfile.mjs): lockfile() as the
// default export and the same functions and types by name.

import lockfile = require('./lockfile.js')

export default lockfile
export declare const lock: typeof lockfile.lock
export declare const unlock: typeof lockfile.unlock
export declare const check: typeof lockfile.check
export declare const lockSync: typeof lockfile.lockSync
export declare const unlockSync: typeof lockfile.unlockSync
export declare const checkSync: typeof lockfile.checkSync
export declare const createLockfile: typeof lockfile.createLockfile
export type RetryOptions = lockfile.RetryOptions
export type PathOptions = lockfile.PathOptions
export type LockOptions = lockfile.LockOptions
export type UnlockOptions = lockfile.UnlockOptions
export type CheckOptions = lockfile.CheckOptions
export type LockfileError = lockfile.LockfileError
export type Lockfile = lockfile.Lockfile
