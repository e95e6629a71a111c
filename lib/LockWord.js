'use strict'

// One thread's side of a word that follows the lock policy: an AsyncLock
// word, or the writers' side of an RWLock word. The policy itself, its
// states and its invariants are drawn at the top of src/lock.c; this file
// holds only its fast paths and the holder's slice:
//
// - take a word whose owner field is 0 with one compare-exchange (a word
//   with waiter bits too, in the default mode: barging);
// - release a word that is exactly this thread's id with one
//   compare-exchange (nobody waits, nobody is woken);
// - everything else asks the core (src/lock.c), which decides under the
//   word's bucket lock: whom to wake, when to hand the lock over.
//
// One shortcut repeats a decision of the core without asking it: every
// release through the core also tells how long until the waiter that the
// next release would serve (src/lock.c, I7: the oldest that can take the
// lock up at once, never an event-loop request on its way) will have
// waited POLICY_STARVING_NS. While a woken request is on its way
// (LOCK_WOKEN), no waiter older than that one becomes one a release would
// serve (a request becomes so only when its thread comes to try, which
// clears LOCK_WOKEN), so until that moment a release within the holder's
// slice that finds LOCK_WOKEN is one the core would answer by freeing the
// word and waking nobody: the holder frees it with one compare-exchange
// instead. The holder keeps the lock for its own next request the same way,
// on the same condition (keepHere); otherwise that request goes to the
// core and the release follows (lib/AsyncLock.js).
//
// The slice: while others wait, the holder counts its releases in a row
// (each is a grant it took while others waited); once it has made
// POLICY_SLICE_GRANTS of them, or POLICY_SLICE_NS have passed since the
// first, its next release tells the core that the slice is over
// (LOCK_HANDOFF) and the core hands the lock to the oldest waiter. The core
// also hands it over, at any release, to a waiter that has waited
// POLICY_STARVING_NS. The settings are the core's (binding.constants).

const { performance } = require('perf_hooks')
const { gateRelease } = require('./gate')
const { selfId, constants } = require('./native')
const { notOwnerError } = require('./errors')

const {
  GATE_LOCK, LOCK_ID_MASK: ID_MASK, LOCK_OWNER_DIED, LOCK_WAITERS, LOCK_WOKEN,
  LOCK_BARGE: BARGE, LOCK_HANDOFF: HANDOFF,
  RW_WRITER, RW_MASK, RW_OWNER_DIED, GATE_WRITE,
  POLICY_SLICE_GRANTS: SLICE_GRANTS, POLICY_SLICE_NS,
  LOCK_SHORTCUT_MASK, WRITE_SHORTCUT_MASK, SHORTCUT_IF
} = constants
const SLICE_MS = POLICY_SLICE_NS / 1e6

// The words this policy serves: an AsyncLock word (the owner's id in the id
// field), and an RWLock word for its writers (the writer bit and the
// writer's id; readers are counted in the same field while the bit is
// clear, so a word with readers has a nonzero owner field here too).
const KINDS = {
  lock: { gate: GATE_LOCK, tag: 0, mask: ID_MASK, died: LOCK_OWNER_DIED, shortcut: LOCK_SHORTCUT_MASK, where: 'AsyncLock.unlock' },
  write: { gate: GATE_WRITE, tag: RW_WRITER, mask: RW_WRITER | RW_MASK, died: RW_OWNER_DIED, shortcut: WRITE_SHORTCUT_MASK, where: 'RWLock.releaseWrite' }
}
// Somebody waits: queued in the core, or woken and on the way.
const WAITING = LOCK_WAITERS | LOCK_WOKEN

const { compareExchange, load } = Atomics

class LockWord {
  #i32
  #fifo
  #flags
  #kind
  #own // the word's owner field when this thread holds it
  #mask // the owner field
  #grants = 0 // releases in a row with others waiting: the slice so far
  #sliceEnd = 0 // performance.now() when the slice ends
  #starvesAt = 0 // performance.now() by which the oldest waiter starves, at the earliest
  // The waiter bits (and died bit) this thread last saw on the word while
  // its owner field was 0, in the default mode; 0 otherwise. While waiters
  // are queued the word is free as `#seen` and held as `#own | #seen` most of
  // the time, so the fast paths compare-exchange from those values first,
  // instead of from 0 / this thread's id, a compare-exchange that would fail
  // (in V8 each Atomics call costs about as much as the rest of the fast
  // path). It is only a guess: every decision is taken on the value the
  // compare-exchange then finds, exactly as without it.
  #seen = 0

  constructor (i32, fifo, kind = 'lock') {
    this.#i32 = i32
    this.#fifo = fifo
    this.#flags = fifo ? 0 : BARGE
    this.#kind = KINDS[kind]
    this.#own = this.#kind.tag | selfId
    this.#mask = this.#kind.mask
  }

  get fifo () { return this.#fifo }
  /** The `amount` of this word's native requests. */
  get flags () { return this.#flags }
  get value () { return load(this.#i32, 0) }
  /** Whether this thread holds the lock. */
  get mine () { return (load(this.#i32, 0) & this.#mask) === this.#own }
  /** Whether the holder took the lock over from a thread that died. */
  get ownerDied () { return (load(this.#i32, 0) & this.#kind.died) !== 0 }

  /** A grant that came from waiting in the core starts a new slice. */
  restart () { this.#grants = 0 }

  // The compare-exchange acquire. Outside the FIFO mode a word without an
  // owner is free even while waiters are queued, unless `barge` is false.
  fast (barge = true) {
    const guess = barge ? this.#seen : 0
    const v = compareExchange(this.#i32, 0, guess, guess | this.#own)
    if (v === guess) return true
    if ((v & this.#mask) !== 0) return false // held (or, for a write lock, read)
    if (!this.#fifo) this.#seen = v & ~this.#mask
    if (v === 0) return compareExchange(this.#i32, 0, 0, this.#own) === 0
    return barge && !this.#fifo && compareExchange(this.#i32, 0, v, v | this.#own) === v
  }

  /** Frees the word held by this thread; throws ENOTOWNER otherwise. */
  unlock () {
    const guess = this.#seen
    if (guess !== 0 && ((guess | this.#own) & this.#kind.shortcut) === SHORTCUT_IF) {
      // Held as `#own | guess`, most likely: decide for that value (the
      // shortcut's condition, as below) and free it with one
      // compare-exchange from exactly that value.
      const now = performance.now()
      if (this.#sliceOk(now) && this.#noneStarves(now)) {
        const held = guess | this.#own
        if (compareExchange(this.#i32, 0, held, guess) === held) {
          this.#countGrant(now)
          return
        }
      }
    }
    const v = compareExchange(this.#i32, 0, this.#own, 0)
    if (v === this.#own) {
      this.#grants = 0
      this.#seen = 0
      return
    }
    this.checkOwner(v)
    if (!this.#fifo) this.#seen = v & ~this.#mask
    // One clock reading serves the slice and the starvation check.
    const now = performance.now()
    const inSlice = this.#sliceOk(now)
    this.#countGrant(now)
    if (inSlice && (v & this.#kind.shortcut) === SHORTCUT_IF && this.#noneStarves(now) &&
      compareExchange(this.#i32, 0, v, v & ~this.#mask) === v) return
    this.#release(inSlice ? 0 : HANDOFF)
  }

  /**
   * Whether this thread may keep the lock for its own next request without
   * asking the core: nobody waits, or the shortcut's condition (a woken
   * request on its way, within the slice, nobody due). False: ask the core
   * (release it, with the next request queued there first).
   */
  keepHere () {
    const v = load(this.#i32, 0)
    this.checkOwner(v)
    if ((v & (WAITING | this.#kind.died)) === 0) return true
    const now = performance.now()
    if ((v & this.#kind.shortcut) !== SHORTCUT_IF) return false
    const inSlice = this.#sliceOk(now)
    this.#countGrant(now)
    return inSlice && this.#noneStarves(now)
  }

  // Whether one more grant fits in this thread's slice at `now`
  // (performance.now()); #countGrant then counts it.
  #sliceOk (now) {
    return this.#grants === 0 || (this.#grants < SLICE_GRANTS && now < this.#sliceEnd)
  }

  #countGrant (now) {
    if (this.#grants++ === 0) this.#sliceEnd = now + SLICE_MS
  }

  // Whether the oldest waiter is known not to starve yet (default mode).
  #noneStarves (now) {
    return !this.#fifo && now < this.#starvesAt
  }

  checkOwner (v) {
    if ((v & this.#mask) === this.#own) return
    if (this.#kind.gate !== GATE_LOCK) {
      // The core words it as for any gate: ENOTOWNER.
      gateRelease(this.#i32, 0, this.#kind.gate, 0, this.#kind.where)
      return
    }
    const owner = (v & ID_MASK) === 0 ? null : (v & ID_MASK) - 1
    throw notOwnerError('AsyncLock.unlock', owner === null
      ? 'the lock is not held'
      : `called by thread ${selfId - 1}, but the lock is held by thread ${owner}`)
  }

  // A release through the core (somebody waits, or the owner-died bit is
  // set): `extra` is LOCK_HANDOFF when the slice is over (a new one
  // starts). Returns the core's answer (0). The glue adds, while a request is still
  // queued, 16 * (1 + the microseconds until the oldest one starves).
  #release (extra) {
    if (extra & HANDOFF) this.#grants = 0
    let r = gateRelease(this.#i32, 0, this.#kind.gate, this.#flags | extra, this.#kind.where)
    if (r >= 16) {
      this.#starvesAt = performance.now() + (Math.floor(r / 16) - 1) / 1000
      r &= 15
    } else {
      this.#starvesAt = 0
    }
    return r
  }
}

module.exports = { LockWord }
