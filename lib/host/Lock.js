'use strict'

// The lock passed to a request's callback: the Web Locks Lock (name, mode)
// plus what a lock shared with other processes needs: `token`, the grant's
// fencing token (a bigint, strictly increasing per name across every
// process of the directory), `ownerDied`, whether the previous holder's
// process died holding it, and `signal`, which aborts when the lock is
// stolen or the manager closed under it.

const kCreate = Symbol('kCreate')

class Lock {
  #name
  #mode
  #token
  #ownerDied
  #signal
  constructor (key, name, mode, token, ownerDied, signal) {
    if (key !== kCreate) throw new TypeError('Illegal constructor')
    this.#name = name
    this.#mode = mode
    this.#token = token
    this.#ownerDied = ownerDied
    this.#signal = signal
  }

  get name () { return this.#name }
  get mode () { return this.#mode }
  get token () { return this.#token }
  get ownerDied () { return this.#ownerDied }
  get signal () { return this.#signal }
}

Object.defineProperties(Lock.prototype, {
  name: { enumerable: true },
  mode: { enumerable: true },
  token: { enumerable: true },
  ownerDied: { enumerable: true },
  signal: { enumerable: true },
  [Symbol.toStringTag]: { value: 'Lock', writable: false, enumerable: false, configurable: true }
})

function createLock (name, mode, token, ownerDied, signal) {
  return new Lock(kCreate, name, mode, token, ownerDied, signal)
}

module.exports = { Lock, createLock }
