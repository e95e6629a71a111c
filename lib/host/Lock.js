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
  #signalOf
  // `signalOf` makes the signal when it is first read (LockManager's
  // signalOf): most callbacks never read it.
  constructor (key, name, mode, token, ownerDied, signalOf) {
    super(key, name, mode, token, undefined)
    this.#ownerDied = ownerDied
    this.#signalOf = signalOf
  }

  get ownerDied () { return this.#ownerDied }
  get signal () { return this.#signalOf() }
}

defineAttributes(Lock, 'Lock', ['name', 'mode', 'token', 'ownerDied', 'signal'])

function createLock (name, mode, token, ownerDied, signalOf) {
  return new Lock(kGrant, name, mode, token, ownerDied, signalOf)
}

module.exports = { Lock, createLock }
