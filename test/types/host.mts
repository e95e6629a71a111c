// The ES module side of threadlock/host without @types/node or the DOM.

import host, { createLockManager } from 'threadlock/host'

export const same: boolean = host.createLockManager === createLockManager
export const held = createLockManager().requestSync('n', { ifAvailable: true })
