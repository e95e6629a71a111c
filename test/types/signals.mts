// A consumer that passes real AbortSignals. It compiles once with @types/node
// and once with the DOM library: the signal of either must be accepted, and
// the signal threadlock/postgres gives out is that AbortSignal.

import { AsyncLock, Barrier, locks } from 'threadlock'
import { createLockManager } from 'threadlock/postgres'

export async function use (): Promise<void> {
  const controller = new AbortController()
  const lock = new AsyncLock()
  const release = await lock.acquire({ signal: controller.signal })
  release()
  await lock.runExclusive(() => 1, { signal: AbortSignal.timeout(10) })
  await new Barrier(1).arriveAndWait({ signal: controller.signal })
  await locks.request('name', { signal: controller.signal }, () => undefined)
  // @ts-expect-error: a string is no signal
  await lock.acquire({ signal: 'stop' })

  const manager = createLockManager('postgres://localhost/db')
  await manager.request('name', { signal: AbortSignal.timeout(10) }, (held) => {
    const real: AbortSignal = held.signal
    real.throwIfAborted()
  })
}
