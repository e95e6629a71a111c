'use strict'

// The lock passed to a request's callback: a Grant (lib/Grant.js), the Web
// Locks Lock (name, mode) plus what a lock held on a server needs. `token`
// is the grant's fencing token, and `signal` aborts if the session holding
// the lock ends before the callback settles (the lock may then be granted to
// someone else).

const { Grant, kGrant, defineAttributes } = require('../Grant')

class Lock extends Grant {
  #lease
  // The signal is the session lease's (Lease in session.js), made when it
  // is first read: most callbacks never read it.
  constructor (key, name, mode, token, lease) {
    super(key, name, mode, token, undefined)
    this.#lease = lease
  }

  get signal () { return this.#lease.signal() }
}

defineAttributes(Lock, 'Lock', ['name', 'mode', 'token', 'signal'])

function createLock (name, mode, token, lease) {
  return new Lock(kGrant, name, mode, token, lease)
}

module.exports = { Lock, createLock }
