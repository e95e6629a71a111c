'use strict'

// The lock passed to a request's callback: a Grant (lib/Grant.js), the Web
// Locks Lock (name, mode) plus what a lock shared with other processes
// needs: `token`, the grant's fencing token (strictly increasing per name
// across every process of the directory), `ownerDied`, whether the previous
// holder's process died holding it, and `signal`, which aborts when the
// lock is stolen or the manager closed under it.

const { Grant, kGrant, defineAttributes } = require('../Grant')

class Lock extends Grant {
  #ownerDied
  constructor (key, name, mode, token, ownerDied, signal) {
    super(key, name, mode, token, signal)
    this.#ownerDied = ownerDied
  }

  get ownerDied () { return this.#ownerDied }
}

defineAttributes(Lock, 'Lock', ['name', 'mode', 'token', 'ownerDied', 'signal'])

function createLock (name, mode, token, ownerDied, signal) {
  return new Lock(kGrant, name, mode, token, ownerDied, signal)
}

module.exports = { Lock, createLock }
