// Types of threadlock/postgres: the named locks of threadlock.locks (Web
// Locks semantics) on PostgreSQL session-level advisory locks, through
// node-postgres (`pg`, an optional peer dependency that must be installed).

import type { AbortSignalLike, LockMode, LockManagerSnapshot } from './index'
import type { NamedLockRequestOptions, NamedLockRequests } from './named-locks'

export type { AbortSignalLike, LockMode, LockInfo, LockManagerSnapshot, LockErrorCode } from './index'
export { LockError } from './index'

/**
 * The AbortSignal of the consumer's own types (Node's or the DOM's) when it
 * has one, so that {@link Lock.signal} can be passed on as a real signal;
 * {@link AbortSignalLike} otherwise. These types name no global themselves.
 */
export type LockSignal = typeof globalThis extends { AbortSignal: { prototype: infer S } }
  ? S
  : AbortSignalLike

/**
 * What createLockManager() needs of a pool: node-postgres's `pg.Pool` (or a
 * pool of the same shape). A single `pg.Client` is refused, since every
 * request needs a session of its own.
 */
export interface PoolLike {
  connect (): Promise<unknown>
  query (text: string, values?: unknown[]): Promise<{ rows: any[] }>
  end (): Promise<void>
  readonly totalCount: number
}

/**
 * A node-postgres pool configuration (`pg.PoolConfig`): `connectionString`,
 * `host`, `port`, `user`, `password`, `database`, `ssl`, `keepAlive`, ...
 * Fields not given come from the `PG*` environment variables.
 */
export interface PoolConfig {
  connectionString?: string
  host?: string
  port?: number
  user?: string
  password?: string | (() => string | Promise<string>)
  database?: string
  ssl?: boolean | object
  keepAlive?: boolean
  keepAliveInitialDelayMillis?: number
  connectionTimeoutMillis?: number
  idleTimeoutMillis?: number
  [option: string]: unknown
}

/** Options of {@link createLockManager}. */
export interface LockManagerOptions {
  /**
   * How many sessions (connections) the manager's requests may use at once:
   * one per held lock and one per request waiting on the server. Requests
   * beyond it wait in the process, first come first served, and an abort
   * takes them out. A manager that creates its own pool opens at most one
   * more connection, for query(). Default 10. From 1 to 10000. With a
   * pg.Pool passed in, at most the pool's `max - 1` (the default is lowered
   * to it, a larger value throws a RangeError, and so does a pool of max 1),
   * so that the callbacks' own queries on that pool always get a connection.
   */
  maxConnections?: number
  /**
   * The first key (classid) of the two-key advisory locks this manager takes;
   * the second is the name's key from the name table. Change it only if
   * another application uses two-key advisory locks with the same first
   * key. Default 0x746c6f63. A 32-bit signed integer.
   */
  namespace?: number
  /**
   * The name table (created if missing): lower-case, optionally
   * schema-qualified. Default `'threadlock_locks'`.
   */
  table?: string
}

/** Options of {@link LockManager.close}. */
export interface CloseOptions {
  /**
   * Milliseconds to wait for held locks' callbacks (0 or more, `Infinity`
   * allowed) before their sessions are ended. Given at all, it also
   * withdraws every request not yet granted at once.
   */
  timeout?: number
}

/**
 * Options of {@link LockManager.request}, as in threadlock.locks. Here
 * `ifAvailable` gets `null` if the lock is held elsewhere in a conflicting
 * mode or a request of this manager waits for it; `signal` and `timeout`
 * also withdraw the request from the server's lock queue, and `ref` keeps
 * the process alive while the lock is held too.
 */
export interface LockRequestOptions extends NamedLockRequestOptions {
  /**
   * Not supported here: a request with `steal: true` rejects with a
   * DOMException named `NotSupportedError`.
   */
  steal?: false
}

/** A lock granted to a {@link LockManager.request} callback. */
export declare class Lock {
  /** Locks are made by {@link LockManager.request} only. */
  private constructor ()
  /** The name that was requested. */
  readonly name: string
  /** The mode it was granted in. */
  readonly mode: LockMode
  /**
   * The fencing token of this grant: strictly greater than the token of
   * every earlier grant of the same name, by any client. Pass it to the
   * resource the lock protects, and have the resource refuse a token lower
   * than the highest it has seen.
   */
  readonly token: bigint
  /**
   * Aborts if the session holding the lock ends while the callback runs
   * (connection lost, server restart, `pg_terminate_backend`): the lock may
   * then be granted to someone else, so stop the work. Its reason is a
   * {@link SessionError} with code `'ELOCKLOST'`.
   */
  readonly signal: LockSignal
}

/** The stable codes of a {@link SessionError}. */
export type SessionErrorCode = 'ECONNECT' | 'EWAITLOST' | 'ELOCKLOST' | 'ECLOSED' | 'ETABLE'

/** An error of the connection to the server; tell the cases apart by `code`. */
export declare class SessionError extends Error {
  constructor (code: SessionErrorCode, message?: string, options?: { cause?: unknown })
  readonly name: 'SessionError'
  /**
   * `ECONNECT`: no session could be opened; `EWAITLOST`: the session ended
   * while the request waited (nothing is held); `ELOCKLOST`: the session
   * ended while the lock was held; `ECLOSED`: the manager was closed;
   * `ETABLE`: the name table cannot serve the request (another table serves
   * its namespace, or it was dropped or created again while in use).
   */
  readonly code: SessionErrorCode
  /** The error of node-postgres or of the server, when there is one. */
  readonly cause?: unknown
  static readonly codes: { readonly [K in SessionErrorCode]: K }
}

/** The codes of {@link SessionError}, by name. */
export declare const codes: { readonly [K in SessionErrorCode]: K }

/**
 * Named locks with the behaviour of threadlock.locks, held on a PostgreSQL
 * server, so that every process and machine using the same server (and
 * table) sees the same locks.
 */
export declare class LockManager {
  private constructor ()
  /**
   * The locks held and awaited on the server by every client (from
   * `pg_locks`), then this manager's requests that have not reached the
   * server yet (`clientId: 'local'`). `clientId` is otherwise the server
   * process id of the session (`pg_locks.pid`).
   *
   * @returns a promise of `{ held, pending }`
   */
  query (): Promise<LockManagerSnapshot>
  /**
   * Refuses new requests, waits until every request made so far has
   * settled, then ends the pool if the manager created it (a pool passed
   * in stays open). With `options.timeout`, requests not yet granted are
   * withdrawn at once (they reject with `ECLOSED`), and locks whose
   * callbacks have not settled when the timeout runs out are released by
   * ending their sessions (their signals abort with `ECLOSED`).
   */
  close (options?: CloseOptions): Promise<void>
  /** The pool the manager takes its sessions from. */
  readonly pool: PoolLike
}

/**
 * The request() forms of {@link LockManager}, as in threadlock.locks.
 *
 * Warning: a callback that awaits another request of the same manager
 * while every connection (`maxConnections`) is in use waits forever.
 *
 * A request's promise also rejects with a {@link SessionError} if the
 * session ends (`ELOCKLOST` even when the callback succeeded, since the
 * work ran partly without the lock).
 */
export interface LockManager extends NamedLockRequests<Lock, LockRequestOptions> {}

/**
 * Creates a {@link LockManager} on a PostgreSQL server.
 *
 * @param poolOrConfig a `pg.Pool` (left open by close()), or a pool
 *   configuration or connection string (the manager creates its own pool,
 *   with TCP keepalive on, and ends it on close()); omitted, the `PG*`
 *   environment variables
 * @param options {@link LockManagerOptions}
 * @throws TypeError or RangeError for bad arguments, and an Error naming
 *   the package if `pg` is not installed (when the module loads)
 */
export declare function createLockManager (
  poolOrConfig?: PoolLike | PoolConfig | string,
  options?: LockManagerOptions
): LockManager
