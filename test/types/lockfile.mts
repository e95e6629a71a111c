// The ES module side of threadlock/lockfile without @types/node or the DOM.

import lockfile, { lock, type LockfileError } from 'threadlock/lockfile'

export const same: boolean = lockfile.lock === lock
export const onCompromised = (err: LockfileError): string => `${err.code} ${err.file}`
export const pending: Promise<() => Promise<void>> = lockfile('file', { onCompromised })
