// The CommonJS side of threadlock/lockfile without @types/node or the DOM.

import lockfile = require('threadlock/lockfile')

export async function use (file: string): Promise<boolean> {
  const release = await lockfile.lock(file, { retries: { retries: 3, minTimeout: 100 } })
  const locked: boolean = await lockfile.check(file)
  await release()
  const releaseSync: () => void = lockfile.lockSync(file)
  releaseSync()
  return locked && lockfile.createLockfile({ path: '/tmp/x' }).checkSync(file)
}
