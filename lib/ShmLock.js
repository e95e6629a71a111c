'use strict'

// AsyncLock on memory shared by processes (threadlock/host's
// openSharedMemory). `new AsyncLock(buffer, byteOffset)` and
// `AsyncLock.from(handle)` return one of these when the word lies in such
// memory (the choice is made once, at construction: the in-process lock
// keeps its own code and speed). It is an AsyncLock (instanceof, the same
// methods), with its own protocol, simpler than the in-process policy
// (src/lock.c), because its waiter list is the file's (src/host/shm_wait.c)
// and its owners are processes' threads (src/host/shm_owners.c).
//
// The word: bits 0..27 the holder's owner id in the file (unique across
// the host's processes, never 0; 0: free), bit 28 HANDED (the id is a
// waiter's that a release handed the lock to, and that has not taken it up
// yet), bit 29 WAITERS (somebody may sleep on the word), bit 30 DIED (the
// holder took the lock over from an owner that died). The bits are the
// core's (src/host/shm.h, native.shmConstants).
//
// Taking it (#try): a word whose owner field is 0 is taken with one
// compare-exchange (barging: a running thread may take it before a woken
// waiter), except in the FIFO mode while WAITERS is set; a word handed to
// this thread is taken up by clearing HANDED; a word whose holder is dead
// (its process killed, its worker ended; shmOwnerAlive) is taken over with
// one compare-exchange, with DIED unless the dead one was only handed it
// (it never ran). Two takers race on the same value: one wins. A waiter
// sets WAITERS and sleeps in the file's list while the word still holds the
// value it saw (the list's value check), with its request's ticket (drawn
// at its first sleep, kept across its sleeps: its place and its age); once
// it has slept it takes the word with WAITERS set, because others may
// still sleep.
//
// Releasing (unlock): without WAITERS, the holder's compare-exchange to 0.
// With WAITERS, the core's release (src/host/shm_wait.c,
// tl_shm_lock_release, steps H1-H3): it hands the lock to the oldest waiter
// that may take it up (FIFO mode: any; otherwise one whose request has
// waited 1 ms, the in-process policy's bound, and that can take it up at
// once: a blocking waiter, or a promise waiter that is present, i.e. came
// to try and sleeps again; one asleep since it queued is woken to come
// instead, since its event loop may not run for long) by writing HANDED |
// WAITERS | its id, then notifying its node; or frees the word and wakes
// the oldest waiter to compete.
//
// Invariants:
// - I1 (exclusion). Only a compare-exchange that finds the owner field 0,
//   a dead owner, or this thread's id with HANDED writes this thread's id
//   without HANDED into the word; only the holder clears it or hands it
//   on, and a handed word is taken back only by a compare-exchange from
//   the exact handed value (H2: the release, or the waiter that leaves,
//   whichever comes first; the other's compare-exchange then fails); an
//   owner id is never given twice (shm_owners.c), so a dead id never comes
//   back to life.
// - I2 (no lost wake-up). A sleeper's node is published while the word
//   holds `v | WAITERS` with `v`'s holder alive; a release after that sees
//   WAITERS and hands the lock to a node or notifies one (the list's value
//   check covers a release between the sleeper's look and its node: it
//   returns 'not-equal'). The word keeps WAITERS while a node sleeps on it
//   (H3: a free keeps it, and sets it again when its scan after the free
//   finds others than the one it woke; every taker keeps it), so that a
//   woken waiter whose event loop does not run for long holds up nobody:
//   the next release, whoever holds by then, looks at the nodes.
// - I3 (a woken waiter passes the wake on). A waiter that leaves without the
//   lock (timeout, abort, its worker's end) wakes another if the word is
//   free with WAITERS set, and a hand-off to it that it finds is taken up
//   and released again (#passOn), so that the next waiter gets it; a
//   promise waiter's env does so at its end (binding_shm.c: a poke).
// - I4 (owner death wakes the sleepers). Before it sleeps, a waiter has
//   this process watch every other process that has the file open: the
//   holder's (for a handed word: the grantee's), the word's other waiters',
//   and any that may barge and die inside its release (a thread blocked on
//   each one's liveness byte, shm_owners.c, which sees the death also when
//   the slot is claimed again before it blocks; a process that opens the
//   file later pokes it on arrival, so that the sleepers watch it too),
//   then looks at the holder's liveness once more (a death before the
//   watch is seen there, one after it is the watcher's), having read the
//   file's poke counter before its first look (a poke whose scan missed
//   its node, not yet published, is seen when it publishes);
//   a death pokes every lock waiter of the file (and a thread's end in a
//   live process pokes it from its cleanup hook), which looks at the word
//   again: a dead holder is taken over (DIED), a free word taken. So a
//   holder killed with waiters hands the lock to one of them with
//   ownerDied, and one killed without waiters to the next acquirer.
//   A waiter that a release woke or handed the lock to is watched by the
//   releasing process (src/host/shm_wait.c, tl__tell): if it dies before
//   it took the word, the others wake, also one that published after it
//   without seeing it. A notify that dies between its state change and its
//   wake leaves the node NOTIFIED; the poke of its death gives the wake
//   again.
// - I5 (no CPU while waiting). Sleepers sleep in the kernel (futex) or in
//   their event loop; wakes come from releases, death and thread end only
//   (a blocking wait's 10 ms slices for the termination probe, and the
//   helper thread's look once a second for promise waiters, P3 in
//   src/host/shm_wait.c, aside).
// - I6 (the bound). A blocking waiter, or a present promise waiter, whose
//   request has waited 1 ms is handed the lock by the next release that
//   finds its node WAITING (it is the oldest such, or one older than it
//   is); its ticket keeps its age and place when a wake to compete was
//   lost and it sleeps again. In the
//   FIFO mode every release with waiters hands the lock to the oldest, and
//   a request that has not slept does not take a free word while WAITERS
//   is set: it takes it and releases it at once (the release hands it to
//   the oldest, or frees it when nobody sleeps), so that no state "free,
//   WAITERS set, nobody woken" keeps newcomers out; a waiter that leaves
//   the FIFO mode's free word with WAITERS hands it on the same way.
// - L7 (no lost hand-off). A hand-off (HANDED | its id) whose grantee has
//   no node on the word, waiting or notified (shmHasNode), is free for
//   anyone (a running thread in the FIFO mode takes it and releases it at
//   once). It arises when the grantee left (its timeout withdrew its node)
//   after the release's scan and looked at the word before the release
//   wrote it, and the release then died (or stopped) before it took it
//   back (H2). A grantee on its way still has its node (L8), so it is not
//   taken from it; after a death, a hand-off whose value came back since a
//   taker looked may be taken from its grantee once (the bound slips once:
//   test/c/shm_handoff.c checks the bound in executions without deaths).
// - L8 (taken up on the way). A hand-off waiter whose node a release
//   notified takes the word up (HANDED cleared, by compare-exchange from
//   the handed value) in the native call that finds the node notified,
//   before the node is freed (src/host/shm_wait.c, tl__left): its wake,
//   its poll, or a withdrawal (timeout, abort) that came after the notify
//   (then the request is granted: the abort is late). A thread that ends
//   does not take it up (its id dies, and the next waiter takes the word
//   over without DIED).
//
// The model of these steps, with timeouts and a death at every step, is
// test/c/shm_handoff.c (a systematic checker: exclusion, no waiter asleep
// for ever, the bound and the FIFO order, and five known bugs caught).
//
// A thread's promise requests keep their order (lib/ShmOrder.js): only the
// oldest of them competes, the others wait in the thread's queue for the
// word, and every release by the thread starts the next. A blocking lock()
// while the thread has requests queued would never return (they come
// first): EDEADLK, as in-process; tryLock() is false meanwhile.
//
// Not built: the holder's slice, and the present watch (a present promise
// waiter handed the lock takes it up when its loop next runs).

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const shmWait = require('./shmWait')
const { sideOf } = require('./ShmOrder')
const { readSyncOptions, readAsyncOptions } = require('./validate')
const { deadlockError, timeoutError, busyError, abortError, notOwnerError, stopTerminated } = require('./errors')

const { RESULT_INTERRUPTED } = native.constants
const { LOCK_ID: ID, LOCK_WAITERS: WAITERS, LOCK_DIED: DIED, LOCK_HANDED: HANDED, ACCEPTED, RELEASE_FIFO: FIFO } = native.shmConstants || {}
// shmLockRelease: the word was not the value given (read it again).
const STALE = 2

const { compareExchange, load } = Atomics

// For the tests only: a pause between a waiter's look at the holder and its
// watch (THREADLOCK_SHM_TEST_LOOK_DELAY_MS), the window in which the holder
// may die unwatched.
const LOOK_DELAY_MS = Number(process.env.THREADLOCK_SHM_TEST_LOOK_DELAY_MS) || 0
// And one between its watch (which looked at the word's waiters) and the
// publication of its node (THREADLOCK_SHM_TEST_PUBLISH_DELAY_MS): a waiter
// that publishes meanwhile is older and not watched by this one.
const PUBLISH_DELAY_MS = Number(process.env.THREADLOCK_SHM_TEST_PUBLISH_DELAY_MS) || 0
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

// Numbers the holds of this thread (for the release functions): the hold
// is the side's (shared by this thread's objects on the word), so that a
// release function ends its own hold or nothing, whichever object released.
let holds = 0

// What lib/ConditionVariable.js asks of a lock here (as it asks the
// in-process lock through AsyncLock.js's holdOf / resumeHold): whether this
// thread holds it, whether this object has promise requests waiting, and
// the caller's hold, which a condition-variable wait keeps across its
// release and retake.
const HELD = Symbol('held')
const QUEUED = Symbol('queued')
const HOLD = Symbol('hold')
const RESUME = Symbol('resume')

class ShmLock extends SharedSlot {
  #i32
  #me
  #fifo
  #mode // shmLockRelease's: the default policy (0) or FIFO
  // This thread's side of the word (lib/ShmOrder.js): its queue of promise
  // requests and its hold, shared by its objects on the word.
  #side
  // The value #try last saw held by another.
  #seen = 0
  #release = Object.assign((hold) => {
    if (hold === this.#side.hold) this.unlock()
  }, { hold: () => this.#side.hold })
  #held = () => (load(this.#i32, 0) & (ID | HANDED)) === this.#me
  #compete = (o, where, timeout) => this.#wait(o, where, timeout)

  constructor (buffer, byteOffset, fifo = false) {
    super({ type: 'AsyncLock', words: 1, shm: true }, [buffer, byteOffset])
    this.#fifo = fifo
    this.#mode = fifo ? FIFO : 0
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#me = native.shmOwnerId(this.#i32)
    this.#side = sideOf(this.#i32, 'lock')
  }

  [HELD] () { return this.#held() }
  [QUEUED] () { return this.#side.waiting }
  [HOLD] () { return this.#side.hold }
  [RESUME] (hold) { if (hold !== 0) this.#side.hold = hold }

  get handle () { return { type: 'AsyncLock', buffer: this.buffer, byteOffset: this.byteOffset, fifo: this.#fifo } }
  get fifo () { return this.#fifo }
  get locked () { return (load(this.#i32, 0) & ID) !== 0 }

  /** The holder's owner id in the file (unique across processes), or null. */
  get owner () {
    const id = load(this.#i32, 0) & ID
    return id === 0 ? null : id
  }

  /**
   * Requests (blocking and promise, every process) sleeping on the lock,
   * and this thread's promise requests queued behind its oldest.
   */
  get waiting () { return native.waiterCount(this.#i32, 0) + this.#side.local }

  get ownerDied () {
    const v = load(this.#i32, 0)
    const id = v & ID
    // A grantee that died before it took a hand-off up never ran.
    return id !== 0 && ((v & DIED) !== 0 || ((v & HANDED) === 0 && !native.shmOwnerAlive(this.#i32, id)))
  }

  // One attempt: whether the previous owner died (taken), or undefined
  // (held by a live thread: #seen holds the value).
  #try (slept) {
    // In the FIFO mode a request that has not slept hands a free word with
    // WAITERS on once (I6); found so again, it takes it (two such requests
    // could pass it between them for ever otherwise).
    let handedOn = false
    for (;;) {
      const v = load(this.#i32, 0)
      const id = v & ID
      let next
      if (id === 0) {
        if (this.#fifo && !slept && (v & WAITERS) !== 0 && !handedOn) {
          // I6: not before the sleepers; taken and released at once.
          if (compareExchange(this.#i32, 0, v, this.#me | WAITERS) === v) {
            handedOn = true
            native.shmLockRelease(this.#i32, 0, this.#me | WAITERS, FIFO)
          }
          continue
        }
        next = this.#me | (v & WAITERS) | (slept ? WAITERS : 0)
      } else if (id === this.#me && (v & HANDED) !== 0) {
        next = v & ~HANDED // handed to this request: taken up
      } else if (id !== this.#me && !native.shmOwnerAlive(this.#i32, id)) {
        next = this.#me | (v & WAITERS) | ((v & HANDED) !== 0 ? 0 : DIED)
      } else if (id !== this.#me && (v & HANDED) !== 0 && !native.shmHasNode(this.#i32, 0, id)) {
        // L7: a hand-off whose grantee has no node on the word (it left,
        // and the release that wrote it died before it took it back) is
        // free: taken (in the FIFO mode by a request that has not slept:
        // taken and released at once, as a free word with WAITERS).
        if (this.#fifo && !slept && !handedOn) {
          if (compareExchange(this.#i32, 0, v, this.#me | WAITERS) === v) {
            handedOn = true
            native.shmLockRelease(this.#i32, 0, this.#me | WAITERS, FIFO)
          }
          continue
        }
        next = this.#me | (v & WAITERS)
      } else {
        this.#seen = v
        return undefined
      }
      if (compareExchange(this.#i32, 0, v, next) === v) {
        this.#side.hold = ++holds
        return (next & DIED) !== 0
      }
    }
  }

  // Sets WAITERS on the held value #seen and has this process watch the
  // deaths that matter (I4). Returns the value to sleep on, or undefined
  // when the word changed meanwhile or its holder died (try again).
  #prepare () {
    const v = this.#seen
    const w = v | WAITERS
    if (v !== w && compareExchange(this.#i32, 0, v, w) !== v) return undefined
    if (LOOK_DELAY_MS > 0) pause(LOOK_DELAY_MS)
    native.shmWatch(this.#i32)
    // The holder's liveness again, now that its watcher is started (or was
    // not, because it had died): a death before this look is seen here, one
    // after it pokes (I4). Without this look, a holder that died between
    // #try's look and the watch would be watched by nobody.
    if (!native.shmOwnerAlive(this.#i32, v & ID)) return undefined
    if (PUBLISH_DELAY_MS > 0) pause(PUBLISH_DELAY_MS)
    return w
  }

  // I3: a waiter that leaves without the lock wakes another if the word
  // is free with waiters; a hand-off it finds is taken up and released
  // (to the next waiter, or freed with one woken).
  #passOn () {
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & (ID | HANDED)) === (this.#me | HANDED)) {
        const mine = v & ~HANDED
        if (compareExchange(this.#i32, 0, v, mine) !== v) continue
        native.shmLockRelease(this.#i32, 0, mine, this.#mode)
        return
      }
      if ((v & ID) === 0 && (v & WAITERS) !== 0) {
        // In the FIFO mode the next waiter is handed it (I6).
        if (!this.#fifo) native.notify(this.#i32, 0, 1)
        else if (compareExchange(this.#i32, 0, v, this.#me | WAITERS) === v) native.shmLockRelease(this.#i32, 0, this.#me | WAITERS, FIFO)
        else continue
      }
      return
    }
  }

  #fast () {
    if (compareExchange(this.#i32, 0, 0, this.#me) !== 0) return false
    this.#side.hold = ++holds
    return true
  }

  lock (options) {
    if (options === undefined && !this.#side.waiting && this.#fast()) return
    const timeout = readSyncOptions(options, 'AsyncLock.lock')
    if (this.#side.waiting) {
      throw deadlockError('AsyncLock.lock', 'this thread has promise requests queued for the lock, which come first, so a blocking lock() would never return')
    }
    const deadline = gate.deadlineOf(timeout)
    let slept = false
    let ticket = 0
    for (;;) {
      // The poke counter before the holder's liveness is looked at: a death
      // after that look wakes the wait below (src/host/shm_wait.c).
      const pokes = native.shmPokes(this.#i32)
      if (this.#try(slept) !== undefined) return
      if ((this.#seen & ID) === this.#me) {
        throw deadlockError('AsyncLock.lock', 'this thread holds the lock, so a blocking lock() would never return')
      }
      const left = gate.remaining(deadline)
      if (left === 0) {
        if (slept) this.#passOn()
        throw timeoutError(timeout, 'AsyncLock.lock')
      }
      const w = this.#prepare()
      if (w === undefined) continue
      if (ticket === 0) ticket = native.shmTicket(this.#i32)
      const r = native.shmWaitLock(this.#i32, 0, w, left, pokes, ticket)
      slept = true
      if (r === ACCEPTED) { // handed the lock, and taken up (L8)
        this.#side.hold = ++holds
        return
      }
      if (r === RESULT_INTERRUPTED) {
        this.#passOn()
        stopTerminated('AsyncLock.lock')
      }
    }
  }

  tryLock () {
    if (this.#side.waiting) return false // this thread's older requests come first
    if (this.#fast()) return true
    return this.#try(false) !== undefined
  }

  unlock () {
    if (compareExchange(this.#i32, 0, this.#me, 0) === this.#me) {
      this.#side.released()
      return
    }
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & (ID | HANDED)) !== this.#me) {
        throw notOwnerError('AsyncLock.unlock', (v & ID) === 0
          ? 'the lock is not held'
          : 'the lock is held by another thread (of this or another process)')
      }
      if ((v & WAITERS) === 0) {
        if (compareExchange(this.#i32, 0, v, 0) !== v) continue
      } else if (native.shmLockRelease(this.#i32, 0, v, this.#mode) === STALE) {
        continue
      }
      this.#side.released()
      return
    }
  }

  acquire (options) {
    return gate.rejecting(() => this.#acquire(options, 'AsyncLock.acquire'))
  }

  #acquire (options, where) {
    const first = !this.#side.waiting
    if (options === undefined && first && this.#fast()) return Promise.resolve(gate.makeRelease(this.#release, false))
    const o = readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
    if (first) {
      const died = this.#try(false)
      if (died !== undefined) return Promise.resolve(gate.makeRelease(this.#release, died))
    }
    if (!o.blocking) return Promise.reject(busyError(where))
    if (o.timeout === 0) return Promise.reject(timeoutError(0, where))
    // Behind this thread's older requests, or its hold (lib/ShmOrder.js).
    return this.#side.request(o, where, this.#held, this.#compete)
  }

  // The wait of the first of this thread's requests (ShmOrder's compete):
  // its options' timeout is what is left of the request's, `shown` the
  // request's own (for its error).
  async #wait (o, where, shown) {
    const deadline = gate.deadlineOf(o.timeout)
    let slept = false
    let ticket = 0
    // Whether this request has come back from its event loop since it was
    // made (a wait that was pending ended): then its next sleep is present.
    let woke = false
    for (;;) {
      const pokes = native.shmPokes(this.#i32)
      const died = this.#try(slept)
      if (died !== undefined) return gate.makeRelease(this.#release, died)
      const left = gate.remaining(deadline)
      if (left === 0) {
        if (slept) this.#passOn()
        throw timeoutError(shown, where)
      }
      const w = this.#prepare()
      if (w === undefined) continue
      let r
      try {
        if (ticket === 0) ticket = native.shmTicket(this.#i32)
        r = shmWait.waitAsync(this.#i32, 0, w, { timeout: left, ref: o.ref, signal: o.signal, pokes, ticket, present: woke })
        if (typeof r !== 'number') {
          r = await r
          woke = true
        }
      } catch (err) {
        this.#passOn()
        throw err
      }
      slept = true
      if (r === 'accepted' || r === ACCEPTED) { // handed, and taken up (L8)
        this.#side.hold = ++holds
        return gate.makeRelease(this.#release, false)
      }
      if (r === 'timed-out') {
        this.#passOn()
        throw timeoutError(shown, where)
      }
    }
  }

  // A free word taken at once: the callback runs held (gate.runHeld), with
  // no release function and no acquire promise in between, as the
  // in-process lock's runExclusive. `this` may be a wrong receiver: then
  // the private field throws, and the caller rejects.
  #runHeld (callback) {
    return typeof callback === 'function' && !this.#side.waiting && this.#fast()
      ? gate.runHeld(callback, this.#release, this.#side.hold)
      : undefined
  }

  runExclusive (callback, options) {
    return gate.rejecting(() => (options === undefined ? this.#runHeld(callback) : undefined) ??
      gate.runHolding(callback, 'AsyncLock.runExclusive', () => this.#acquire(options, 'AsyncLock.runExclusive')))
  }

  executeLocked (f) {
    return gate.rejecting(() => this.#runHeld(f) ??
      gate.runHolding(f, 'AsyncLock.executeLocked', () => this.#acquire(undefined, 'AsyncLock.executeLocked')))
  }
}

module.exports = { ShmLock, HELD, QUEUED, HOLD, RESUME }
