'use strict'

// Errors of threadlock/host that are not those of a lock's wait (LockError,
// lib/errors.js, covers ETIMEDOUT and EDEADLK). A HostError carries a stable
// `code`.

const { codedErrorClass } = require('../errors')

const codes = Object.freeze({
  // The manager was closed.
  ECLOSED: 'ECLOSED',
  // The table file failed a check (bad header, an index out of range): a
  // process of the same user wrote it, or it belongs to another version.
  ECORRUPT: 'ECORRUPT',
  // The table has no free name entry or request node left.
  EFULL: 'EFULL',
  // The directory is on a network or virtual file system, whose locks and
  // shared memory cannot be trusted across processes.
  EFSTYPE: 'EFSTYPE',
  // This platform has no threadlock/host core yet.
  ENOTSUP: 'ENOTSUP',
  // The directory or the table file could be written, replaced or linked
  // by another user (its owner, its mode, a symbolic link on the way, a
  // hard link, not a regular file): refused, whatever the path.
  EUNSAFE: 'EUNSAFE',
  // The table file is in use by processes of another layout version.
  EVERSION: 'EVERSION',
  // The table could not be joined (another path to the same file in use,
  // byte 0 locked too long, no process slot free). An operating-system
  // error has its own code instead: 'EACCES', 'ENOENT', 'EISDIR', ...
  EATTACH: 'EATTACH'
})

const HostError = codedErrorClass('HostError', codes)

module.exports = { HostError, codes }
