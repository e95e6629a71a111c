'use strict'

// Grant: what every lock granted by threadlock/host or threadlock/postgres
// carries, the base of their Lock classes and of host's HeldLock. Besides
// the Web Locks pair (name, mode) that is `token`, the grant's fencing token
// (a bigint, strictly increasing per name), and `signal`, which aborts when
// the lock is lost under its holder. Only those modules make grants, through
// kGrant, which script cannot reach: `new Lock()` stays a TypeError.

const kGrant = Symbol('kGrant')

class Grant {
  #name
  #mode
  #token
  #signal
  constructor (key, name, mode, token, signal) {
    if (key !== kGrant) throw new TypeError('Illegal constructor')
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

// Gives `Class.prototype` its Symbol.toStringTag and, as WebIDL does for
// attributes, the accessors `names` (Grant's or the class's own) as own
// enumerable properties, in that order: Object.keys(Lock.prototype) lists
// them as the interface does, whichever class declares each getter.
function defineAttributes (Class, tag, names) {
  const proto = Class.prototype
  for (const name of names) {
    const own = Object.getOwnPropertyDescriptor(proto, name)
    const { get } = own || Object.getOwnPropertyDescriptor(Grant.prototype, name)
    delete proto[name]
    Object.defineProperty(proto, name, { get, enumerable: true, configurable: true })
  }
  Object.defineProperty(proto, Symbol.toStringTag, { value: tag, writable: false, enumerable: false, configurable: true })
}

module.exports = { Grant, kGrant, defineAttributes }
