import { expectError, expectType } from 'tsd'
import lockfile = require('./lockfile')
import LockfileError = lockfile.LockfileError
import Lockfile = lockfile.Lockfile
const { check, checkSync, createLockfile, lock, lockSync, unlock, unlockSync } = lockfile

expectType<Promise<() => Promise<void>>>(lock('file'))
expectType<Promise<() => Promise<void>>>(lock('file', { retries: 3, stale: 10000, update: 5000, realpath: false }))
expectType<Promise<() => Promise<void>>>(lock('file', { retries: { retries: 5, factor: 1.5, minTimeout: 50, maxTimeout: 500, randomize: true } }))
expectType<Promise<() => Promise<void>>>(lock('file', { onCompromised: (err: LockfileError) => { expectType<string>(err.file) }, lockfilePath: 'dir.lock' }))
expectType<Promise<void>>(unlock('file'))
expectType<Promise<boolean>>(check('file', { stale: 1000 }))
expectType<() => void>(lockSync('file', { retries: 2 }))
expectType<void>(unlockSync('file', { realpath: false }))
expectType<boolean>(checkSync('file'))
expectType<Promise<() => Promise<void>>>(lockfile('file'))
expectType<Promise<() => Promise<void>>>(lockfile.lock('file'))
expectType<Lockfile>(createLockfile({ path: '/tmp/x' }))
expectType<Lockfile>(lockfile.createLockfile())
expectError(lock(42))
expectError(lock('file', { retries: '3' }))
expectError(unlock('file', { retries: 3 }))
expectError(lock('file', { stale: true }))
