'use strict'

// threadlock/host: the named locks of threadlock.locks shared by the
// processes of one host. Every process (and every manager) that names the
// same directory shares its locks, through a table file in it.

const fs = require('fs')
const native = require('../native')
const { parseManager } = require('./options')
const { HostError, codes } = require('./errors')
const { LockManager, kDoorbell } = require('./LockManager')
const { Lock } = require('./Lock')
const { HeldLock } = require('./HeldLock')
const { LockError } = require('../errors')

// Creates the directory (mode 0700) if missing; the per-user default must
// be a directory of this user that only this user can enter, since anyone
// who can write the table can disturb its locks.
function prepare (dir, isDefault) {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  } catch (err) {
    throw new HostError(codes.EATTACH, `createLockManager: cannot create directory ${dir}: ${err.message}`, { cause: err })
  }
  if (isDefault && typeof process.getuid === 'function') {
    const st = fs.lstatSync(dir)
    if (!st.isDirectory() || st.uid !== process.getuid() || (st.mode & 0o077) !== 0) {
      throw new HostError(codes.EATTACH, `createLockManager: ${dir} must be a directory owned by this user with mode 0700`)
    }
  }
}

/**
 * Creates a LockManager whose locks are shared by every process that uses
 * the same directory (`options.path`, by default a per-user directory).
 */
function createLockManager (options) {
  const settings = parseManager(options)
  if (!native.hostSupported) {
    throw new HostError(codes.ENOTSUP, `createLockManager: threadlock/host is not supported on this platform yet (${process.platform}); it works on Linux today`)
  }
  prepare(settings.path, settings.isDefault)
  // The doorbell reaches the manager through a weak reference: a manager
  // the script dropped (with nothing pending) may be collected, and its
  // handle's finalizer detaches it.
  let ref = null
  const handle = native.hostAttach(settings.path, () => {
    const manager = ref === null ? undefined : ref.deref()
    if (manager !== undefined) manager[kDoorbell]()
  })
  if (typeof handle === 'string') {
    const code = /file system/.test(handle) ? codes.EFSTYPE : /corrupt/.test(handle) ? codes.ECORRUPT : codes.EATTACH
    throw new HostError(code, `createLockManager: ${handle}`)
  }
  const manager = new LockManager(handle, settings.path)
  ref = new WeakRef(manager)
  return manager
}

module.exports = { createLockManager, LockManager, Lock, HeldLock, HostError, LockError, codes }
