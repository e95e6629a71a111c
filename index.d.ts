// Type definitions for threadlock.
//
// The typed arrays must be backed by a SharedArrayBuffer for a wait to be
// possible; TypeScript cannot tell a view of a SharedArrayBuffer from a view
// of an ArrayBuffer, so that is checked at run time (a TypeError).
//
// These types stand alone: they name nothing from @types/node or the DOM
// library, so a project that has neither (`"types": []`, `"lib":
// ["es2022"]`) compiles against them. The signals are typed by the
// structural {@link AbortSignalLike}, which Node's and the DOM's
// `AbortSignal` both satisfy. The `[Symbol.dispose]` member of `Release`
// appears when the compilation knows `Symbol.dispose` (TypeScript 5.2+ with
// lib `esnext.disposable`, or @types/node 20+); without it, the rest of
// these types still work.

import type { NamedLockRequestOptions, NamedLockRequests } from './named-locks'

/**
 * The part of an `AbortSignal` that threadlock uses, declared here so that
 * the types need neither @types/node nor the DOM library. Node's and the
 * DOM's `AbortSignal` both satisfy it. At run time the signal must be a
 * real `AbortSignal` (a TypeError otherwise).
 */
export interface AbortSignalLike {
  /** Whether the signal has aborted. */
  readonly aborted: boolean
  /** Why it aborted: the `cause` of the {@link AbortError}. */
  readonly reason: any
  addEventListener (
    type: 'abort',
    listener: () => void,
    options?: { once?: boolean }
  ): void
  removeEventListener (type: 'abort', listener: () => void): void
}

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

/** The name of each primitive that lives in shared memory. */
export type PrimitiveType =
  | 'AsyncLock'
  | 'RWLock'
  | 'Semaphore'
  | 'CountDownLatch'
  | 'Barrier'
  | 'ConditionVariable'

/**
 * Where a primitive lives: a structured-clonable object that can be posted
 * to a worker and reopened there with the class's static `from()`.
 */
export interface Handle<T extends PrimitiveType = PrimitiveType> {
  /**
   * Which primitive the words hold. `from()` of another class refuses the
   * handle with a TypeError: the words would mean something else to it.
   */
  readonly type: T
  /** The shared memory holding the primitive's words. */
  buffer: SharedArrayBuffer
  /** The byte offset of its first word, a multiple of 4. */
  byteOffset: number
}

/**
 * What the static `from()` methods accept; `byteOffset` defaults to 0. A
 * handle written by hand may leave out `type`: the memory then opens as the
 * class that `from()` is called on (zeroed memory is a free lock).
 */
export interface HandleLike<T extends PrimitiveType = PrimitiveType> {
  /** The primitive the words hold; it must be the class's own. */
  type?: T
  /** The shared memory holding the primitive's words. */
  buffer: SharedArrayBuffer
  /** The byte offset of its first word, a multiple of 4; default 0. */
  byteOffset?: number
}

/** The handle of an {@link AsyncLock}: where it is, and its mode. */
export interface AsyncLockHandle extends Handle<'AsyncLock'> {
  /** `true` for a lock in strict FIFO mode. */
  readonly fifo: boolean
}

/** The handle of a {@link Semaphore}, for `Semaphore.from()` in another thread. */
export type SemaphoreHandle = Handle<'Semaphore'>
/** The handle of an {@link RWLock}, for `RWLock.from()` in another thread. */
export type RWLockHandle = Handle<'RWLock'>
/** The handle of a {@link ConditionVariable}, for `ConditionVariable.from()`. */
export type ConditionVariableHandle = Handle<'ConditionVariable'>
/** The handle of a {@link Barrier}, for `Barrier.from()` in another thread. */
export type BarrierHandle = Handle<'Barrier'>
/** The handle of a {@link CountDownLatch}, for `CountDownLatch.from()`. */
export type CountDownLatchHandle = Handle<'CountDownLatch'>

/** A handle to reopen an {@link AsyncLock} from; `fifo` defaults to false. */
export interface AsyncLockHandleLike extends HandleLike<'AsyncLock'> {
  fifo?: boolean
}

/**
 * Where a primitive's words are, as an options object: `new RWLock({ buffer,
 * byteOffset })` is `new RWLock(buffer, byteOffset)`. Unknown members are
 * refused with a TypeError.
 */
export interface SlotOptions {
  /** The shared memory; a new, zeroed buffer of the right size by default. */
  buffer?: SharedArrayBuffer
  /** Where the first word is, a multiple of 4; default 0. */
  byteOffset?: number
}

/** Options of `new AsyncLock()`. */
export interface AsyncLockOptions {
  /**
   * `false` (default): fast and fair over time. A running thread may take a
   * free lock while others wait; a release wakes the oldest waiter to
   * compete; a thread hands the lock to the oldest waiter after a slice
   * (2,048 grants or 0.3 ms while others wait), and a waiter that has waited
   * 1 ms gets it handed over. `true`: strict FIFO hand-off at every release,
   * at the cost of one wake-up per grant under contention. Every thread
   * must open one lock word in the same mode (the handle carries it).
   */
  fifo?: boolean
}

/** Options of the blocking calls (`lock()`, `acquireSync()`, `waitSync()`…). */
export interface SyncOptions {
  /**
   * Give up after this many milliseconds: a `LockError` of code
   * `ETIMEDOUT` (or the result `'timed-out'` where the call returns one).
   * `Infinity` (the default) waits without limit.
   */
  timeout?: number
}

/** Options of {@link AsyncLock.lock}. */
export type LockOptions = SyncOptions

/** Options of the promise-based waits that cannot be non-blocking. */
export interface AsyncOptions {
  /**
   * Reject with a `LockError` of code `ETIMEDOUT` (or resolve with
   * `'timed-out'` where the call resolves with a result) after this many
   * milliseconds. `Infinity` (the default) waits without limit.
   */
  timeout?: number
  /**
   * Withdraws the request when the signal aborts: the promise then rejects
   * with an {@link AbortError} whose `cause` is `signal.reason`. A request
   * already granted is not withdrawn.
   */
  signal?: AbortSignalLike
  /**
   * Whether the pending request keeps this thread's event loop alive, as a
   * timer does. Default `true`.
   */
  ref?: boolean
}

/** Options of a waiting `acquire()` (the default). */
export interface BlockingAcquireOptions extends AsyncOptions {
  /** Wait until the request is granted (the default). */
  blocking?: true
}

/** Options of a non-waiting `acquire()`. */
export interface NonBlockingAcquireOptions extends Omit<AsyncOptions, 'timeout'> {
  /**
   * Do not wait: reject with a `LockError` of code `EBUSY` if the request
   * cannot be granted at once.
   */
  blocking: false
  /** A timeout makes no sense without waiting and is rejected. */
  timeout?: undefined
}

/**
 * Options of the promise-based acquires (`acquire()`, `runExclusive()`,
 * `acquireRead()`…).
 */
export type AcquireOptions = BlockingAcquireOptions | NonBlockingAcquireOptions

// `Symbol.dispose` when the compilation declares it, otherwise nothing.
type DisposeSymbol = SymbolConstructor extends {
  readonly dispose: infer K extends symbol
}
  ? K
  : never

/**
 * Releases what a promise-based acquire granted. Calling it more than
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
 * A lock that works across worker threads and, through its promise API,
 * between the async tasks of one thread. The lock is one Int32 in a
 * SharedArrayBuffer; every thread that opens the same memory gets the same
 * lock.
 *
 * By default it is fast and fair over time (see {@link AsyncLockOptions});
 * the requests of one thread are granted in the order the thread made them.
 * With `{ fifo: true }` requests are granted in the order they started
 * waiting, across all threads. Ownership belongs to a thread, not to an async
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
  constructor (buffer?: SharedArrayBuffer, byteOffset?: number, options?: AsyncLockOptions)
  /**
   * The same with one options object, e.g. `new AsyncLock({ fifo: true })`
   * or `new AsyncLock({ buffer, byteOffset: 8 })`.
   */
  constructor (options: AsyncLockOptions & SlotOptions)

  /**
   * Opens the lock described by a {@link AsyncLock.handle}, for example one
   * posted to a worker.
   *
   * @param handle `{ buffer, byteOffset }`; `byteOffset` defaults to 0
   * @returns a lock object over the same memory
   * @throws {TypeError} if the handle is malformed or describes another
   *   primitive
   * @throws {RangeError} if `byteOffset` is misaligned or out of range
   */
  static from (handle: AsyncLockHandleLike): AsyncLock

  /** A structured-clonable description of the lock, for postMessage. */
  readonly handle: AsyncLockHandle
  /** The shared memory that holds the lock word. */
  readonly buffer: SharedArrayBuffer
  /** The byte offset of the lock word in {@link AsyncLock.buffer}. */
  readonly byteOffset: number
  /** `true` in strict FIFO mode (see {@link AsyncLockOptions}). */
  readonly fifo: boolean
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
   * that died holding it, or still by a dead thread that no request has
   * taken it over from yet (`locked` and `owner` then name the dead
   * thread). Cleared by the next release.
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

/**
 * The count of a {@link Semaphore} request given inside its options
 * object (`acquire({ permits: 2, timeout: 100 })`): 1 to 2^29 - 1, default 1.
 */
export interface PermitsOption {
  permits?: number
}

/**
 * A counting semaphore shared by threads: a number of permits in one Int32
 * of a SharedArrayBuffer. A request takes permits whenever enough are
 * available, also while others wait; waiting requests are served in the
 * order they queued, and one that has waited `lockPolicy.starvationMs` gets
 * the permits that releases return before any later request takes permits,
 * so a large request is never starved by small ones.
 */
export declare class Semaphore {
  /**
   * Creates a semaphore and writes its initial count into the memory.
   *
   * Warning: this overwrites the word. To open a semaphore that already
   * lives in `buffer` (for example in a worker), use {@link Semaphore.from}.
   *
   * @param permits the initial count, 0 to 2^29 - 1; default 1
   * @param buffer the shared memory; a new 4-byte buffer by default
   * @param byteOffset where the word is, a multiple of 4; default 0
   * @throws {TypeError} for a bad argument type
   * @throws {RangeError} for a count or offset out of range
   */
  constructor (permits?: number, buffer?: SharedArrayBuffer, byteOffset?: number)
  /** The same with `{ buffer, byteOffset }` as one options object. */
  constructor (permits: number | undefined, options: SlotOptions)

  /**
   * Opens a semaphore created elsewhere, without changing its count.
   *
   * @param handle the {@link Semaphore.handle} of the semaphore
   * @returns a semaphore object over the same memory
   */
  static from (handle: HandleLike<'Semaphore'>): Semaphore

  /** A structured-clonable description, for postMessage. */
  readonly handle: SemaphoreHandle
  /** Permits available at this moment. */
  readonly value: number
  /** Requests waiting at this moment, in all threads. */
  readonly waiting: number

  /**
   * Takes permits if they are available without waiting.
   *
   * @param permits how many; default 1
   * @returns whether they were taken
   */
  tryAcquire (permits?: number): boolean
  /** The same with the count as `{ permits }`. */
  tryAcquire (options: PermitsOption): boolean

  /**
   * Blocks this thread until it took `permits` permits.
   *
   * Warning: on the main thread this blocks the event loop; use
   * {@link Semaphore.acquire} there. A thread that waits for permits only
   * it could release never returns: permits have no owner, so this is not
   * detected.
   *
   * @param permits how many; default 1
   * @param options `{ timeout }` in milliseconds
   * @throws {LockError} `ETIMEDOUT` when the timeout ran out
   */
  acquireSync (permits?: number, options?: SyncOptions): void
  /** The same with the count in the options: `acquireSync({ permits: 2, timeout: 100 })`. */
  acquireSync (options: SyncOptions & PermitsOption): void

  /**
   * Resolves with a {@link Release} function (which returns the permits)
   * once `permits` permits were taken.
   *
   * @param permits how many; default 1
   * @param options `{ blocking, timeout, signal, ref }`
   * @returns a promise of the release function; it rejects with a
   *   `LockError` (`ETIMEDOUT`, or `EBUSY` with `blocking: false`) or an
   *   {@link AbortError}
   */
  acquire (permits?: number, options?: AcquireOptions): Promise<Release>
  /** The same with the count in the options: `acquire({ permits: 2, timeout: 100 })`. */
  acquire (options: AcquireOptions & PermitsOption): Promise<Release>

  /**
   * Returns permits and grants the waiting requests that now fit, oldest
   * first. Any thread may release; permits have no owner.
   *
   * @param permits how many; default 1
   * @throws {RangeError} if the count would exceed 2^29 - 1
   */
  release (permits?: number): void

  /**
   * Runs `callback` holding `options.permits` permits (default 1) and
   * resolves with its result; the permits are returned however it ends.
   *
   * @param callback the work to do; may return a promise
   * @param options `{ permits }` and the options of
   *   {@link Semaphore.acquire}
   * @returns a promise of the callback's result
   */
  runExclusive<T> (
    callback: () => T | PromiseLike<T>,
    options?: AcquireOptions & PermitsOption
  ): Promise<T>
}

/**
 * A read-write lock shared by threads: many readers or one writer, in one
 * Int32 of a SharedArrayBuffer. A waiting writer holds back the readers
 * that come after it, so readers cannot starve writers; readers queued
 * before the next writer enter together. Writers follow the default policy
 * of {@link AsyncLock} (see {@link AsyncLockOptions}): a running writer may
 * take a free lock while others wait, and slices end in a hand-off; a
 * thread's own write requests keep their order.
 *
 * The writer is a thread, like the owner of an {@link AsyncLock}: a writer
 * that dies holding the lock is recovered. Readers are only counted: a
 * reader thread that dies holding a read lock leaves it held.
 */
export declare class RWLock {
  /**
   * Opens the lock stored at `byteOffset` in `buffer`; a word of 0 is a
   * free lock.
   *
   * @param buffer the shared memory; a new 4-byte buffer by default
   * @param byteOffset where the word is, a multiple of 4; default 0
   */
  constructor (buffer?: SharedArrayBuffer, byteOffset?: number)
  /** The same with `{ buffer, byteOffset }` as one options object. */
  constructor (options: SlotOptions)

  /**
   * Opens the lock described by a handle.
   *
   * @param handle the {@link RWLock.handle} of the lock
   * @returns a lock object over the same memory
   */
  static from (handle: HandleLike<'RWLock'>): RWLock

  /** A structured-clonable description, for postMessage. */
  readonly handle: RWLockHandle
  /** How many read locks are held at this moment (in every process, on memory from `openSharedMemory`). */
  readonly readers: number
  /**
   * The `threadId` of the thread holding the write lock, or `null`. On
   * memory from `openSharedMemory` (threadlock/host): the writer's owner id
   * in the file, unique across processes, also while it waits for readers.
   */
  readonly writer: number | null
  /** Requests waiting at this moment, in all threads. */
  readonly waiting: number
  /**
   * True while the lock is held (by a writer or readers) and a holder died
   * since a writer last released it, or while `writer` is a dead thread
   * that no request has taken the lock over from yet: the data may be half
   * updated. The way
   * `tryAcquireWrite()` and `runWrite()` tell their writer; cleared by the
   * writer's release.
   */
  readonly ownerDied: boolean

  /**
   * Takes a read lock if that is possible without waiting.
   *
   * @returns whether this thread now holds a read lock
   */
  tryAcquireRead (): boolean

  /**
   * Takes the write lock if that is possible without waiting.
   *
   * @returns whether this thread now holds the write lock
   */
  tryAcquireWrite (): boolean

  /**
   * Blocks this thread until it holds a read lock.
   *
   * Warning: on the main thread this blocks the event loop. In the thread
   * that holds the write lock it throws `EDEADLK`.
   *
   * @param options `{ timeout }` in milliseconds
   * @returns `true` when the lock was taken over from a writer that died
   *   holding it (the data may be half updated), else `false`
   * @throws {LockError} `ETIMEDOUT`, `EDEADLK`
   */
  acquireReadSync (options?: SyncOptions): boolean

  /**
   * Blocks this thread until it holds the write lock.
   *
   * Warning: on the main thread this blocks the event loop. In the thread
   * that holds the write lock it throws `EDEADLK`. In a thread that holds a
   * read lock it would wait for itself: readers are not named, so this is
   * not detected, and only a timeout ends the wait.
   *
   * @param options `{ timeout }` in milliseconds
   * @returns `true` when the lock was taken over from a writer that died
   *   holding it (the data may be half updated), else `false`
   * @throws {LockError} `ETIMEDOUT`, `EDEADLK`
   */
  acquireWriteSync (options?: SyncOptions): boolean

  /**
   * Releases one read lock.
   *
   * @throws {LockError} `ENOTOWNER` if no read lock is held
   */
  releaseRead (): void

  /**
   * Releases the write lock held by this thread.
   *
   * @throws {LockError} `ENOTOWNER` if this thread does not hold it
   */
  releaseWrite (): void

  /**
   * Resolves with a {@link Release} function once this thread holds a read
   * lock.
   *
   * @param options `{ blocking, timeout, signal, ref }`
   * @returns a promise of the release function
   */
  acquireRead (options?: AcquireOptions): Promise<Release>

  /**
   * Resolves with a {@link Release} function once this thread holds the
   * write lock.
   *
   * @param options `{ blocking, timeout, signal, ref }`
   * @returns a promise of the release function
   */
  acquireWrite (options?: AcquireOptions): Promise<Release>

  /**
   * Runs `callback` holding a read lock and resolves with its result.
   *
   * @param callback the work to do; may return a promise
   * @param options as for {@link RWLock.acquireRead}
   * @returns a promise of the callback's result
   */
  runRead<T> (
    callback: () => T | PromiseLike<T>,
    options?: AcquireOptions
  ): Promise<T>

  /**
   * Runs `callback` holding the write lock and resolves with its result.
   *
   * @param callback the work to do; may return a promise
   * @param options as for {@link RWLock.acquireWrite}
   * @returns a promise of the callback's result
   */
  runWrite<T> (
    callback: () => T | PromiseLike<T>,
    options?: AcquireOptions
  ): Promise<T>
}

/**
 * A condition variable used with an {@link AsyncLock}: wait, with the lock
 * released, until another thread announces a change.
 *
 * A waiter may wake without a matching notify, as with every condition
 * variable: wait in a loop that checks the condition.
 */
export declare class ConditionVariable {
  /**
   * @param buffer the shared memory; a new 4-byte buffer by default
   * @param byteOffset where the word is, a multiple of 4; default 0
   */
  constructor (buffer?: SharedArrayBuffer, byteOffset?: number)
  /** The same with `{ buffer, byteOffset }` as one options object. */
  constructor (options: SlotOptions)

  /**
   * Opens the condition variable described by a handle.
   *
   * @param handle the {@link ConditionVariable.handle}
   * @returns an object over the same memory
   */
  static from (handle: HandleLike<'ConditionVariable'>): ConditionVariable

  /** A structured-clonable description, for postMessage. */
  readonly handle: ConditionVariableHandle
  /** Waits pending at this moment, in all threads. */
  readonly waiting: number

  /**
   * Releases `lock`, blocks until notified or timed out, and takes `lock`
   * again before returning.
   *
   * Warning: on the main thread this blocks the event loop.
   *
   * @param lock an AsyncLock held by this thread
   * @param options `{ timeout }` in milliseconds
   * @returns `'ok'` or `'timed-out'`
   * @throws {LockError} `ENOTOWNER` if this thread does not hold `lock`;
   *   `EDEADLK`, before anything changes, if this thread has a request of
   *   its own queued for `lock`
   */
  waitSync (lock: AsyncLock, options?: SyncOptions): 'ok' | 'timed-out'

  /**
   * The promise form of {@link ConditionVariable.waitSync}: resolves once
   * `lock` is held by this thread again. An abort withdraws the wait, takes
   * the lock again, then rejects with an {@link AbortError}.
   *
   * @param lock an AsyncLock held by this thread
   * @param options `{ timeout, signal, ref }`
   * @returns a promise of `'ok'` or `'timed-out'`
   */
  wait (lock: AsyncLock, options?: AsyncOptions): Promise<'ok' | 'timed-out'>

  /**
   * Wakes the oldest waiter.
   *
   * @returns how many waiters were woken (0 or 1)
   */
  notifyOne (): number

  /**
   * Wakes every waiter.
   *
   * @returns how many waiters were woken
   */
  notifyAll (): number
}

/**
 * A cyclic barrier: `parties` threads (or async tasks) wait for each
 * other, phase after phase.
 */
export declare class Barrier {
  /**
   * Creates a barrier and writes its state into the memory.
   *
   * Warning: this overwrites the two words. To open a barrier that already
   * lives in `buffer`, use {@link Barrier.from}.
   *
   * @param parties how many arrivals complete a phase, 1 to 65535
   * @param buffer the shared memory; a new 8-byte buffer by default
   * @param byteOffset where the words are, a multiple of 4; default 0
   */
  constructor (parties: number, buffer?: SharedArrayBuffer, byteOffset?: number)
  /** The same with `{ buffer, byteOffset }` as one options object. */
  constructor (parties: number, options: SlotOptions)

  /**
   * Opens a barrier created elsewhere, without changing its state.
   *
   * @param handle the {@link Barrier.handle} of the barrier
   * @returns a barrier object over the same memory
   */
  static from (handle: HandleLike<'Barrier'>): Barrier

  /** A structured-clonable description, for postMessage. */
  readonly handle: BarrierHandle
  /** How many arrivals complete a phase. */
  readonly parties: number
  /** Arrivals in the current phase so far. */
  readonly arrived: number
  /** The current phase number; wraps at 65536. */
  readonly phase: number

  /**
   * Arrives and blocks until all parties arrived.
   *
   * Warning: on the main thread this blocks the event loop. A party that
   * times out takes its arrival back before it throws; if the phase ended
   * first, it returns `false` instead.
   *
   * @param options `{ timeout }` in milliseconds
   * @returns `true` in the one party whose arrival completed the phase
   * @throws {LockError} `ETIMEDOUT` when the timeout ran out
   */
  arriveAndWaitSync (options?: SyncOptions): boolean

  /**
   * Arrives and resolves once all parties arrived. A timeout or an abort
   * takes the arrival back before the promise rejects.
   *
   * @param options `{ timeout, signal, ref }`
   * @returns a promise of `true` in the one party whose arrival completed
   *   the phase, `false` in the others
   */
  arriveAndWait (options?: AsyncOptions): Promise<boolean>
}

/** A count that releases every waiter when it reaches 0. */
export declare class CountDownLatch {
  /**
   * Creates a latch and writes its count into the memory.
   *
   * Warning: this overwrites the word. To open a latch that already lives
   * in `buffer`, use {@link CountDownLatch.from}.
   *
   * @param count the initial count, 0 to 2^31 - 1
   * @param buffer the shared memory; a new 4-byte buffer by default
   * @param byteOffset where the word is, a multiple of 4; default 0
   */
  constructor (count: number, buffer?: SharedArrayBuffer, byteOffset?: number)
  /** The same with `{ buffer, byteOffset }` as one options object. */
  constructor (count: number, options: SlotOptions)

  /**
   * Opens a latch created elsewhere, without changing its count.
   *
   * @param handle the {@link CountDownLatch.handle} of the latch
   * @returns a latch object over the same memory
   */
  static from (handle: HandleLike<'CountDownLatch'>): CountDownLatch

  /** A structured-clonable description, for postMessage. */
  readonly handle: CountDownLatchHandle
  /** The count at this moment. */
  readonly count: number

  /**
   * Lowers the count, never below 0; the call that reaches 0 wakes every
   * waiter.
   *
   * @param k how much to subtract; default 1
   * @returns the new count
   */
  countDown (k?: number): number

  /**
   * Blocks until the count is 0.
   *
   * Warning: on the main thread this blocks the event loop.
   *
   * @param options `{ timeout }` in milliseconds
   * @throws {LockError} `ETIMEDOUT` when the timeout ran out
   */
  waitSync (options?: SyncOptions): void

  /**
   * Resolves once the count is 0.
   *
   * @param options `{ timeout, signal, ref }`
   * @returns a promise that rejects with `ETIMEDOUT` or an
   *   {@link AbortError} if the wait ends otherwise
   */
  wait (options?: AsyncOptions): Promise<void>
}

/** The mode of a named lock: one holder, or any number of shared holders. */
export type LockMode = 'exclusive' | 'shared'

/**
 * Options of {@link LockManager.request}, as in the Web Locks API, with
 * threadlock's `ref` and `timeout`.
 */
export interface LockRequestOptions extends NamedLockRequestOptions {
  /**
   * Take the lock at once, even if it is held: the current holders' requests
   * reject with a DOMException named `AbortError`. Exclusive mode only.
   */
  steal?: boolean
}

/** A named lock granted to a {@link LockManager.request} callback. */
export declare class Lock {
  /** Locks are made by {@link LockManager.request} only. */
  private constructor ()
  /** The name that was requested. */
  readonly name: string
  /** The mode it was granted in. */
  readonly mode: LockMode
}

/** One entry of {@link LockManager.query}. */
export interface LockInfo {
  /** The lock's name. */
  name: string
  /** The mode held or requested. */
  mode: LockMode
  /** The `threadId` of the requesting thread, as a string. */
  clientId: string
}

/** What {@link LockManager.query} resolves with. */
export interface LockManagerSnapshot {
  /** Locks held now, in all threads. */
  held: LockInfo[]
  /** Requests waiting now, in all threads, oldest first. */
  pending: LockInfo[]
}

/**
 * Named locks with the behaviour of the Web Locks API (`navigator.locks`):
 * one table of names for the whole process, shared by every thread without
 * passing any memory around. Use the {@link locks} instance; every
 * LockManager works on the same table.
 *
 * A lock is held while its callback runs (until the promise the callback
 * returns settles). A thread that ends while holding a named lock releases
 * it.
 */
export declare class LockManager {
  /**
   * Describes the named locks held and requested in every thread.
   *
   * @returns a promise of `{ held, pending }`
   */
  query (): Promise<LockManagerSnapshot>
}

/** The request() forms of {@link LockManager}, shared with threadlock/host and threadlock/postgres. */
export interface LockManager extends NamedLockRequests<Lock, LockRequestOptions> {}

/** The process-wide {@link LockManager}, like `navigator.locks`. */
export declare const locks: LockManager

/** The stable codes of a {@link LockError}. */
export type LockErrorCode =
  | 'ETIMEDOUT'
  | 'ENOTOWNER'
  | 'EDEADLK'
  | 'EBUSY'

/**
 * The lock policy's settings (AsyncLock's default mode, RWLock writers),
 * written once in the native core. While others wait, a holder keeps the
 * lock for at most `sliceGrants` grants or `sliceMs` milliseconds in a row;
 * a waiter that has waited `starvationMs` is handed the lock at the next
 * release, whoever releases and how (a promise request: the first release
 * after its event loop runs; it is not handed a lock while its loop is
 * busy).
 */
export declare const lockPolicy: Readonly<{
  sliceGrants: number
  sliceMs: number
  starvationMs: number
  courtesyMicros: number
  presentMicros: number
}>

/** An error of a lock operation; tell the cases apart by `code`. */
export declare class LockError extends Error {
  /**
   * @param code one of {@link LockError.codes}
   * @param message a description for people
   */
  constructor (code: LockErrorCode, message?: string)
  /** Always `'LockError'`. */
  readonly name: 'LockError'
  /**
   * `ETIMEDOUT`: the timeout ran out before the lock was granted.
   * `ENOTOWNER`: a release by a thread that does not hold the lock.
   * `EDEADLK`: a blocking acquire that could never succeed.
   * `EBUSY`: a non-blocking attempt found the lock held.
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
  /** Always `'AbortError'`. */
  readonly name: 'AbortError'
  /** Always `'ABORT_ERR'`, as in Node's own AbortErrors. */
  readonly code: 'ABORT_ERR'
  /** The `reason` of the signal that aborted the request. */
  cause?: unknown
}
