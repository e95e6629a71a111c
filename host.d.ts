// Types of threadlock/host: the named locks of threadlock.locks (Web Locks
// semantics) shared by the processes of one host through a table file in a
// directory. Like index.d.ts they stand alone: nothing from @types/node or
// the DOM library is named; signals are typed by AbortSignalLike.

import type { AbortSignalLike, LockError, LockMode } from './index'
import type { NamedLockRequestOptions, NamedLockRequests } from './named-locks'

export type { AbortSignalLike, LockMode, LockErrorCode } from './index'
export { LockError } from './index'

// `Symbol.dispose` when the compilation declares it, otherwise nothing.
type DisposeSymbol = SymbolConstructor extends {
  readonly dispose: infer K extends symbol
}
  ? K
  : never

/**
 * A `file:` URL, typed by the part used, so that no DOM or @types/node type
 * is needed (the URL of both satisfies it).
 */
export interface FileURLLike {
  readonly href: string
  readonly protocol: string
}

/** Options of {@link createLockManager}. */
export interface LockManagerOptions {
  /**
   * The directory whose processes share these locks (created with mode
   * 0700 if missing). It must be this user's own, writable by no other
   * user, reached without symbolic links through directories of this user
   * or root (or sticky ones, as /tmp), on a local file system or tmpfs:
   * anything else is refused with a HostError that says why.
   * Default: `/tmp/threadlock-<euid>`, whatever the environment.
   */
  path?: string | FileURLLike
}

/**
 * Options of {@link LockManager.request}, as in threadlock.locks. Here a
 * request is granted across every process of the directory with
 * AsyncLock's default policy (a request that has waited 1 ms is served at
 * the next release; before that another may go first): `ifAvailable` gets
 * `null` if the lock is held by any process in a conflicting mode or
 * requested earlier by any process, unless that policy lets it go first.
 */
export interface LockRequestOptions extends NamedLockRequestOptions {
  /**
   * Take the lock at once even if it is held, by any process: the holders'
   * `lock.signal` aborts and their requests reject with a DOMException named
   * `AbortError`. Exclusive mode only.
   */
  steal?: boolean
}

/** Options of {@link LockManager.requestSync}. */
export interface LockRequestSyncOptions {
  /** `'exclusive'` (the default) or `'shared'`. */
  mode?: LockMode
  /** Do not wait: return `null` if the lock cannot be granted at once. */
  ifAvailable?: boolean
  /** Take the lock at once even if it is held (exclusive mode only). */
  steal?: boolean
  /**
   * How long to wait, in milliseconds, before throwing a {@link LockError}
   * with code `'ETIMEDOUT'`. Default `Infinity`. Cannot be combined with
   * `steal` or `ifAvailable`, which never wait.
   */
  timeout?: number
}

/**
 * The fields of every grant of a named lock here, those of a {@link Lock}
 * and of a {@link HeldLock}.
 */
interface Grant {
  /** The name that was requested. */
  readonly name: string
  /** The mode it was granted in. */
  readonly mode: LockMode
  /**
   * The fencing token of this grant: strictly greater than the token of
   * every earlier grant of the same name, in any process, also after the
   * table was rebuilt. Pass it to the resource the lock protects.
   */
  readonly token: bigint
  /**
   * Whether the previous holder's process died holding this lock: the
   * data it protects may be half updated.
   */
  readonly ownerDied: boolean
  /**
   * Aborts if the lock is stolen (`steal: true` in any process) or the
   * manager is closed while it is held.
   */
  readonly signal: AbortSignalLike
}

/** A lock granted to a {@link LockManager.request} callback. */
export declare class Lock {
  /** Locks are made by {@link LockManager.request} only. */
  private constructor ()
}

export interface Lock extends Grant {}

/**
 * A lock returned by {@link LockManager.requestSync}, held until
 * `release()`; also a disposable (`using held = locks.requestSync(...)`).
 */
export declare class HeldLock {
  private constructor ()
  /** Whether release() has not run yet. */
  readonly held: boolean
  /**
   * Releases the lock. Returns `false` if it had been stolen or lost
   * before, or on a second call.
   */
  release (): boolean
  readonly [Symbol.toStringTag]: string
}

export interface HeldLock extends Grant {}

/**
 * The disposable side of a {@link HeldLock}: `[Symbol.dispose]` releases
 * it, when the compilation knows `Symbol.dispose`.
 */
export type DisposableHeldLock = HeldLock & { readonly [K in DisposeSymbol]: () => void }

/** One entry of {@link LockManager.query}. */
export interface LockInfo {
  /** The lock's name. */
  name: string
  /** The mode held or requested. */
  mode: LockMode
  /** The requesting manager (one per attachment to the directory). */
  clientId: string
  /** The pid of the requesting process, as it saw itself. */
  pid: number
}

/** What {@link LockManager.query} resolves with. */
export interface LockManagerSnapshot {
  /** Locks held now, by every process of the directory. */
  held: LockInfo[]
  /** Requests waiting now, by every process, oldest first per name. */
  pending: LockInfo[]
}

/** An operating system's error code (`'EACCES'`, `'ENOENT'`, ...). */
export type OsErrorCode = `E${string}`

/** The stable codes of a {@link HostError}. */
export type HostErrorCode = 'ECLOSED' | 'ECORRUPT' | 'EFULL' | 'EFSTYPE' | 'ENOTSUP' | 'EUNSAFE' | 'EVERSION' | 'EATTACH'

/** An error of the table or its directory; tell the cases apart by `code`. */
export declare class HostError extends Error {
  constructor (code: HostErrorCode, message?: string, options?: { cause?: unknown })
  readonly name: 'HostError'
  /**
   * `ECLOSED`: the manager was closed; `ECORRUPT`: the table file failed a
   * check; `EFULL`: the table has no free name or request entry;
   * `EFSTYPE`: the directory is on a network or virtual file system;
   * `ENOTSUP`: this platform has no threadlock/host yet; `EUNSAFE`: another
   * user could write, replace or link the directory or the table file;
   * `EVERSION`: the table is in use by another layout version; `EATTACH`:
   * the table could not be joined. An operating-system error when
   * attaching has its own code (`'EACCES'`, `'ENOENT'`, `'EISDIR'`, ...).
   */
  readonly code: HostErrorCode | OsErrorCode
  static readonly codes: { readonly [K in HostErrorCode]: K }
}

/** The codes of {@link HostError}, by name. */
export declare const codes: { readonly [K in HostErrorCode]: K }

/**
 * Named locks with the behaviour of threadlock.locks, shared by every
 * process (and every manager) that uses the same directory. Grants follow
 * AsyncLock's default policy across processes (a request that has waited
 * 1 ms is served at the next release); a holder whose process dies
 * passes the lock to the next waiter at once, with `ownerDied`.
 */
export declare class LockManager {
  private constructor ()
  /** The directory whose processes share these locks. */
  readonly path: string
  /**
   * Blocks the calling thread until the lock is granted (a kernel wait).
   *
   * Warning: it blocks the event loop of the calling thread; use it in
   * command-line tools and worker threads.
   *
   * @throws {@link LockError} `ETIMEDOUT` when `timeout` runs out, `EDEADLK`
   *   when this manager already holds (or waits for) the lock and the
   *   request could never be granted
   */
  requestSync (name: string, options: LockRequestSyncOptions & { ifAvailable: true }): DisposableHeldLock | null
  requestSync (name: string, options?: LockRequestSyncOptions & { ifAvailable?: false }): DisposableHeldLock
  requestSync (name: string, options?: LockRequestSyncOptions): DisposableHeldLock | null
  /** The locks held and awaited by every process of the directory. */
  query (): Promise<LockManagerSnapshot>
  /**
   * Releases what the manager holds (the locks' signals abort), rejects
   * what it waits for, and detaches from the directory.
   */
  close (): Promise<void>
  readonly [Symbol.toStringTag]: string
}

/**
 * The request() forms of {@link LockManager}, as in threadlock.locks; here
 * a lock's name is at most 255 bytes of UTF-8.
 */
export interface LockManager extends NamedLockRequests<Lock, LockRequestOptions> {}

/**
 * Attaches to the directory `options.path` and returns a LockManager whose
 * locks every process attached to it shares.
 *
 * @throws {@link HostError} `EFSTYPE` on a network or virtual file system,
 *   `ECORRUPT` for a damaged table file in use by other processes,
 *   `ENOTSUP` on platforms other than Linux (for now)
 */
export declare function createLockManager (options?: LockManagerOptions): LockManager

/** Options of {@link openSharedMemory}. */
export interface SharedMemoryOptions {
  /**
   * The directory of the file (a string or a file URL); by default the
   * per-user directory of {@link createLockManager}.
   */
  path?: string | FileURLLike
  /** The size in bytes: a positive multiple of 8, the same in every process. */
  size: number
}

/**
 * A SharedArrayBuffer of `options.size` bytes over the file `<name>.shm` in
 * the directory `options.path`, mapped shared: every process of the host
 * that opens the same name there sees the same memory (Node.js 22 and
 * later, Linux). threadlock's wait, notify, waitAsync and primitives work
 * on it across processes (an AsyncLock also with `{ fifo: true }`); what
 * differs from threads is listed in docs/api.md.
 *
 * @throws {RangeError} for an existing name of another size
 * @throws {@link HostError} `ENOTSUP` on Node.js 20 and on platforms other
 *   than Linux, `EUNSAFE`, `EFSTYPE`, `ECORRUPT` (a file of another length
 *   than its header says), or the OS code
 */
export declare function openSharedMemory (name: string, options: SharedMemoryOptions): SharedArrayBuffer
