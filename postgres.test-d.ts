import { expectAssignable, expectError, expectType } from 'tsd'
import {
  Lock,
  LockError,
  LockErrorCode,
  LockManager,
  LockManagerSnapshot,
  SessionError,
  SessionErrorCode,
  codes,
  createLockManager
} from './postgres'

const manager = createLockManager('postgres://localhost/db', { maxConnections: 4 })
expectType<LockManager>(manager)
expectType<LockManager>(createLockManager({ host: 'db', keepAlive: true }))
expectType<LockManager>(createLockManager())
expectError(createLockManager(42))
expectError(createLockManager('x', { maxConnections: '4' }))

expectType<Promise<number>>(manager.request('n', (lock) => {
  expectType<Lock>(lock)
  expectType<bigint>(lock.token)
  expectType<AbortSignal>(lock.signal)
  expectType<'exclusive' | 'shared'>(lock.mode)
  return 1
}))
expectType<Promise<string>>(manager.request('n', { mode: 'shared', signal: new AbortController().signal }, async () => 's'))
expectType<Promise<boolean>>(manager.request('n', { ifAvailable: true }, (lock) => {
  expectType<Lock | null>(lock)
  return lock !== null
}))
expectError(manager.request('n', { steal: true }, () => 1))
expectError(manager.request('n', { mode: 'read' }, () => 1))

expectType<Promise<LockManagerSnapshot>>(manager.query())
expectType<Promise<void>>(manager.close())

const err = new SessionError('ELOCKLOST', 'lost')
expectType<SessionErrorCode>(err.code)
expectAssignable<Error>(err)
expectType<'ECONNECT'>(codes.ECONNECT)

// threadlock's timeout, rejecting with the LockError of threadlock.
expectType<Promise<number>>(manager.request('n', { timeout: 100, mode: 'shared' }, () => 1))
expectError(manager.request('n', { timeout: '100' }, () => 1))
expectType<LockErrorCode>(new LockError('ETIMEDOUT').code)

// close() takes an optional timeout.
expectType<Promise<void>>(manager.close())
expectType<Promise<void>>(manager.close({ timeout: 1000 }))
expectType<Promise<void>>(manager.close({ timeout: Infinity }))
expectError(manager.close({ timeout: '1s' }))
