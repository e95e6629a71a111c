// Declarations that the three kinds of named locks share: threadlock.locks
// (index.d.ts), threadlock/host (host.d.ts) and threadlock/postgres
// (postgres.d.ts). Their LockManagers take the same request options and
// have the same four forms of request(); each entry point adds its own Lock
// and what differs (steal, the fencing token, requestSync). This file is no
// entry point: users import these through the three entry points. Like them
// it names nothing from @types/node or the DOM library.

import type { AbortSignalLike, LockError, LockMode } from './index'

/**
 * The options of {@link NamedLockRequests.request} that every LockManager
 * takes; each entry point's `LockRequestOptions` adds `steal`.
 */
export interface NamedLockRequestOptions {
  /** `'exclusive'` (the default) or `'shared'`. */
  mode?: LockMode
  /**
   * Do not wait: if the lock cannot be granted at once (held in a
   * conflicting mode, or requested earlier by a request still waiting), the
   * callback runs with `null` instead of a lock.
   */
  ifAvailable?: boolean
  /**
   * Withdraws the request while it waits (with threadlock/postgres also
   * from the server's lock queue); the promise rejects with
   * `signal.reason`. Cannot be combined with `steal` or `ifAvailable`.
   */
  signal?: AbortSignalLike
  /**
   * threadlock's addition (Web Locks has none): whether the request keeps
   * the event loop alive while it waits (with threadlock/postgres, also
   * while the lock is held). Default `true`.
   */
  ref?: boolean
  /**
   * threadlock's addition (Web Locks has none): give up once the request
   * has waited this many milliseconds (with threadlock/postgres, here or on
   * the server). The request leaves the queue, as with an abort, and the
   * promise rejects with a {@link LockError} of code `'ETIMEDOUT'`. Cannot
   * be combined with `steal` or `ifAvailable`. Default: no limit.
   */
  timeout?: number
}

/**
 * The request() of a LockManager whose callbacks receive `L` and whose
 * options are `O`. Each entry point's LockManager class merges it.
 */
export interface NamedLockRequests<L, O extends NamedLockRequestOptions> {
  /**
   * Waits for the lock `name`, runs `callback` while holding it, and
   * resolves with the callback's result once the lock is released.
   *
   * Warning: requesting, inside the callback, a lock that the callback's
   * own request holds (or is queued behind) and awaiting it never
   * resolves.
   *
   * @param name the lock's name; names starting with `-` are reserved
   * @param callback runs with the granted lock
   * @returns a promise of the callback's result
   */
  request<T> (name: string, callback: (lock: L) => T | PromiseLike<T>): Promise<T>
  /**
   * Runs `callback` with the lock if it can be granted at once, otherwise
   * with `null`, and resolves with the callback's result.
   *
   * @param name the lock's name
   * @param options `{ ifAvailable: true, mode, ref }`
   * @param callback runs with the granted lock, or `null`
   * @returns a promise of the callback's result
   */
  request<T> (
    name: string,
    options: O & { ifAvailable: true },
    callback: (lock: L | null) => T | PromiseLike<T>
  ): Promise<T>
  /**
   * Waits for the lock `name` in `options.mode`, runs `callback` while
   * holding it, and resolves with the callback's result.
   *
   * @param name the lock's name
   * @param options `{ mode, steal, signal, ref, timeout }`
   * @param callback runs with the granted lock
   * @returns a promise of the callback's result; it rejects with
   *   `signal.reason` when the signal aborts the wait, with a
   *   {@link LockError} `ETIMEDOUT` when the timeout runs out, with a
   *   DOMException named `AbortError` when another request steals the
   *   lock, and with a DOMException named `NotSupportedError` for a
   *   forbidden combination of options
   */
  request<T> (
    name: string,
    options: O & { ifAvailable?: false },
    callback: (lock: L) => T | PromiseLike<T>
  ): Promise<T>
  /**
   * The general form: the callback receives `null` only when
   * `options.ifAvailable` is true and the lock was not available.
   *
   * @param name the lock's name
   * @param options the request's options
   * @param callback runs with the granted lock, or `null`
   * @returns a promise of the callback's result
   */
  request<T> (
    name: string,
    options: O,
    callback: (lock: L | null) => T | PromiseLike<T>
  ): Promise<T>
}
