'use strict'

// threadlock/host: the named locks of threadlock.locks shared by the
// processes of one host. Every process (and every manager) that names the
// same directory shares its locks, through a table file in it.

const util = require('util')
const native = require('../native')
const { parseManager } = require('./options')
const { HostError, codes } = require('./errors')
const { LockManager, kDoorbell } = require('./LockManager')
const { Lock } = require('./Lock')
const { HeldLock } = require('./HeldLock')
const { LockError } = require('../errors')
const { openSharedMemory } = require('./sharedMemory')

// The code of an attach that failed: the OS call's errno when one failed
// (util.getSystemErrorName), else the core's own code. Never read from
// the message, which may contain any path.
function attachError ([code, errno, message]) {
  const C = native.hostConstants
  let name = codes.EATTACH
  if (code === C.ESYS && errno > 0) name = util.getSystemErrorName(-errno)
  else if (code === C.EFSTYPE) name = codes.EFSTYPE
  else if (code === C.EUNSAFE) name = codes.EUNSAFE
  else if (code === C.EVERSION) name = codes.EVERSION
  else if (code === C.ECORRUPT) name = codes.ECORRUPT
  return new HostError(name, `createLockManager: ${message}`)
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
  // The doorbell reaches the manager through a weak reference: a manager
  // the script dropped (with nothing pending) may be collected, and its
  // handle's finalizer detaches it.
  let ref = null
  const handle = native.hostAttach(settings.path, () => {
    const manager = ref === null ? undefined : ref.deref()
    if (manager !== undefined) manager[kDoorbell]()
  })
  if (Array.isArray(handle)) throw attachError(handle)
  const manager = new LockManager(handle, settings.path)
  ref = new WeakRef(manager)
  return manager
}

module.exports = { createLockManager, openSharedMemory, LockManager, Lock, HeldLock, HostError, LockError, codes }
