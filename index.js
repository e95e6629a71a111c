'use strict'

const { wait, notify, waitAsync, waiterCount } = require('./lib/atomics')
const { AsyncLock } = require('./lib/AsyncLock')
const { Semaphore } = require('./lib/Semaphore')
const { RWLock } = require('./lib/RWLock')
const { ConditionVariable } = require('./lib/ConditionVariable')
const { Barrier } = require('./lib/Barrier')
const { CountDownLatch } = require('./lib/CountDownLatch')
const { locks, LockManager, Lock } = require('./lib/locks')
const { LockError, AbortError } = require('./lib/errors')
const { lockPolicy } = require('./lib/policy')

module.exports = {
  wait,
  notify,
  waitAsync,
  waiterCount,
  AsyncLock,
  Semaphore,
  RWLock,
  ConditionVariable,
  Barrier,
  CountDownLatch,
  locks,
  LockManager,
  Lock,
  LockError,
  AbortError,
  lockPolicy
}
