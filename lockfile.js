'use strict'

// The entry point of threadlock/lockfile (see lib/lockfile.js):
// proper-lockfile's API on threadlock/host's named locks. As
// proper-lockfile's, the module is the lock function itself, with lock,
// unlock, check, lockSync, unlockSync and checkSync as its properties;
// createLockfile({ path }) makes the same six on another host directory.

const { createLockfile } = require('./lib/lockfile')

const api = createLockfile()

function lockfile (file, options) {
  return api.lock(file, options)
}

module.exports = Object.assign(lockfile, api, { createLockfile })
