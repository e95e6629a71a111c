'use strict'

// The lock passed to a request's callback: the Web Locks Lock (name, mode)
// plus what a lock held on a server needs. `token` is the grant's fencing
// token, and `signal` aborts if the session holding the lock ends before
// the callback settles (the lock may then be granted to someone else).

const kCreate = Symbol('kCreate')

class Lock {
  #name
  #mode
  #token
  #signal
  constructor (key, name, mode, token, signal) {
    if (key !== kCreate) throw new TypeError('Illegal constructor')
    this.#name = name
    this.#mode = mode
    this.#token = token
    this.#signal = signal
  }

  get name () { return this.#name }
  get mode () { return this.#mode }
  get token () { return this.#token }
  get signal () { return this.#signal }
}

Object.defineProperties(Lock.prototype, {
  name: { enumerable: true },
  mode: { enumerable: true },
  token: { enumerable: true },
  signal: { enumerable: true },
  [Symbol.toStringTag]: { value: 'Lock', writable: false, enumerable: false, configurable: true }
})

function createLock (name, mode, token, signal) {
  return new Lock(kCreate, name, mode, token, signal)
}

module.exports = { Lock, createLock }
