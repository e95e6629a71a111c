// An ES module consumer that has neither @types/node nor the DOM library: it
// compiles with `"types": []` and `"lib": ["es2022"]`.

import threadlock, { AbortError, AsyncLock, RWLock, type AbortSignalLike, type RWLockHandle } from 'threadlock'

// @ts-expect-error: no DOM library and no @types/node in this compilation
export type Missing = AbortSignal

export async function use (signal: AbortSignalLike): Promise<boolean> {
  const lock = new threadlock.AsyncLock()
  const same: AsyncLock = lock
  try {
    const release = await same.acquire({ signal })
    const died: boolean = release.ownerDied
    release()
    return died
  } catch (err) {
    if (err instanceof AbortError) return false
    throw err
  }
}

// The named handle types come through the ES module entry point too.
export const rwHandle: RWLockHandle = new RWLock().handle
