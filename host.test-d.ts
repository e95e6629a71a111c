import { expectAssignable, expectError, expectType } from 'tsd'
import {
  HeldLock,
  HostError,
  HostErrorCode,
  OsErrorCode,
  Lock,
  LockError,
  LockManager,
  LockManagerSnapshot,
  codes,
  createLockManager,
  openSharedMemory,
  SharedMemoryOptions
} from './host'

expectType<SharedArrayBuffer>(openSharedMemory('counters', { size: 64 }))
expectType<SharedArrayBuffer>(openSharedMemory('counters', { path: '/tmp/x', size: 64 }))
expectType<SharedArrayBuffer>(openSharedMemory('counters', { path: new URL('file:///tmp/x'), size: 64 }))
expectAssignable<SharedMemoryOptions>({ size: 8 })
expectError(openSharedMemory('counters'))
expectError(openSharedMemory('counters', { path: '/tmp/x' }))
expectError(openSharedMemory(1, { size: 8 }))
expectError(openSharedMemory('counters', { size: '8' }))

const manager = createLockManager({ path: '/tmp/x' })
expectType<LockManager>(manager)
expectType<LockManager>(createLockManager())
expectError(createLockManager({ path: 5 }))
expectError(createLockManager('dir'))

expectType<Promise<number>>(manager.request('n', (lock) => {
  expectType<Lock>(lock)
  expectType<bigint>(lock.token)
  expectType<boolean>(lock.ownerDied)
  expectType<boolean>(lock.signal.aborted)
  expectType<'exclusive' | 'shared'>(lock.mode)
  return 1
}))
expectType<Promise<boolean>>(manager.request('n', { ifAvailable: true }, (lock) => {
  expectType<Lock | null>(lock)
  return lock !== null
}))
expectType<Promise<string>>(manager.request('n', { mode: 'shared', steal: false }, async () => 's'))
expectError(manager.request('n', { mode: 'read' }, () => 1))

expectAssignable<HeldLock>(manager.requestSync('n', { timeout: 100 }))
expectAssignable<HeldLock | null>(manager.requestSync('n', { ifAvailable: true }))
expectError<HeldLock>(manager.requestSync('n', { ifAvailable: true }))
const held = manager.requestSync('n')
expectType<boolean>(held.release())
expectType<bigint>(held.token)
expectError(manager.requestSync('n', { timeout: '1' }))

expectType<Promise<LockManagerSnapshot>>(manager.query())
expectType<Promise<void>>(manager.close())

const err = new HostError('ECLOSED', 'closed')
expectType<HostErrorCode | OsErrorCode>(err.code)
expectType<'ECORRUPT'>(codes.ECORRUPT)
expectType<'EDEADLK' | 'ETIMEDOUT' | 'ENOTOWNER' | 'EBUSY'>(new LockError('EDEADLK').code)
