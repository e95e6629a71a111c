// A CommonJS consumer that has neither @types/node nor the DOM library: it
// compiles with `"types": []` and `"lib": ["es2022"]`.

import {
  AbortSignalLike,
  AsyncLock,
  Barrier,
  ConditionVariable,
  CountDownLatch,
  LockError,
  RWLock,
  Release,
  Semaphore,
  locks,
  notify,
  wait,
  waitAsync
} from 'threadlock'

// These names must be missing here, or the compilation would not show that
// the package's types stand alone.
// @ts-expect-error: no DOM library and no @types/node in this compilation
export type Missing = AbortSignal
// @ts-expect-error: no @types/node in this compilation
export type MissingBuffer = Buffer

declare const signal: AbortSignalLike

export async function use (): Promise<number> {
  const i32 = new Int32Array(new SharedArrayBuffer(8))
  const result: 'ok' | 'not-equal' | 'timed-out' = wait(i32, 0, 0, 10)
  const woken: number = notify(i32, 0)
  const pending = waitAsync(i32, 1, 0, 10, { ref: false })
  if (pending.async) await pending.value

  const lock = new AsyncLock()
  const release: Release = await lock.acquire({ timeout: 10, signal })
  release()
  await lock.runExclusive(() => 1, { signal })
  const again = AsyncLock.from(lock.handle)
  again.lock({ timeout: 5 })
  again.unlock()

  const sem = new Semaphore(2)
  ;(await sem.acquire(1, { signal }))()
  const rw = new RWLock()
  ;(await rw.acquireRead({ signal }))()
  const cv = new ConditionVariable()
  await lock.runExclusive(() => cv.wait(lock, { timeout: 1, signal }))
  await new Barrier(1).arriveAndWait({ signal })
  await new CountDownLatch(0).wait({ signal })

  const mode = await locks.request('name', { signal }, async (held) => held?.mode)
  if (mode !== 'exclusive') throw new LockError('EBUSY', 'unexpected mode')
  return result.length + woken
}
