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
// sleep on the word).
//
// Taking k permits: one compare-exchange that subtracts k while at least k
// are free (barging: a running request may take permits before a woken
// one). Otherwise the request sets WAITERS and sleeps in the file's list
// while the word holds that value (the list's value check), then tries
// again. Releasing n: one compare-exchange that adds n and clears WAITERS;
// if WAITERS was set, notify() wakes every sleeper of every process, which
// all try again (requests of different sizes: any of them may fit now).
//
// Invariants:
// - S1 (bound). Permits are taken only by a compare-exchange from a value
//   with enough of them, and come back only by release: never more than
//   the permits out at once.
// - S2 (no lost wake-up). A sleeper's node is published while the word
//   holds `v | WAITERS`; a release after that changes the word and sees
//   WAITERS, and wakes every sleeper (a release between the sleeper's look
//   and its node makes the value check return 'not-equal').
// - S3 (deaths). Permits have no owner (as in one process): a process that
//   dies holding permits does not give them back. A sleeper that dies or is
//   terminated leaves its node (not counted); since a release wakes every
//   sleeper, no wake is lost with it.
// - S4 (no CPU while waiting). Sleepers sleep in the kernel (futex) or in
//   their event loop; only releases wake them (a blocking wait's 10 ms
//   slices for the termination probe aside).
//
// Not built: the hand-off to a request that has waited 1 ms (src/sem.c's
// SEM_RESERVED): a large request may wait while small ones keep taking the
// permits.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const shmWait = require('./shmWait')
const { timeoutError, busyError, abortError, stopTerminated } = require('./errors')

const { RESULT_INTERRUPTED } = native.constants
const MASK = 0x1fffffff
const WAITERS = 1 << 29

const { compareExchange, load } = Atomics

// The requests, called by lib/Semaphore.js's public methods once they
// have read their arguments (one parser for both semaphores).
const TRY = Symbol('tryAcquire')
const SYNC = Symbol('acquireSync')
const ASYNC = Symbol('acquire')
const RELEASE = Symbol('release')

class ShmSemaphore extends SharedSlot {
  #i32
  #releaseOne = () => this.release(1)

  constructor (buffer, byteOffset) {
    super({ type: 'Semaphore', words: 1, shm: true }, [buffer, byteOffset])
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
  }

  get value () { return load(this.#i32, 0) & MASK }
  get waiting () { return native.waiterCount(this.#i32, 0) }

  // Takes k permits if they are free: true, or false with #seen set.
  #take (k) {
    let v = load(this.#i32, 0)
    while ((v & MASK) >= k) {
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

  [TRY] (n) { return this.#take(n) }

  [SYNC] (n, timeout, where) {
    const deadline = gate.deadlineOf(timeout)
    for (;;) {
      if (this.#take(n)) return
      const left = gate.remaining(deadline)
      if (left === 0) throw timeoutError(timeout, where)
      const w = this.#prepare()
      if (w === undefined) continue
      const r = native.wait(this.#i32, 0, w, left)
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
    for (;;) {
      if (this.#take(n)) return gate.makeRelease(release, false)
      const left = gate.remaining(deadline)
      if (left === 0) throw timeoutError(o.timeout, where)
      const w = this.#prepare()
      if (w === undefined) continue
      let r = shmWait.waitAsync(this.#i32, 0, w, { timeout: left, ref: o.ref, signal: o.signal })
      if (typeof r !== 'number') r = await r
      if (r === 'timed-out') throw timeoutError(o.timeout, where)
    }
  }

  [RELEASE] (n, where) {
    let v = load(this.#i32, 0)
    for (;;) {
      if ((v & MASK) + n > MASK) throw new RangeError(`${where}: ${n} more permits would exceed ${MASK}`)
      const seen = compareExchange(this.#i32, 0, v, ((v & MASK) + n))
      if (seen === v) break
      v = seen
    }
    if ((v & WAITERS) !== 0) native.notify(this.#i32, 0, Infinity)
  }
}

module.exports = { ShmSemaphore, TRY, SYNC, ASYNC, RELEASE }
