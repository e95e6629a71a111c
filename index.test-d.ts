import { expectAssignable, expectError, expectNotAssignable, expectType } from 'tsd'
import {
  AbortError,
  AbortSignalLike,
  AsyncLock,
  AsyncLockHandle,
  BarrierHandle,
  ConditionVariableHandle,
  CountDownLatchHandle,
  RWLockHandle,
  SemaphoreHandle,
  Barrier,
  ConditionVariable,
  CountDownLatch,
  Handle,
  HandleLike,
  PrimitiveType,
  SlotOptions,
  Lock,
  LockError,
  lockPolicy,
  LockErrorCode,
  LockManager,
  LockManagerSnapshot,
  RWLock,
  Release,
  Semaphore,
  PermitsOption,
  WaitAsyncResult,
  WaitResult,
  notify,
  wait,
  waitAsync,
  waiterCount,
  locks
} from '.'
import * as threadlock from '.'

const sab = new SharedArrayBuffer(16)
const i32 = new Int32Array(sab)
const i64 = new BigInt64Array(sab)

// wait: a number for Int32Array, a bigint for BigInt64Array.
expectType<WaitResult>(wait(i32, 0, 0))
expectType<WaitResult>(wait(i32, 0, 0, 100))
expectType<WaitResult>(wait(i64, 0, 0n))
expectType<WaitResult>(wait(i64, 0, 0n, Infinity))
expectError(wait(i32, 0, 0n))
expectError(wait(i64, 0, 0))
expectError(wait(new Uint8Array(sab), 0, 0))
expectError(wait(i32, 0))
expectAssignable<WaitResult>('ok')
expectAssignable<WaitResult>('not-equal')
expectAssignable<WaitResult>('timed-out')
expectNotAssignable<WaitResult>('woken')

// notify and waiterCount take either array type.
expectType<number>(notify(i32, 0))
expectType<number>(notify(i64, 1, 2))
expectError(notify(new Float64Array(2), 0))
expectType<number>(waiterCount(i32, 0))
expectType<number>(waiterCount(i64, 0))

// waitAsync: a union narrowed by `async`.
const r = waitAsync(i32, 0, 0, 10, { ref: false })
expectType<WaitAsyncResult>(r)
expectType<WaitAsyncResult>(waitAsync(i64, 0, 0n))
expectError(waitAsync(i64, 0, 0))
expectError(waitAsync(i32, 0, 0, 10, { ref: 'no' }))
if (r.async) {
  expectType<Promise<'ok' | 'timed-out'>>(r.value)
} else {
  expectType<'not-equal' | 'timed-out'>(r.value)
}

// AsyncLock: construction and handles.
const lock = new AsyncLock()
expectType<AsyncLock>(new AsyncLock(sab, 4))
expectError(new AsyncLock(new ArrayBuffer(4)))
expectType<AsyncLockHandle>(lock.handle)
expectType<AsyncLock>(AsyncLock.from(lock.handle))
expectType<AsyncLock>(AsyncLock.from({ buffer: sab }))
expectError(AsyncLock.from({ byteOffset: 0 }))
expectType<AsyncLock>(new AsyncLock(sab, 0, { fifo: true }))
expectError(new AsyncLock(sab, 0, { fifo: 'no' }))
expectType<boolean>(lock.fifo)
expectType<boolean>(lock.handle.fifo)
expectType<AsyncLock>(AsyncLock.from({ buffer: sab, fifo: true }))
expectType<SharedArrayBuffer>(lock.buffer)
expectType<number>(lock.byteOffset)
expectType<boolean>(lock.locked)
expectType<number | null>(lock.owner)
expectType<number>(lock.waiting)
expectType<boolean>(lock.ownerDied)
expectError((lock.locked = true))

// The blocking API.
expectType<void>(lock.lock())
expectType<void>(lock.lock({ timeout: 50 }))
expectError(lock.lock({ timeout: '50' }))
expectType<boolean>(lock.tryLock())
expectType<void>(lock.unlock())

// The promise API.
expectType<Promise<Release>>(lock.acquire())
expectType<Promise<Release>>(lock.acquire({ timeout: 10, signal: AbortSignal.timeout(5), ref: false }))
expectType<Promise<Release>>(lock.acquire({ blocking: false }))
expectError(lock.acquire({ blocking: false, timeout: 10 }))
expectError(lock.acquire({ signal: 'stop' }))
// A signal is typed structurally, so that the types need no DOM or Node
// types; the real AbortSignal fits, a look-alike without listeners does not.
expectAssignable<AbortSignalLike>(new AbortController().signal)
expectNotAssignable<AbortSignalLike>({ aborted: true, reason: undefined })

async function promiseApi (): Promise<void> {
  const release = await lock.acquire()
  expectType<void>(release())
  expectType<boolean>(release.ownerDied)
  expectType<() => void>(release[Symbol.dispose])
  {
    using held = await lock.acquire()
    expectType<Release>(held)
  }
  expectType<number>(await lock.runExclusive(() => 42))
  expectType<string>(await lock.runExclusive(async () => 'done', { timeout: 100 }))
  expectType<number>(await lock.executeLocked(async () => 1))
  expectError(lock.runExclusive(42))
  expectError(lock.executeLocked(() => 1, { timeout: 1 }))
}
expectType<() => Promise<void>>(promiseApi)

// Semaphore.
const sem = new Semaphore(3)
expectType<Semaphore>(new Semaphore(0, sab, 8))
expectType<Semaphore>(Semaphore.from(sem.handle))
expectType<Handle<'Semaphore'>>(sem.handle)
expectAssignable<Handle>(sem.handle)
expectType<number>(sem.value)
expectType<number>(sem.waiting)
expectType<boolean>(sem.tryAcquire())
expectType<void>(sem.acquireSync(2, { timeout: 10 }))
expectType<Promise<Release>>(sem.acquire())
expectType<Promise<Release>>(sem.acquire(2, { blocking: false }))
expectError(sem.acquire(2, { blocking: false, timeout: 1 }))
expectType<void>(sem.release(2))
expectType<Promise<string>>(sem.runExclusive(() => 'x', { permits: 2, timeout: 5 }))
expectError(new Semaphore('3'))
// The count inside the options object, as runExclusive takes it.
expectType<Promise<Release>>(sem.acquire({ permits: 2, timeout: 10, signal: AbortSignal.timeout(5), ref: false }))
expectType<Promise<Release>>(sem.acquire({ timeout: 10 }))
expectType<void>(sem.acquireSync({ permits: 2, timeout: 10 }))
expectType<boolean>(sem.tryAcquire({ permits: 2 }))
expectError(sem.tryAcquire({ permits: 2, timeout: 1 }))
expectError(sem.acquire({ permits: '2' }))
expectError(sem.acquire({ timout: 10 }))

// RWLock.
const rw = new RWLock()
expectType<RWLock>(RWLock.from(rw.handle))
expectType<number>(rw.readers)
expectType<number | null>(rw.writer)
expectType<number>(rw.waiting)
expectType<boolean>(rw.ownerDied)
expectType<boolean>(rw.tryAcquireRead())
expectType<boolean>(rw.tryAcquireWrite())
expectType<boolean>(rw.acquireReadSync({ timeout: 1 }))
expectType<boolean>(rw.acquireWriteSync())
expectType<void>(rw.releaseRead())
expectType<void>(rw.releaseWrite())
expectType<Promise<Release>>(rw.acquireRead({ signal: AbortSignal.timeout(1) }))
expectType<Promise<Release>>(rw.acquireWrite({ blocking: false }))
expectType<Promise<number>>(rw.runRead(async () => 1))
expectType<Promise<number>>(rw.runWrite(() => 1, { timeout: 10 }))

// ConditionVariable.
const cv = new ConditionVariable()
expectType<ConditionVariable>(ConditionVariable.from(cv.handle))
expectType<number>(cv.waiting)
expectType<'ok' | 'timed-out'>(cv.waitSync(lock, { timeout: 5 }))
expectType<Promise<'ok' | 'timed-out'>>(cv.wait(lock, { timeout: 5, ref: false }))
expectError(cv.wait(lock, { blocking: false }))
expectError(cv.waitSync(rw))
expectType<number>(cv.notifyOne())
expectType<number>(cv.notifyAll())

// Barrier.
const barrier = new Barrier(3)
expectError(new Barrier())
expectType<Barrier>(Barrier.from(barrier.handle))
expectType<number>(barrier.parties)
expectType<number>(barrier.arrived)
expectType<number>(barrier.phase)
expectType<boolean>(barrier.arriveAndWaitSync({ timeout: 10 }))
expectType<Promise<boolean>>(barrier.arriveAndWait({ signal: AbortSignal.timeout(1) }))

// CountDownLatch.
const latch = new CountDownLatch(2)
expectError(new CountDownLatch())
expectType<CountDownLatch>(CountDownLatch.from(latch.handle))
expectType<number>(latch.count)
expectType<number>(latch.countDown())
expectType<number>(latch.countDown(2))
expectType<void>(latch.waitSync({ timeout: 1 }))
expectType<Promise<void>>(latch.wait({ ref: false }))

// Named locks (Web Locks API).
expectType<LockManager>(locks)
expectType<Promise<number>>(locks.request('a', (lock) => {
  expectType<Lock>(lock)
  expectType<string>(lock.name)
  expectType<'exclusive' | 'shared'>(lock.mode)
  return 1
}))
expectType<Promise<'exclusive' | 'shared'>>(locks.request('a', { mode: 'shared', signal: AbortSignal.timeout(1) }, async (lock) => lock.mode))
expectType<Promise<boolean>>(locks.request('a', { ifAvailable: true }, (lock) => {
  expectType<Lock | null>(lock)
  return lock === null
}))
expectType<Promise<void>>(locks.request('a', { steal: true, ref: false }, (lock) => {
  expectType<Lock>(lock)
}))
expectError(locks.request('a', { mode: 'read' }, () => 1))
expectType<Promise<number>>(locks.request('a', { timeout: 100 }, () => 1))
expectError(locks.request('a', { timeout: '100' }, () => 1))
expectError(locks.request('a'))
expectType<Promise<LockManagerSnapshot>>(locks.query())

// Errors.
const e = new LockError('EBUSY', 'held')
expectType<LockErrorCode>(e.code)
expectType<'LockError'>(e.name)
expectAssignable<Error>(e)
expectError(new LockError('EAGAIN'))
expectType<'ETIMEDOUT'>(LockError.codes.ETIMEDOUT)
expectError(LockError.codes.EOWNERDEAD) // never thrown, so not a code
expectError(new LockError('EOWNERDEAD'))
const a = new AbortError('stopped', { cause: 'reason' })
expectType<'AbortError'>(a.name)
expectType<'ABORT_ERR'>(a.code)
expectType<unknown>(a.cause)
expectAssignable<Error>(a)

// The namespace holds exactly the documented exports.
expectType<typeof wait>(threadlock.wait)
expectType<typeof AsyncLock>(threadlock.AsyncLock)

// The lock policy's settings, read-only.
expectType<number>(lockPolicy.starvationMs)
expectType<number>(lockPolicy.sliceGrants)
expectError(lockPolicy.sliceMs = 1)

// Handles name their primitive, and from() of another class refuses them.
expectType<'AsyncLock'>(lock.handle.type)
expectType<'Semaphore'>(sem.handle.type)
expectType<PrimitiveType>(({} as Handle).type)
expectError(AsyncLock.from(sem.handle))
expectError(Semaphore.from(latch.handle))
expectError(RWLock.from(lock.handle))
expectError(ConditionVariable.from(barrier.handle))
expectError(Barrier.from(cv.handle))
expectError(CountDownLatch.from(rw.handle))
expectType<RWLock>(RWLock.from({ type: 'RWLock', buffer: sab }))
expectAssignable<HandleLike<'Barrier'>>(barrier.handle)
expectError(AsyncLock.from({ type: 'Mutex', buffer: sab }))

// One options object in place of (buffer, byteOffset, options).
expectType<AsyncLock>(new AsyncLock({ fifo: true }))
expectType<AsyncLock>(new AsyncLock({ buffer: sab, byteOffset: 4, fifo: false }))
expectType<AsyncLock>(new AsyncLock({}))
expectError(new AsyncLock({ fiffo: true }))
expectError(new AsyncLock({ fifo: true }, 0))
expectError(new AsyncLock({ buffer: new ArrayBuffer(4) }))
expectType<Semaphore>(new Semaphore(2, { buffer: sab, byteOffset: 8 }))
expectType<Semaphore>(new Semaphore(undefined, {}))
expectError(new Semaphore(2, { fifo: true }))
expectType<RWLock>(new RWLock({ buffer: sab }))
expectType<ConditionVariable>(new ConditionVariable({ byteOffset: 0 }))
expectType<Barrier>(new Barrier(2, { buffer: sab }))
expectType<CountDownLatch>(new CountDownLatch(1, {}))
expectError(new CountDownLatch({ buffer: sab }))
expectAssignable<SlotOptions>({ buffer: sab, byteOffset: 4 })
expectAssignable<PermitsOption>({ permits: 3 })

// One named handle type per primitive (what a worker receives).
expectType<SemaphoreHandle>(new Semaphore(1).handle)
expectType<RWLockHandle>(new RWLock().handle)
expectType<ConditionVariableHandle>(new ConditionVariable().handle)
expectType<BarrierHandle>(new Barrier(2).handle)
expectType<CountDownLatchHandle>(new CountDownLatch(1).handle)
expectType<AsyncLockHandle>(new AsyncLock().handle)
expectType<'RWLock'>(({} as RWLockHandle).type)
expectNotAssignable<SemaphoreHandle>(new RWLock().handle)
expectType<RWLock>(RWLock.from({} as RWLockHandle))
expectError(Semaphore.from({} as BarrierHandle))
