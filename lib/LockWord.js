'use strict'

// One thread's side of an AsyncLock word: the compare-exchange fast paths
// and the policy that decides, at each release, between a compare-exchange,
// a wake-up and a hand-off (see lib/AsyncLock.js for the policy as a whole).
//
// Lock word (src/waiters.h): 0 is free; otherwise the low 29 bits hold the
// owner's thread id + 1, LOCK_OWNER_DIED says the owner took the lock over
// from a thread that died holding it, LOCK_WAITERS that waiters are queued
// in the core, and LOCK_WOKEN that one of them was woken to compete and is
// on its way; an owner field of LOCK_PASSING means the word was passed to
// that woken waiter. An uncontended acquire (0 -> id) and release (id -> 0)
// are one compare-exchange each.
//
// The reservation: an event-loop thread leaves a gap of a few hundred
// nanoseconds between two grants (the promise jobs of
// `await lock.executeLocked(f)` in a loop), and a thread in a tight blocking
// loop would take the lock in every such gap. So once that happened in its
// slice, while others wait, a release through the promise API (the release
// function, runExclusive, executeLocked) keeps the word for RESERVE_HOPS
// microtasks: a request the thread makes meanwhile takes it back without an
// atomic operation, and otherwise the release happens before the thread's
// microtasks run out, so a reservation never outlives them.

const { gateRelease } = require('./gate')
const { selfId, constants } = require('./native')
const { notOwnerError } = require('./errors')
const { Slice } = require('./Slice')

const {
  GATE_LOCK, GATE_WRITE, LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT,
  LOCK_WAITERS: WAITERS_BIT, LOCK_WOKEN: WOKEN_BIT, LOCK_PASSING: PASSING,
  LOCK_BARGE: BARGE, LOCK_HANDOFF: HANDOFF, RW_WRITER, RW_MASK
} = constants

// The words this policy serves: an AsyncLock word (the owner's id in the id
// field, an owner-died bit), and an RWLock word for its writers (the writer
// bit and the writer's id; readers counted when the bit is clear).
const KINDS = {
  lock: { gate: GATE_LOCK, tag: 0, mask: ID_MASK, diedBit: OWNER_DIED_BIT, where: 'AsyncLock.unlock' },
  write: { gate: GATE_WRITE, tag: RW_WRITER, mask: RW_WRITER | RW_MASK, diedBit: 0, where: 'RWLock.releaseWrite' }
}
// Somebody waits: queued in the core, or woken and on the way.
const WAITING = WAITERS_BIT | WOKEN_BIT

// How many microtasks a promise-API release may keep the word.
const RESERVE_HOPS = 3

const { compareExchange, load } = Atomics

// Queues a microtask without queueMicrotask's per-call async resource.
const RESOLVED = Promise.resolve()

class LockWord {
  #i32
  #fifo
  #flags
  #kind
  #own // the word's owner field when this thread holds it
  #mask // the owner field
  #slice = new Slice()
  #guard = false // another thread took the word in a gap of this slice
  #reserved = false // released through the promise API, word kept
  #hops = 0 // microtasks the reservation has lasted
  #chain = false // an #endReservation microtask is queued
  #settle = () => this.#endReservation()
  #unlock // what ends a reservation: the lock's full unlock()

  constructor (i32, fifo, unlock, kind = 'lock') {
    this.#i32 = i32
    this.#fifo = fifo
    this.#flags = fifo ? 0 : BARGE
    this.#unlock = unlock
    this.#kind = KINDS[kind]
    this.#own = this.#kind.tag | selfId
    this.#mask = this.#kind.mask
  }

  get fifo () { return this.#fifo }
  /** The `amount` of this word's native requests and releases. */
  get flags () { return this.#flags }
  /** The word, or 0 while this thread only reserves it. */
  get value () { return this.#reserved ? 0 : load(this.#i32, 0) }
  get reserved () { return this.#reserved }
  /** Whether this thread holds the lock. */
  get mine () { return !this.#reserved && (load(this.#i32, 0) & this.#mask) === this.#own }

  /** A grant that came after waiting starts a new slice. */
  restart () { this.#slice.reset() }

  // The compare-exchange acquire. Outside the FIFO mode a word without an
  // owner is free even while waiters are queued, unless `barge` is false.
  fast (barge = true) {
    if (this.#reserved) {
      this.#reserved = false
      return true
    }
    const v = compareExchange(this.#i32, 0, 0, this.#own)
    if (v === 0) return true
    if (barge && !this.#fifo && (v & this.#mask) === 0 &&
      compareExchange(this.#i32, 0, v, v | this.#own) === v) return true
    // Lost in the middle of a slice: somebody takes the word in the gaps
    // between this thread's grants, so its releases will reserve it.
    if (this.#slice.running) this.#guard = true
    return false
  }

  /** Frees the word held by this thread; throws ENOTOWNER otherwise. */
  unlock () {
    if (this.#reserved) this.checkOwner(0) // reserved: not held
    const v = compareExchange(this.#i32, 0, this.#own, 0)
    if (v === this.#own) {
      this.#slice.reset()
      this.#guard = false
      return
    }
    this.checkOwner(v)
    this.release(v, 0)
  }

  /**
   * Whether this thread may keep the lock, its word read as `v`, for its
   * own next request; counts one grant of the slice.
   */
  keep (v) {
    return (v & this.#kind.diedBit) === 0 && this.#sliceLeft(v)
  }

  // A release through the promise API: while others wait, it keeps the word
  // for a few microtasks (the reservation above). Returns false when the
  // caller must unlock as usual.
  leave () {
    if (!this.#guard) return false
    const v = load(this.#i32, 0)
    if ((v & this.#mask) !== this.#own || (v & (this.#kind.diedBit | WAITERS_BIT)) !== WAITERS_BIT) return false
    if (!this.#sliceLeft(v)) {
      this.release(v, HANDOFF)
      return true
    }
    this.#reserved = true
    this.#hops = 0
    if (!this.#chain) {
      this.#chain = true
      RESOLVED.then(this.#settle)
    }
    return true
  }

  /** Ends a reservation now (before this thread takes the other side). */
  settle () {
    if (!this.#reserved) return
    this.#reserved = false
    this.#unlock()
  }

  #endReservation () {
    if (this.#reserved && ++this.#hops < RESERVE_HOPS) {
      RESOLVED.then(this.#settle)
      return
    }
    this.#chain = false
    if (!this.#reserved) return
    this.#reserved = false
    this.#unlock()
  }

  checkOwner (v) {
    if (!this.#reserved && (v & this.#mask) === this.#own) return
    if (this.#kind.gate !== GATE_LOCK && !this.#reserved) {
      // The core words it as for any gate: ENOTOWNER.
      gateRelease(this.#i32, 0, this.#kind.gate, 0, this.#kind.where)
      return
    }
    const owner = (v & ID_MASK) === 0 || (v & ID_MASK) === PASSING ? null : (v & ID_MASK) - 1
    throw notOwnerError('AsyncLock.unlock', owner === null
      ? 'the lock is not held'
      : `called by thread ${selfId - 1}, but the lock is held by thread ${owner}`)
  }

  // Whether this thread's slice lets it keep the lock; counts one grant.
  #sliceLeft (v) {
    return (v & WAITING) === 0 || this.#slice.take()
  }

  /**
   * Frees the word `v`, held by this thread. Within the slice, and with
   * nobody to wake, that is a compare-exchange; otherwise the core wakes
   * the oldest waiter or (`handoff`, FIFO mode) hands the lock to it.
   */
  release (v, handoff) {
    if (!this.#fifo && handoff === 0 && (v & this.#kind.diedBit) === 0) {
      if ((v & WAITING) !== 0 && !this.#sliceLeft(v)) {
        handoff = HANDOFF
      } else if (((v & WAITERS_BIT) === 0 || (v & WOKEN_BIT) !== 0) &&
        compareExchange(this.#i32, 0, v, v & ~this.#mask) === v) {
        return
      }
    }
    gateRelease(this.#i32, 0, this.#kind.gate, this.#flags | (handoff ? HANDOFF : 0), this.#kind.where)
  }
}

module.exports = { LockWord, HANDOFF }
