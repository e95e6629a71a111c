// A CommonJS consumer of threadlock/postgres that has neither @types/node,
// nor the DOM library, nor pg's types: it compiles with `"types": []` and
// `"lib": ["es2022"]`.

import {
  AbortSignalLike,
  Lock,
  LockError,
  LockManager,
  LockSignal,
  SessionError,
  codes,
  createLockManager
} from 'threadlock/postgres'

// These names must be missing here, or the compilation would not show that
// the types stand alone.
// @ts-expect-error: no DOM library and no @types/node in this compilation
export type Missing = AbortSignal
// @ts-expect-error: no @types/node in this compilation
export type MissingBuffer = Buffer

declare const signal: AbortSignalLike

export async function use (): Promise<bigint> {
  const manager: LockManager = createLockManager('postgres://localhost/db', { maxConnections: 2 })
  try {
    return await manager.request('name', { mode: 'shared', signal, timeout: 1000, ref: false }, (lock: Lock) => {
      // Without a global AbortSignal, the lock's signal is the structural one.
      const lost: LockSignal = lock.signal
      const same: AbortSignalLike = lost
      if (same.aborted) throw same.reason
      return lock.token
    })
  } catch (err) {
    if (err instanceof LockError && err.code === 'ETIMEDOUT') return -1n
    if (err instanceof SessionError && err.code === codes.ELOCKLOST) return -2n
    throw err
  } finally {
    await manager.close()
  }
}
