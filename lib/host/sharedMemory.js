'use strict'

// openSharedMemory(name, { path, size }): a SharedArrayBuffer over a file
// in a host directory, mapped MAP_SHARED, so that every process of the
// host that opens the same name in the same directory sees the same memory
// (src/host/shm_linux.c, src/host/binding_shm.c). The directory and the
// file pass the host's trust checks (the user is the boundary), as the
// table of createLockManager() does.

const path = require('path')
const util = require('util')
const native = require('../native')
const { describe, checkKeys } = require('../validate')
const { defaultPath } = require('./options')
const { HostError, codes } = require('./errors')

const WHERE = 'openSharedMemory'

// Names become file names: letters, digits, '_', '-' and '.', not starting
// with '.', at most 200 characters. The file is `<name>.shm`.
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/

// The largest size: the data and the header page must be addressable by a
// safe integer (the OS refuses sizes it cannot allocate with its own code,
// leaving no file behind).
const MAX_SIZE = 2 ** 53 - 2 ** 13

function readName (name) {
  if (typeof name !== 'string') {
    throw new TypeError(`${WHERE}: name must be a string, received ${describe(name)}`)
  }
  if (!NAME.test(name)) {
    throw new RangeError(`${WHERE}: name must be 1 to 200 letters, digits, '_', '-' or '.', not starting with '.' (it names a file), received ${JSON.stringify(name)}`)
  }
  return name
}

function readOptions (options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${WHERE}: options must be an object { path, size }, received ${describe(options)}`)
  }
  checkKeys(options, ['path', 'size'], WHERE)
  const { size } = options
  let dir = options.path
  if (typeof size !== 'number') {
    throw new TypeError(`${WHERE}: options.size must be a number of bytes, received ${describe(size)}`)
  }
  if (!Number.isInteger(size) || size <= 0 || size % 8 !== 0 || size > MAX_SIZE) {
    throw new RangeError(`${WHERE}: options.size must be a positive multiple of 8 up to ${MAX_SIZE}, received ${size}`)
  }
  if (dir === undefined) {
    dir = defaultPath()
  } else {
    if (typeof dir !== 'string' && !(dir instanceof URL)) {
      throw new TypeError(`${WHERE}: options.path must be a string or a file URL, received ${describe(dir)}`)
    }
    if (dir instanceof URL) dir = require('url').fileURLToPath(dir)
    if (dir === '' || dir.includes('\0')) {
      throw new RangeError(`${WHERE}: options.path must be a non-empty path without NUL characters`)
    }
  }
  return { dir: path.resolve(dir), size }
}

// The error of an open that failed: the OS call's errno when one failed,
// else the core's own code; never read from the message.
function openError ([code, errno, message, found]) {
  const C = native.hostConstants
  const S = native.shmConstants
  if (code === S.ESIZE) {
    return new RangeError(`${WHERE}: ${message}; every process must open a name with the size it was created with (${found})`)
  }
  let name = codes.EATTACH
  if (code === S.ENOTSUP) name = codes.ENOTSUP
  else if (code === C.ESYS && errno > 0) name = util.getSystemErrorName(-errno)
  else if (code === C.EFSTYPE) name = codes.EFSTYPE
  else if (code === C.EUNSAFE) name = codes.EUNSAFE
  else if (code === C.EVERSION) name = codes.EVERSION
  else if (code === C.ECORRUPT) name = codes.ECORRUPT
  else if (code === C.ENAMES) name = codes.EFULL
  return new HostError(name, `${WHERE}: ${message}`)
}

/**
 * A SharedArrayBuffer of `size` bytes over the file `<name>.shm` in the
 * directory `path` (by default the host scope's per-user directory),
 * shared by every process that opens the same name there.
 */
function openSharedMemory (name, options) {
  readName(name)
  const { dir, size } = readOptions(options)
  if (!native.hostSupported) {
    throw new HostError(codes.ENOTSUP, `${WHERE}: threadlock/host is not supported on this platform yet (${process.platform}); it works on Linux today`)
  }
  if (!native.shmSupported) {
    throw new HostError(codes.ENOTSUP, `${WHERE}: this Node.js (${process.version}) cannot back a SharedArrayBuffer with a file: it needs node_api_create_external_sharedarraybuffer, in Node.js 22 and later`)
  }
  const r = native.shmOpen(dir, `${name}.shm`, size)
  if (Array.isArray(r)) throw openError(r)
  return r
}

module.exports = { openSharedMemory }
