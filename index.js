'use strict'

const { wait, notify, waitAsync, waiterCount } = require('./lib/atomics')
const { AsyncLock } = require('./lib/AsyncLock')
const { LockError, AbortError } = require('./lib/errors')

module.exports = { wait, notify, waitAsync, waiterCount, AsyncLock, LockError, AbortError }
