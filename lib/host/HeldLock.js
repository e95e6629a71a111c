'use strict'

// What requestSync() returns: a lock held until release() (or the end of a
// `using` block). It is a Grant (lib/Grant.js) with the fields of a Lock,
// knows whether it is still held, and release() is idempotent. Unlike a
// Lock's, its fields are not enumerable.

const { Grant, kGrant, defineAttributes } = require('../Grant')

// Node 20 has no Symbol.dispose yet; TypeScript's polyfill uses this one.
const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

class HeldLock extends Grant {
  #ownerDied
  #signalOf
  #release
  // `signalOf` makes the signal when it is first read (LockManager's
  // signalOf).
  constructor (key, name, mode, token, ownerDied, signalOf, release) {
    super(key, name, mode, token, undefined)
    this.#ownerDied = ownerDied
    this.#signalOf = signalOf
    this.#release = release
  }

  get ownerDied () { return this.#ownerDied }
  get signal () { return this.#signalOf() }
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

defineAttributes(HeldLock, 'HeldLock', [])

function createHeldLock (name, mode, token, ownerDied, signalOf, release) {
  return new HeldLock(kGrant, name, mode, token, ownerDied, signalOf, release)
}

module.exports = { HeldLock, createHeldLock }
