// An ES module consumer of threadlock/postgres that has neither @types/node
// nor the DOM library: it compiles with `"types": []` and `"lib": ["es2022"]`.

import postgres, { type AbortSignalLike, type LockManagerSnapshot } from 'threadlock/postgres'

// @ts-expect-error: no DOM library and no @types/node in this compilation
export type Missing = AbortSignal

export async function use (signal: AbortSignalLike): Promise<number> {
  const manager = postgres.createLockManager({ host: 'db' })
  const held = await manager.request('name', { signal }, (lock) => lock.name.length)
  const snapshot: LockManagerSnapshot = await manager.query()
  await manager.close()
  return held + snapshot.pending.length
}
