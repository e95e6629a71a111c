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
  // The table could not be opened, sized, mapped or joined.
  EATTACH: 'EATTACH'
})

const HostError = codedErrorClass('HostError', codes)

module.exports = { HostError, codes }
