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
  GATE_LOCK, LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED: OWNER_DIED_BIT, LOCK_WAITERS: WAITERS_BIT,
  LOCK_WOKEN: WOKEN_BIT, LOCK_PASSING: PASSING, LOCK_BARGE: BARGE, LOCK_HANDOFF: HANDOFF
} = constants
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
  #slice = new Slice()
  #guard = false // another thread took the word in a gap of this slice
  #reserved = false // released through the promise API, word kept
  #hops = 0 // microtasks the reservation has lasted
  #chain = false // an #endReservation microtask is queued
  #settle = () => this.#endReservation()
  #unlock // what ends a reservation: the lock's full unlock()

  constructor (i32, fifo, unlock) {
    this.#i32 = i32
    this.#fifo = fifo
    this.#flags = fifo ? 0 : BARGE
    this.#unlock = unlock
  }

  get fifo () { return this.#fifo }
  /** The `amount` of this word's native requests and releases. */
  get flags () { return this.#flags }
  /** The word, or 0 while this thread only reserves it. */
  get value () { return this.#reserved ? 0 : load(this.#i32, 0) }
  get reserved () { return this.#reserved }
  /** Whether this thread holds the lock. */
  get mine () { return !this.#reserved && (load(this.#i32, 0) & ID_MASK) === selfId }

  /** A grant that came after waiting starts a new slice. */
  restart () { this.#slice.reset() }

  // The compare-exchange acquire. Outside the FIFO mode a word without an
  // owner is free even while waiters are queued.
  fast () {
    if (this.#reserved) {
      this.#reserved = false
      return true
    }
    const v = compareExchange(this.#i32, 0, 0, selfId)
    if (v === 0) return true
    if (!this.#fifo && (v & ID_MASK) === 0 &&
      compareExchange(this.#i32, 0, v, v | selfId) === v) return true
    // Lost in the middle of a slice: somebody takes the word in the gaps
    // between this thread's grants, so its releases will reserve it.
    if (this.#slice.running) this.#guard = true
    return false
  }

  /** Frees the word held by this thread; throws ENOTOWNER otherwise. */
  unlock () {
    if (this.#reserved) this.checkOwner(0)
    const v = compareExchange(this.#i32, 0, selfId, 0)
    if (v === selfId) {
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
    return (v & OWNER_DIED_BIT) === 0 && this.#sliceLeft(v)
  }

  // A release through the promise API: while others wait, it keeps the word
  // for a few microtasks (the reservation above). Returns false when the
  // caller must unlock as usual.
  leave () {
    if (!this.#guard) return false
    const v = load(this.#i32, 0)
    if ((v & ID_MASK) !== selfId || (v & (OWNER_DIED_BIT | WAITERS_BIT)) !== WAITERS_BIT) return false
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
    if ((v & ID_MASK) === selfId) return
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
    if (!this.#fifo && handoff === 0 && (v & OWNER_DIED_BIT) === 0) {
      if ((v & WAITING) !== 0 && !this.#sliceLeft(v)) {
        handoff = HANDOFF
      } else if (((v & WAITERS_BIT) === 0 || (v & WOKEN_BIT) !== 0) &&
        compareExchange(this.#i32, 0, v, v & ~ID_MASK) === v) {
        return
      }
    }
    gateRelease(this.#i32, 0, GATE_LOCK, this.#flags | (handoff ? HANDOFF : 0), 'AsyncLock.unlock')
  }
}

module.exports = { LockWord, HANDOFF }
