// Type definitions for threadlock.
//
// The typed arrays must be backed by a SharedArrayBuffer for a wait to be
// possible; TypeScript cannot tell a view of a SharedArrayBuffer from a view
// of an ArrayBuffer, so that is checked at run time (a TypeError).
//
// `AbortSignal` comes from @types/node or the DOM library. The
// `[Symbol.dispose]` member of `Release` appears when the compilation knows
// `Symbol.dispose` (TypeScript 5.2+ with lib `esnext.disposable`, or
// @types/node 20+); without it, the rest of these types still work.

/** What {@link wait} returns. */
export type WaitResult = 'ok' | 'not-equal' | 'timed-out'

/**
 * What {@link waitAsync} returns: either a result known at once, or a
 * promise of the result.
 */
export type WaitAsyncResult =
  | { async: false; value: 'not-equal' | 'timed-out' }
  | { async: true; value: Promise<'ok' | 'timed-out'> }

/** threadlock's own options of {@link waitAsync}. */
export interface WaitAsyncOptions {
  /**
   * Whether the pending wait keeps this thread's event loop alive, as a
   * timer does. With `ref: false` the thread may exit while the wait is
   * pending; the promise then never settles. Default `true`.
   */
  ref?: boolean
}

/**
 * Blocks the calling thread until another thread calls {@link notify} on the
 * same element, or until the timeout runs out. Same semantics as
 * `Atomics.wait`, on threadlock's own waiter list.
 *
 * Warning: this blocks the whole thread. On the main thread it blocks the
 * event loop: no timer, I/O callback or promise reaction runs until the wait
 * returns. Prefer {@link waitAsync} there.
 *
 * Threads blocked in the built-in `Atomics.wait` are not woken by
 * threadlock's {@link notify}, and the built-in `Atomics.notify` does not
 * wake this wait.
 *
 * @param typedArray an Int32Array over a SharedArrayBuffer
 * @param index the element to wait on
 * @param value the value the element is expected to hold; if it holds
 *   another one, the call returns `'not-equal'` without waiting
 * @param timeout milliseconds; `Infinity` (the default) or `NaN` wait
 *   without limit, a negative value counts as 0
 * @returns `'ok'` when woken by a notify, `'not-equal'` when the element did
 *   not hold `value`, `'timed-out'` when the timeout ran out first
 * @throws {TypeError} if the array is not an Int32Array or BigInt64Array
 *   over a SharedArrayBuffer
 * @throws {RangeError} if the index is out of range
 */
export declare function wait (
  typedArray: Int32Array,
  index: number,
  value: number,
  timeout?: number
): WaitResult
/**
 * Blocks the calling thread until another thread calls {@link notify} on the
 * same element, or until the timeout runs out. Same semantics as
 * `Atomics.wait`, on threadlock's own waiter list.
 *
 * Warning: this blocks the whole thread. On the main thread it blocks the
 * event loop. Prefer {@link waitAsync} there.
 *
 * @param typedArray a BigInt64Array over a SharedArrayBuffer
 * @param index the element to wait on
 * @param value the value the element is expected to hold (a bigint)
 * @param timeout milliseconds; `Infinity` (the default) waits without limit
 * @returns `'ok'`, `'not-equal'` or `'timed-out'`
 * @throws {TypeError} if the array is not backed by a SharedArrayBuffer
 * @throws {RangeError} if the index is out of range
 */
export declare function wait (
  typedArray: BigInt64Array,
  index: number,
  value: bigint,
  timeout?: number
): WaitResult

/**
 * Wakes threads and promises waiting on an element through threadlock's
 * {@link wait} and {@link waitAsync}, oldest first. Same semantics as
 * `Atomics.notify`; waiters of the built-in `Atomics.wait` are not woken.
 *
 * @param typedArray an Int32Array or BigInt64Array; over an ordinary
 *   ArrayBuffer nobody can wait, and the call returns 0
 * @param index the element whose waiters to wake
 * @param count how many waiters to wake at most; all of them by default
 * @returns how many waiters were woken
 * @throws {TypeError} if the array is not an Int32Array or BigInt64Array
 * @throws {RangeError} if the index is out of range
 */
export declare function notify (
  typedArray: Int32Array | BigInt64Array,
  index: number,
  count?: number
): number

/**
 * Waits for a {@link notify} without blocking: the result is a promise
 * unless it is known at once. Same semantics as `Atomics.waitAsync`, on
 * threadlock's own waiter list, plus an options argument.
 *
 * @param typedArray an Int32Array over a SharedArrayBuffer
 * @param index the element to wait on
 * @param value the value the element is expected to hold
 * @param timeout milliseconds; `Infinity` (the default) waits without limit
 * @param options `{ ref }`: whether the pending wait keeps the event loop
 *   alive (default `true`)
 * @returns `{ async: false, value: 'not-equal' | 'timed-out' }` when the
 *   element does not hold `value` or the timeout is 0, otherwise
 *   `{ async: true, value }` where `value` resolves with `'ok'` or
 *   `'timed-out'`
 * @throws {TypeError} if the array is not an Int32Array or BigInt64Array
 *   over a SharedArrayBuffer, or the options are malformed
 * @throws {RangeError} if the index is out of range
 */
export declare function waitAsync (
  typedArray: Int32Array,
  index: number,
  value: number,
  timeout?: number,
  options?: WaitAsyncOptions
): WaitAsyncResult
/**
 * Waits for a {@link notify} without blocking: the result is a promise
 * unless it is known at once. Same semantics as `Atomics.waitAsync`.
 *
 * @param typedArray a BigInt64Array over a SharedArrayBuffer
 * @param index the element to wait on
 * @param value the value the element is expected to hold (a bigint)
 * @param timeout milliseconds; `Infinity` (the default) waits without limit
 * @param options `{ ref }`: whether the pending wait keeps the event loop
 *   alive (default `true`)
 * @returns an immediate result, or a promise of `'ok'` or `'timed-out'`
 * @throws {TypeError} if the array is not backed by a SharedArrayBuffer
 * @throws {RangeError} if the index is out of range
 */
export declare function waitAsync (
  typedArray: BigInt64Array,
  index: number,
  value: bigint,
  timeout?: number,
  options?: WaitAsyncOptions
): WaitAsyncResult

/**
 * How many waiters (sync and async, from every thread of this process) are
 * queued on an element. Meant for tests and diagnostics: the count can
 * change as soon as it is read.
 *
 * @param typedArray an Int32Array or BigInt64Array
 * @param index the element
 * @returns the number of queued waiters
 * @throws {TypeError} if the array is not an Int32Array or BigInt64Array
 * @throws {RangeError} if the index is out of range
 */
export declare function waiterCount (
  typedArray: Int32Array | BigInt64Array,
  index: number
): number

/**
 * Where a lock lives: a structured-clonable object that can be posted to a
 * worker and reopened there with {@link AsyncLock.from}.
 */
export interface AsyncLockHandle {
  /** The shared memory holding the lock word. */
  buffer: SharedArrayBuffer
  /** The byte offset of the lock word, a multiple of 4. */
  byteOffset: number
}

/** Options of {@link AsyncLock.lock}. */
export interface LockOptions {
  /**
   * Give up after this many milliseconds with a `LockError` of code
   * `ETIMEDOUT`. `Infinity` (the default) waits without limit.
   */
  timeout?: number
}

/** Options that every form of {@link AsyncLock.acquire} accepts. */
interface AcquireOptionsBase {
  /**
   * Withdraws the request when the signal aborts: the promise then rejects
   * with an {@link AbortError} whose `cause` is `signal.reason`. A request
   * already granted is not withdrawn.
   */
  signal?: AbortSignal
  /**
   * Whether the pending request keeps this thread's event loop alive.
   * Default `true`.
   */
  ref?: boolean
}

/** Options of a waiting {@link AsyncLock.acquire} (the default). */
export interface BlockingAcquireOptions extends AcquireOptionsBase {
  /** Wait for the lock (the default). */
  blocking?: true
  /**
   * Reject with a `LockError` of code `ETIMEDOUT` after this many
   * milliseconds. `Infinity` (the default) waits without limit.
   */
  timeout?: number
}

/** Options of a non-waiting {@link AsyncLock.acquire}. */
export interface NonBlockingAcquireOptions extends AcquireOptionsBase {
  /**
   * Do not wait: reject with a `LockError` of code `EBUSY` if the lock is
   * held.
   */
  blocking: false
  /** A timeout makes no sense without waiting and is rejected. */
  timeout?: undefined
}

/** Options of {@link AsyncLock.acquire} and {@link AsyncLock.runExclusive}. */
export type AcquireOptions = BlockingAcquireOptions | NonBlockingAcquireOptions

// `Symbol.dispose` when the compilation declares it, otherwise nothing.
type DisposeSymbol = SymbolConstructor extends {
  readonly dispose: infer K extends symbol
}
  ? K
  : never

/**
 * Releases a lock granted by {@link AsyncLock.acquire}. Calling it more than
 * once does nothing after the first call. It is also a disposable, so
 * `using release = await lock.acquire()` releases at the end of the block.
 */
export type Release = {
  /** Releases the lock. Only the first call has an effect. */
  (): void
  /**
   * Whether the previous owner died while holding the lock and this request
   * took it over: the data the lock protects may be half updated.
   */
  readonly ownerDied: boolean
} & { readonly [K in DisposeSymbol]: () => void }

/**
 * A fair lock that works across worker threads and, through its promise
 * API, between the async tasks of one thread. The lock is one Int32 in a
 * SharedArrayBuffer; every thread that opens the same memory gets the same
 * lock.
 *
 * Requests are granted in the order they started waiting (FIFO), across all
 * threads and whether they came through {@link AsyncLock.lock} or
 * {@link AsyncLock.acquire}. Ownership belongs to a thread, not to an async
 * task: any code running in the holding thread may release the lock.
 */
export declare class AsyncLock {
  /**
   * Opens the lock stored at `byteOffset` in `buffer`. A new lock starts
   * free (the word is 0), so a fresh buffer of zeros makes a fresh lock.
   *
   * @param buffer the shared memory; a new 4-byte buffer by default
   * @param byteOffset where the lock word is, a multiple of 4; default 0
   * @throws {TypeError} if `buffer` is not a SharedArrayBuffer or
   *   `byteOffset` is not an integer
   * @throws {RangeError} if `byteOffset` is misaligned or out of range
   */
  constructor (buffer?: SharedArrayBuffer, byteOffset?: number)

  /**
   * Opens the lock described by a {@link AsyncLock.handle}, for example one
   * posted to a worker.
   *
   * @param handle `{ buffer, byteOffset }`; `byteOffset` defaults to 0
   * @returns a lock object over the same memory
   * @throws {TypeError} if the handle is malformed
   * @throws {RangeError} if `byteOffset` is misaligned or out of range
   */
  static from (handle: {
    buffer: SharedArrayBuffer
    byteOffset?: number
  }): AsyncLock

  /** A structured-clonable description of the lock, for postMessage. */
  readonly handle: AsyncLockHandle
  /** The shared memory that holds the lock word. */
  readonly buffer: SharedArrayBuffer
  /** The byte offset of the lock word in {@link AsyncLock.buffer}. */
  readonly byteOffset: number
  /** Whether some thread holds the lock at this moment. */
  readonly locked: boolean
  /** The `threadId` of the thread holding the lock, or `null` when free. */
  readonly owner: number | null
  /**
   * How many requests (blocking and promise-based, from all threads) are
   * waiting for the lock at this moment.
   */
  readonly waiting: number
  /**
   * True while the lock is held by a thread that took it over from a thread
   * that died holding it. Cleared by the next release.
   */
  readonly ownerDied: boolean

  /**
   * Blocks this thread until it holds the lock.
   *
   * Warning: on the main thread this blocks the event loop for as long as
   * the lock is held elsewhere; use {@link AsyncLock.acquire} there.
   *
   * Warning: calling it in the thread that already holds the lock would
   * never return, so it throws a `LockError` with code `EDEADLK` instead.
   * The same holds while this thread has an `acquire()` queued on the lock.
   *
   * @param options `{ timeout }` in milliseconds
   * @throws {LockError} `ETIMEDOUT` when the timeout ran out, `EDEADLK` as
   *   described above
   * @throws {TypeError} if the options are malformed
   */
  lock (options?: LockOptions): void

  /**
   * Takes the lock if that is possible without waiting.
   *
   * @returns `true` if this thread now holds the lock; `false` if the lock
   *   is held, by another thread or by this one
   */
  tryLock (): boolean

  /**
   * Releases the lock held by this thread, handing it to the oldest waiting
   * request if there is one.
   *
   * @throws {LockError} `ENOTOWNER` if this thread does not hold the lock
   */
  unlock (): void

  /**
   * Resolves with a {@link Release} function once this thread holds the
   * lock. Never blocks the thread: other requests in the same thread queue
   * behind the current holder like any other.
   *
   * Errors are rejections, never synchronous throws: a `LockError` with
   * code `ETIMEDOUT` (timeout) or `EBUSY` (`blocking: false` and the lock is
   * held), an {@link AbortError} (signal), or a TypeError (bad options).
   *
   * @param options `{ blocking, timeout, signal, ref }`
   * @returns a promise of the release function
   */
  acquire (options?: AcquireOptions): Promise<Release>

  /**
   * Runs `callback` while holding the lock and resolves with its result.
   * The lock is released however the callback ends.
   *
   * Warning: calling `runExclusive` (or `acquire`) on the same lock inside
   * the callback and awaiting it never resolves: the inner request waits
   * for the outer one, which waits for the callback.
   *
   * @param callback the work to do under the lock; may return a promise
   * @param options as for {@link AsyncLock.acquire}
   * @returns a promise of the callback's result
   */
  runExclusive<T> (
    callback: () => T | PromiseLike<T>,
    options?: AcquireOptions
  ): Promise<T>

  /**
   * `runExclusive` without options, under the name the V8 blog's
   * `AsyncLock` example uses.
   *
   * @param f the work to do under the lock; may return a promise
   * @returns a promise of `f`'s result
   */
  executeLocked<T> (f: () => T | PromiseLike<T>): Promise<T>
}

/** The stable codes of a {@link LockError}. */
export type LockErrorCode =
  | 'ETIMEDOUT'
  | 'ENOTOWNER'
  | 'EDEADLK'
  | 'EBUSY'
  | 'EOWNERDEAD'

/** An error of a lock operation; tell the cases apart by `code`. */
export declare class LockError extends Error {
  /**
   * @param code one of {@link LockError.codes}
   * @param message a description for people
   */
  constructor (code: LockErrorCode, message?: string)
  readonly name: 'LockError'
  /**
   * `ETIMEDOUT`: the timeout ran out before the lock was granted.
   * `ENOTOWNER`: a release by a thread that does not hold the lock.
   * `EDEADLK`: a blocking acquire that could never succeed.
   * `EBUSY`: a non-blocking attempt found the lock held.
   * `EOWNERDEAD`: the previous owner died holding the lock.
   */
  readonly code: LockErrorCode
  /** Every code, e.g. `LockError.codes.ETIMEDOUT === 'ETIMEDOUT'`. */
  static readonly codes: { readonly [C in LockErrorCode]: C }
}

/**
 * The rejection of a request withdrawn through an `AbortSignal`, shaped like
 * the errors of Node's own APIs.
 */
export declare class AbortError extends Error {
  /**
   * @param message default `'The operation was aborted'`
   * @param options `{ cause }`: the signal's reason
   */
  constructor (message?: string, options?: { cause?: unknown })
  readonly name: 'AbortError'
  readonly code: 'ABORT_ERR'
  /** The `reason` of the signal that aborted the request. */
  cause?: unknown
}
