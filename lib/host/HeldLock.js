'use strict'

// What requestSync() returns: a lock held until release() (or the end of a
// `using` block). Besides the fields of a Lock it knows whether it is still
// held; release() is idempotent.

const kCreate = Symbol('kCreate')
// Node 20 has no Symbol.dispose yet; TypeScript's polyfill uses this one.
const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

class HeldLock {
  #name
  #mode
  #token
  #ownerDied
  #signal
  #release
  constructor (key, name, mode, token, ownerDied, signal, release) {
    if (key !== kCreate) throw new TypeError('Illegal constructor')
    this.#name = name
    this.#mode = mode
    this.#token = token
    this.#ownerDied = ownerDied
    this.#signal = signal
    this.#release = release
  }

  get name () { return this.#name }
  get mode () { return this.#mode }
  get token () { return this.#token }
  get ownerDied () { return this.#ownerDied }
  get signal () { return this.#signal }
  /** Whether release() has not run yet. */
  get held () { return this.#release !== null }

  /**
   * Releases the lock. Returns false if it had been stolen (or lost when
   * the manager closed) before, true otherwise; a second call returns false.
   */
  release () {
    const release = this.#release
    if (release === null) return false
    this.#release = null
    return release()
  }

  [dispose] () {
    this.release()
  }
}

Object.defineProperties(HeldLock.prototype, {
  [Symbol.toStringTag]: { value: 'HeldLock', writable: false, enumerable: false, configurable: true }
})

function createHeldLock (name, mode, token, ownerDied, signal, release) {
  return new HeldLock(kCreate, name, mode, token, ownerDied, signal, release)
}

module.exports = { HeldLock, createHeldLock }
