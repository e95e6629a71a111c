// Types of threadlock/lockfile: proper-lockfile's API on the named locks of
// threadlock/host. Like index.d.ts they stand alone: nothing from
// @types/node or the DOM library is named.

import type { LockManagerOptions } from './host'

/**
 * As proper-lockfile's module, the module is lock() itself, with the other
 * functions (and lock) as its properties.
 */
declare function lockfile (file: string, options?: lockfile.LockOptions): Promise<() => Promise<void>>

declare namespace lockfile {
  /**
   * The retry schedule of proper-lockfile's `retries`. threadlock does not
   * poll: the request waits in the host's queue for at most the total time
   * these retries would have taken (the sum of min(maxTimeout, minTimeout *
   * factor^i) for i < retries, doubled with `randomize`).
   */
  export interface RetryOptions {
    /** How many retries; default 10 in an object, as the retry package's. */
    retries?: number
    /** Growth of each delay; default 2. */
    factor?: number
    /** The first delay in milliseconds; default 1000. */
    minTimeout?: number
    /** The longest delay in milliseconds; default Infinity. */
    maxTimeout?: number
    /** Delays multiplied by a random 1 to 2; the bound takes 2. Default false. */
    randomize?: boolean
    /** Wait without limit. */
    forever?: boolean
    /** Accepted; timers are not used. */
    unref?: boolean
    /** A bound on the total time in milliseconds. */
    maxRetryTime?: number
  }

  /** Where the lock's name comes from, shared by every function. */
  export interface PathOptions {
    /**
     * Resolve symbolic links of the file (default `true`); a missing file is
     * then an error of code `ENOENT`. With `false` the path is only made
     * absolute, and the file need not exist.
     */
    realpath?: boolean
    /** Whose `realpath` resolves the file (graceful-fs, memfs…); default Node's fs. */
    fs?: { realpath: Function, realpathSync: Function }
    /**
     * Names the lock after this path instead of the file's: every caller
     * giving the same `lockfilePath` shares one lock. No file is written there.
     */
    lockfilePath?: string
  }

  /** Options of {@link lock} and {@link lockSync}. */
  export interface LockOptions extends PathOptions {
    /**
     * 0 (the default): fail with `ELOCKED` at once when the file is locked.
     * Otherwise wait, in the kernel and granted at the holder's release, for
     * at most the time the retries would take.
     */
    retries?: number | RetryOptions
    /** Accepted and unused: a dead holder's lock is freed at once, a slow one never taken. */
    stale?: number
    /** Accepted and unused: nothing is refreshed. */
    update?: number
    /**
     * Called if the lock is lost under its holder (only when its host lock
     * manager is closed); by default the error is thrown, as proper-lockfile's.
     */
    onCompromised?: (err: LockfileError) => void
  }

  /** Options of {@link unlock} and {@link unlockSync}. */
  export type UnlockOptions = PathOptions

  /** Options of {@link check} and {@link checkSync}. */
  export interface CheckOptions extends PathOptions {
    /** Accepted and unused. */
    stale?: number
  }

  /**
   * An error of threadlock/lockfile: `code` is proper-lockfile's
   * (`ELOCKED`, `ENOTACQUIRED`, `ERELEASED`, `ECOMPROMISED`), `file` the file
   * as given. A missing file rejects with the `ENOENT` error of `realpath`.
   */
  export interface LockfileError extends Error {
    code: 'ELOCKED' | 'ENOTACQUIRED' | 'ERELEASED' | 'ECOMPROMISED'
    file: string
  }

  /** Resolves with the function that releases the lock (itself async). */
  export function lock (file: string, options?: LockOptions): Promise<() => Promise<void>>
  /** Releases a lock this process holds on `file`; otherwise `ENOTACQUIRED`. */
  export function unlock (file: string, options?: UnlockOptions): Promise<void>
  /** Whether some process holds the lock of `file`. */
  export function check (file: string, options?: CheckOptions): Promise<boolean>
  /** Blocks until locked (with `retries`) and returns the release function. */
  export function lockSync (file: string, options?: LockOptions): () => void
  /** The blocking form of {@link unlock}. */
  export function unlockSync (file: string, options?: UnlockOptions): void
  /** The blocking form of {@link check}. */
  export function checkSync (file: string, options?: CheckOptions): boolean

  /** The six functions on a host directory of their own. */
  export interface Lockfile {
    lock: typeof lock
    unlock: typeof unlock
    check: typeof check
    lockSync: typeof lockSync
    unlockSync: typeof unlockSync
    checkSync: typeof checkSync
  }

  /**
   * threadlock's addition: the six functions on the host directory of
   * `options` (createLockManager's; its default directory when absent).
   */
  export function createLockfile (options?: LockManagerOptions): Lockfile
}

export = lockfile
