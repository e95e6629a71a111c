'use strict'

// Semaphore on memory shared by processes (threadlock/host's
// openSharedMemory). `new Semaphore(n, buffer, byteOffset)` writes the
// permits and returns one of these when the word lies in such memory, and
// `Semaphore.from(handle)` opens it in another process (the choice is made
// once, at construction: the in-process semaphore keeps its own code). It is
// a Semaphore (instanceof, the same methods) with its own protocol, simpler
// than src/sem.c, on the file's waiter list (src/host/shm_wait.c).
//
// The word: bits 0..28 the free permits, bit 29 WAITERS (somebody may
// sleep on the word), bit 30 RESERVED (a request that has waited 1 ms
// gathers the permits: nobody else takes any). The bits are the core's
// (src/host/shm.h, native.shmConstants).
//
// Taking k permits: one compare-exchange that subtracts k while at least k
// are free and RESERVED is clear (barging: a running request may take
// permits before a woken one). Otherwise the request sets WAITERS and
// sleeps in the file's list while the word holds that value (the list's
// value check), then tries again. Releasing n: one compare-exchange that
// adds n, clears WAITERS and keeps RESERVED; if WAITERS or RESERVED was
// set, notify() wakes every sleeper of every process, which all try again
// (requests of different sizes: any of them may fit now).
//
// Served first (the in-process semaphore's SEM_RESERVED, src/sem.c): a
// request that has waited 1 ms and still does not fit reserves the word
// (one at a time): the native call publishes its node (kind RESERVE, with
// its need) and then sets WAITERS | RESERVED by one compare-exchange from
// the value it saw (src/host/shm_wait.c, tl_shm_wait_reserve). From then
// on nobody else takes permits, so the permits that releases return gather
// for it; each release wakes it, and it takes its permits (subtracting its
// need and clearing RESERVED in one compare-exchange) in the native call
// that finds its node notified, or sleeps again on the same node. Requests
// that find RESERVED sleep behind it.
//
// Invariants:
// - S1 (bound). Permits are taken only by a compare-exchange from a value
//   with enough of them, and come back only by release: never more than
//   the permits out at once.
// - S2 (no lost wake-up). A sleeper's node is published while the word
//   holds `v | WAITERS` (or, reserving, is published before the word gets
//   `v | WAITERS | RESERVED`); a release after that changes the word and
//   sees WAITERS or RESERVED, and wakes every sleeper (a release between
//   the sleeper's look and its node makes the value check return
//   'not-equal'). Whoever clears RESERVED without a release (the reserving
//   request taking its permits with some left over, or giving up; an
//   orphan's clear) wakes the sleepers too, if WAITERS is set.
// - S3 (deaths). Permits have no owner (as in one process): a process that
//   dies holding permits does not give them back. A sleeper that dies or is
//   terminated leaves its node (not counted); since a release wakes every
//   sleeper, no wake is lost with it.
// - S4 (no CPU while waiting). Sleepers sleep in the kernel (futex) or in
//   their event loop; only releases, deaths, arrivals and thread ends wake
//   them (a blocking wait's 10 ms slices for the termination probe, and
//   the helper thread's look once a second for promise waiters, P3 in
//   src/host/shm_wait.c, aside).
// - S5 (a reservation has a node). RESERVED is set only by a request whose
//   node (kind RESERVE) is published already, and cleared by it before its
//   node is freed (it takes its permits, or gives up: timeout, abort, its
//   thread's stop); a wake without enough permits moves the same node back
//   to WAITING (a new seq) and reads the word again, so the node stays for
//   as long as the reservation.
// - S6 (served first). While RESERVED is set only the reserving request
//   takes permits (the fast paths refuse), and every release wakes it; it
//   takes them as soon as a release brings enough.
// - S7 (one at a time). A request reserves only a word without RESERVED
//   (the compare-exchange from a value without it); others, also those
//   that have waited 1 ms, wait behind it and reserve after it.
// - S8 (an orphan is cleared). RESERVED whose request has no live node on
//   the word (its process killed, its worker ended with a promise request:
//   shmSemReserved) may be cleared by anyone, by a compare-exchange from
//   the value seen; the requests behind it are woken for it: a death pokes
//   them (S9), a worker's end pokes the file from its cleanup hook.
// - S9 (a death wakes the sleepers). Permits have no owner, so any process
//   that has the file open may be the one whose release a sleeper waits
//   for, and it may die between its compare-exchange and its notify (the
//   permits back, nobody woken). So every sleeper sleeps as a lock waiter
//   (kind LOCK; a reserving one keeps its node and is notified instead),
//   having read the file's poke counter before it looked at the word and
//   had this process watch every other process of the file
//   (native.shmWatch: src/host/shm_owners.c, tl_shm_watch_all); a process
//   that opens the file later pokes it once (its arrival), so that the
//   sleepers look again and watch it too. A death pokes every sleeper of
//   the file, which looks at the word again.
//
// Differences from the in-process semaphore: the reserving request is the
// first that has waited 1 ms and comes to try (after a release woke it),
// not always the oldest; a promise request that reserved takes its permits
// when its event loop runs.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const shmWait = require('./shmWait')
const { timeoutError, busyError, abortError, stopTerminated } = require('./errors')

const { RESULT_INTERRUPTED } = native.constants
const {
  ACCEPTED, SEM_MASK: MASK, SEM_WAITERS: WAITERS, SEM_RESERVED: RESERVED, STARVING_US
} = native.shmConstants || {}
const STARVING_MS = STARVING_US / 1000
// A test hook: a pause between a release's compare-exchange and its
// notify, the window in which the releasing process may die (S9).
const RELEASE_DELAY_MS = Number(process.env.THREADLOCK_SHM_TEST_RELEASE_DELAY_MS) || 0

const { compareExchange, load } = Atomics

// The requests, called by lib/Semaphore.js's public methods once they
// have read their arguments (one parser for both semaphores).
const TRY = Symbol('tryAcquire')
const SYNC = Symbol('acquireSync')
const ASYNC = Symbol('acquire')
const RELEASE = Symbol('release')
// The release function of one permit (the same function every time).
const ONE = Symbol('releaseOne')

class ShmSemaphore extends SharedSlot {
  #i32
  #releaseOne = () => this.release(1)

  constructor (buffer, byteOffset) {
    super({ type: 'Semaphore', words: 1, shm: true }, [buffer, byteOffset])
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
  }

  get value () { return load(this.#i32, 0) & MASK }
  get waiting () { return native.waiterCount(this.#i32, 0) }

  // Takes k permits if they are free and not reserved: true, or false
  // with #seen set.
  #take (k) {
    let v = load(this.#i32, 0)
    while ((v & RESERVED) === 0 && (v & MASK) >= k) {
      const seen = compareExchange(this.#i32, 0, v, v - k)
      if (seen === v) return true
      v = seen
    }
    this.#seen = v
    return false
  }

  #seen = 0

  // Sets WAITERS on #seen: the value to sleep on, or undefined when the
  // word changed meanwhile (try again).
  #prepare () {
    const v = this.#seen
    const w = v | WAITERS
    if (v !== w && compareExchange(this.#i32, 0, v, w) !== v) return undefined
    return w
  }

  // Wakes every sleeper if some may sleep (S2).
  #wakeAll () {
    if ((load(this.#i32, 0) & WAITERS) !== 0) native.notify(this.#i32, 0, Infinity)
  }

  // #seen has RESERVED: whether its request is alive (S8: otherwise it is
  // cleared, and the sleepers woken).
  #reservedStands () {
    const v = this.#seen
    if (native.shmSemReserved(this.#i32, 0)) return true
    if (compareExchange(this.#i32, 0, v, v & ~RESERVED) === v) this.#wakeAll()
    return false
  }

  // The reserving request took its permits (RESERVED cleared): what is
  // left may serve the requests that slept behind it (S2).
  #served () {
    if ((load(this.#i32, 0) & MASK) !== 0) this.#wakeAll()
  }

  [TRY] (n) { return this.#take(n) }

  get [ONE] () { return this.#releaseOne }

  [SYNC] (n, timeout, where) {
    const deadline = gate.deadlineOf(timeout)
    const starvesAt = performance.now() + STARVING_MS
    for (;;) {
      // The poke counter before the word is looked at: a death after that
      // look (a reserving request's, a releaser's inside its release) ends
      // the sleep below (S9).
      const pokes = native.shmPokes(this.#i32)
      if (this.#take(n)) return
      const left = gate.remaining(deadline)
      if (left === 0) throw timeoutError(timeout, where)
      if ((this.#seen & RESERVED) !== 0 && !this.#reservedStands()) continue
      let r
      if ((this.#seen & RESERVED) === 0 && performance.now() >= starvesAt) {
        native.shmWatch(this.#i32)
        r = native.shmWaitReserve(this.#i32, 0, this.#seen, n, left)
        if (r === ACCEPTED) {
          this.#served()
          return
        }
      } else {
        const w = this.#prepare()
        if (w === undefined) continue
        native.shmWatch(this.#i32)
        r = native.shmWaitLock(this.#i32, 0, w, left, pokes, 0)
      }
      if (r === RESULT_INTERRUPTED) stopTerminated(where)
    }
  }

  [ASYNC] (n, o, where) {
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
    const release = n === 1 ? this.#releaseOne : () => this.release(n)
    if (this.#take(n)) return Promise.resolve(gate.makeRelease(release, false))
    if (!o.blocking) return Promise.reject(busyError(where))
    if (o.timeout === 0) return Promise.reject(timeoutError(0, where))
    return this.#wait(n, o, where, release)
  }

  async #wait (n, o, where, release) {
    const deadline = gate.deadlineOf(o.timeout)
    const starvesAt = performance.now() + STARVING_MS
    for (;;) {
      const pokes = native.shmPokes(this.#i32)
      if (this.#take(n)) return gate.makeRelease(release, false)
      const left = gate.remaining(deadline)
      if (left === 0) throw timeoutError(o.timeout, where)
      if ((this.#seen & RESERVED) !== 0 && !this.#reservedStands()) continue
      const opts = { timeout: left, ref: o.ref, signal: o.signal }
      let w = this.#seen
      if ((w & RESERVED) === 0 && performance.now() >= starvesAt) {
        opts.reserve = n
      } else {
        opts.pokes = pokes
        w = this.#prepare()
        if (w === undefined) continue
      }
      native.shmWatch(this.#i32)
      let r
      try {
        r = shmWait.waitAsync(this.#i32, 0, w, opts)
        if (typeof r !== 'number') r = await r
      } catch (err) {
        // An abort: a reserving request gave its reservation up.
        if (opts.reserve !== undefined) this.#wakeAll()
        throw err
      }
      if (r === 'accepted' || r === ACCEPTED) {
        this.#served()
        return gate.makeRelease(release, false)
      }
      if (r === 'timed-out') {
        if (opts.reserve !== undefined) this.#wakeAll()
        throw timeoutError(o.timeout, where)
      }
    }
  }

  [RELEASE] (n, where) {
    let v = load(this.#i32, 0)
    for (;;) {
      if ((v & MASK) + n > MASK) throw new RangeError(`${where}: ${n} more permits would exceed ${MASK}`)
      const seen = compareExchange(this.#i32, 0, v, ((v & MASK) + n) | (v & RESERVED))
      if (seen === v) break
      v = seen
    }
    if ((v & (WAITERS | RESERVED)) !== 0) {
      if (RELEASE_DELAY_MS > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RELEASE_DELAY_MS)
      native.notify(this.#i32, 0, Infinity)
    }
  }
}

module.exports = { ShmSemaphore, TRY, SYNC, ASYNC, RELEASE, ONE }
