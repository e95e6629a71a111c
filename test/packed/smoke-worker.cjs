'use strict'

// Takes the lock that the main thread holds: the lock() below blocks until
// the main thread releases it.

const assert = require('assert')
const { workerData } = require('worker_threads')
const { AsyncLock } = require('threadlock')

const lock = AsyncLock.from(workerData.handle)
assert.strictEqual(lock.tryLock(), false, 'the main thread holds the lock')
lock.lock({ timeout: 30000 })
lock.unlock()
