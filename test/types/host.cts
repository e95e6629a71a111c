// A CommonJS consumer of threadlock/host that has neither @types/node nor
// the DOM library: it compiles with `"types": []` and `"lib": ["es2022"]`.

import { AbortSignalLike, HostError, LockError, createLockManager } from 'threadlock/host'

declare const signal: AbortSignalLike

export async function use (): Promise<bigint> {
  const locks = createLockManager({ path: '/tmp/app' })
  const token = await locks.request('n', { signal }, (lock) => {
    const aborted: boolean = lock.signal.aborted
    return aborted ? 0n : lock.token
  })
  const held = locks.requestSync('n', { timeout: 100 })
  held.release()
  const snapshot = await locks.query()
  const pid: number = snapshot.held.length > 0 ? snapshot.held[0].pid : 0
  await locks.close()
  const e: HostError | LockError = new HostError('ECLOSED', String(pid))
  return e.code === 'ECLOSED' ? token : held.token
}
