'use strict'

// The lock passed to a request's callback: a Grant (lib/Grant.js), the Web
// Locks Lock (name, mode) plus what a lock held on a server needs. `token`
// is the grant's fencing token, and `signal` aborts if the session holding
// the lock ends before the callback settles (the lock may then be granted to
// someone else).

const { Grant, kGrant, defineAttributes } = require('../Grant')

class Lock extends Grant {}

defineAttributes(Lock, 'Lock', ['name', 'mode', 'token', 'signal'])

function createLock (name, mode, token, signal) {
  return new Lock(kGrant, name, mode, token, signal)
}

module.exports = { Lock, createLock }
