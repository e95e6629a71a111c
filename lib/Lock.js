'use strict'

// Lock: what the callback of a named-lock request receives, with the name
// and mode of the granted lock. Only lib/locks.js creates Lock objects:
// like the Web Locks API (and worker_threads.locks), `new Lock()` from
// script is a TypeError.

const kCreate = Symbol('kCreate')

class Lock {
  #name
  #mode
  constructor (key, name, mode) {
    if (key !== kCreate) throw new TypeError('Lock: Illegal constructor')
    this.#name = name
    this.#mode = mode
  }

  get name () { return this.#name }
  get mode () { return this.#mode }
}

// WebIDL attributes are enumerable accessors on the prototype.
Object.defineProperties(Lock.prototype, {
  name: { enumerable: true },
  mode: { enumerable: true },
  [Symbol.toStringTag]: { value: 'Lock', writable: false, enumerable: false, configurable: true }
})

function createLock (name, mode) {
  return new Lock(kCreate, name, mode)
}

module.exports = { Lock, createLock }
