'use strict'

// AsyncLock: an owner-aware lock in one Int32 of a SharedArrayBuffer.
//
// The word and its fast paths are lib/LockWord.js; the policy is one state
// machine in src/lock.c (normal mode with barging and one woken waiter,
// hand-off when a waiter starves or the holder's slice is over). An
// uncontended acquire and release are one compare-exchange each, here in
// JavaScript; every other decision is the core's.
//
// A thread's own promise requests stay in order: only the oldest goes to
// the core, the others wait in this thread's ThreadQueue for the word. When the thread
// releases the lock while it has such requests, it keeps the lock for the
// next one where JavaScript can tell (LockWord.keepHere: nobody waits, or
// the shortcut), and the next request is granted without a trip through
// the core or the event loop; otherwise the next request goes to the core
// first, by the time it was made, and the release lets the core pass the
// lock to it (no hand-off due) or hand it to the oldest waiter.
//
// A release always releases: once it returns, another thread can take the
// lock (or has been handed it), unless the thread passed it to its own
// next request.
//
// { fifo: true } opens the lock in strict FIFO hand-off instead: every
// release with waiters hands the lock to the oldest, so nobody ever barges,
// at the cost of one wake-up per grant.

const { performance } = require('perf_hooks')
const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readFlag, readSyncOptions, readAsyncOptions } = require('./validate')
const { deadlockError } = require('./errors')
const { ThreadQueue, Request, competing } = require('./ThreadQueue')
const { LockWord } = require('./LockWord')
const { ShmLock } = require('./ShmLock')
const sides = require('./sides')

const { GATE_LOCK, LOCK_ID_MASK: ID_MASK, LOCK_BARGE } = native.constants

// This thread's side of each lock word it has opened (lib/sides.js): the
// ThreadQueue of its promise requests, in the order it made them, whether
// it holds the lock through an AsyncLock (`held`), and which hold that is
// (`hold`, for the release functions). Every AsyncLock object of this
// thread on the word shares it, so any of them may release, and the
// thread's requests keep their order across objects.
function sideOf (i32) {
  return sides.sideOf(i32, 'lock', () => ({ i32, queue: new ThreadQueue(), held: false, hold: 0 }))
}

// Numbers the holds of this thread (sides' `hold`: 0 when none).
let holds = 0

let hasQueued
// The hold this thread has on the word of an AsyncLock object (0: none), and
// its restoring: a condition-variable wait releases the lock and takes it
// back as part of the caller's one hold, so that the release function the
// caller got for that hold still ends it afterwards (gate.makeRelease: a
// release function ends its own hold or nothing).
let holdOf
let resumeHold

class AsyncLock extends SharedSlot {
  static {
    hasQueued = (lock) => lock.#side.queue.size !== 0
    holdOf = (lock) => lock.#side.hold
    resumeHold = (lock, hold) => { if (hold !== 0) lock.#side.hold = hold }
  }

  #i32
  #word
  // This thread's side of the word, shared by all its AsyncLock objects on
  // it (sideOf): the queue of its promise requests, and whether it holds
  // the lock through one of them.
  #side
  // A request waiting in this thread's queue ended by its timer or signal.
  #drop = (req, err) => {
    const first = this.#side.queue.first === req
    if (!this.#side.queue.remove(req)) return
    req.reject(err)
    // The next request competes now, unless this object holds the lock,
    // whose release passes it on.
    if (first) this.#sendNext()
  }
  // The release function's callee: ends the hold `hold` (named when the
  // function was made, src: gate.makeRelease), or nothing once that hold
  // has ended another way (unlock(), the same thread's other object): a
  // spent release function never releases a later hold.
  #release = Object.assign((hold) => {
    if (hold === this.#side.hold) this.unlock()
  }, { hold: () => this.#side.hold })
  // The promise form's requests, for the acquire skeleton (lib/gate.js).
  #gate = {
    take: () => this.#side.queue.size === 0 && this.#fast() ? this.ownerDied : undefined,
    attempt: () => this.tryLock() ? this.ownerDied : undefined,
    queue: (flags, o, where, release) => this.#word.fifo
      ? gate.gateAsync(this.#i32, 0, GATE_LOCK, flags, o, where)
        .then((ownerDied) => { this.#took(); return gate.makeRelease(release, ownerDied) })
      : new Promise((resolve, reject) => this.#enqueue(new Request(o, where, resolve, reject)))
  }

  /**
   * @param {SharedArrayBuffer | object} [buffer] a new 4-byte buffer by default;
   *   or one options object { buffer, byteOffset, fifo } in place of all three
   * @param {number} [byteOffset=0] a multiple of 4
   * @param {{ fifo?: boolean }} [options] every user of one lock word must
   *   open it with the same `fifo`; `handle` carries it
   */
  constructor (buffer = undefined, byteOffset = undefined, options = undefined) {
    let fifo, shared
    super({ type: 'AsyncLock', words: 1, keys: ['fifo'], shm: true }, [buffer, byteOffset, options], (i32, handle, o, inShm) => {
      // from() reads the mode from the handle as from options.
      const where = handle === undefined ? 'AsyncLock' : 'AsyncLock.from'
      fifo = readFlag((handle === undefined ? o : handle).fifo, false, where, 'fifo')
      shared = inShm
    })
    // Memory shared by processes: the cross-process lock (lib/ShmLock.js),
    // chosen once here, so that the in-process lock keeps its own code.
    if (shared) return new ShmLock(this.buffer, this.byteOffset, fifo)
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#word = new LockWord(this.#i32, fifo)
    this.#side = sideOf(this.#i32)
  }

  /** A structured-clonable description of the lock, with its mode. */
  get handle () {
    return { ...super.handle, fifo: this.#word.fifo }
  }

  /** true for strict FIFO hand-off. */
  get fifo () { return this.#word.fifo }

  /** Whether some thread holds the lock. */
  get locked () { return (this.#word.value & ID_MASK) !== 0 }

  /** The threadId of the holder, or null. */
  get owner () {
    const id = this.#word.value & ID_MASK
    return id === 0 ? null : id - 1
  }

  /** How many requests (sync or async, all threads) wait for the lock. */
  get waiting () {
    const first = this.#side.queue.first
    const local = first !== null && first.native ? this.#side.queue.size - 1 : this.#side.queue.size
    return native.waiterCount(this.#i32, 0) + local
  }

  /**
   * True while the lock is held by a thread that took it over from one that
   * died holding it, or still by a dead thread that nobody has taken it
   * over from yet (the next request does): the data it protects may be half
   * updated. Cleared by the next release. (A free word may carry the news
   * for its next holder, when a grant that carried it was never used:
   * src/lock.c, I6.)
   */
  get ownerDied () {
    const id = this.#word.value & ID_MASK
    return id !== 0 && (this.#word.ownerDied || !native.threadAlive(id))
  }

  // This thread now holds the lock through an AsyncLock: a new hold.
  #took () {
    this.#side.held = true
    this.#side.hold = ++holds
  }

  #fast () {
    if (!this.#word.fast()) return false
    this.#took()
    return true
  }

  /** Blocks this thread until it holds the lock. */
  lock (options) {
    if (options === undefined && this.#side.queue.size === 0 && this.#fast()) return
    const timeout = readSyncOptions(options, 'AsyncLock.lock')
    if (this.#side.queue.size === 0 && this.#fast()) return
    if (this.#word.mine || this.#side.queue.size !== 0) {
      throw deadlockError('AsyncLock.lock', 'this thread holds the lock or has requests queued for it, so a blocking lock() would never return')
    }
    gate.gateSync(this.#i32, 0, GATE_LOCK, this.#word.flags, timeout, 'AsyncLock.lock')
    this.#word.restart()
    this.#took()
  }

  /** Takes the lock if that is possible without waiting. */
  tryLock () {
    if (this.#side.queue.size !== 0) return false // this thread's older requests come first
    if (this.#fast()) return true
    if (this.#word.mine) return false
    if (gate.gateTry(this.#i32, 0, GATE_LOCK, this.#word.flags) === undefined) return false
    this.#took()
    return true
  }

  /**
   * Releases the lock held by this thread. While its slice lasts, and no
   * other thread's waiter starves, the next request this object has queued
   * gets the lock directly.
   */
  unlock () {
    const next = this.#side.queue.first
    if (next === null || next.native || !this.#side.held) {
      this.#word.unlock()
      this.#side.held = false
      this.#side.hold = 0
      if (next !== null && !next.native) this.#sendNext()
      return
    }
    if (this.#word.keepHere()) {
      this.#side.queue.remove(next)
      this.#grant(next, false) // this thread keeps the lock
      return
    }
    // The core decides. The next request goes there first, while this
    // thread holds the lock, where it takes its place by the time it was
    // made (src/lock.c, I5); the release then passes the lock to it within
    // the slice while no hand-off is due, or hands it to the oldest waiter
    // that can take it up (this thread's request among them).
    this.#send(next, false)
    this.#side.held = false
    this.#side.hold = 0
    this.#word.unlock()
  }

  // Resolves `req`, whose thread now holds the lock through this object.
  #grant (req, ownerDied) {
    this.#took()
    req.resolve(gate.makeRelease(this.#release, ownerDied))
  }

  // Queues a promise request of this thread. While this object holds the
  // lock or has older requests, it waits here for the release that passes
  // the lock on; otherwise it goes to the core at once.
  #enqueue (req) {
    if (this.#side.queue.size === 0 && !(this.#side.held && this.#word.mine)) {
      this.#side.queue.push(req, undefined)
      this.#send(req)
    } else {
      this.#side.queue.push(req, this.#drop)
    }
  }

  // Sends the oldest request, if it still waits here, to the core.
  #sendNext () {
    const next = this.#side.queue.first
    if (next !== null && !next.native && !(this.#side.held && this.#word.mine)) this.#send(next)
  }

  // Sends `req`, first in this thread's queue, to the core; with `barge`
  // false it takes a free word only when nobody waits.
  #send (req, barge = true) {
    req.native = true
    this.#side.queue.unwatch(req)
    const flags = barge ? this.#word.flags : this.#word.flags & ~LOCK_BARGE
    const p = competing(req, (o) => gate.gateAsync(this.#i32, 0, GATE_LOCK, flags, o, req.where, performance.now() - req.madeAt, req.options.timeout))
    p.then((ownerDied) => {
      this.#side.queue.remove(req)
      this.#word.restart()
      this.#grant(req, ownerDied)
    }, (err) => {
      this.#side.queue.remove(req)
      req.reject(err)
      // The next request of this thread competes now, unless this object
      // holds the lock, whose release passes it on.
      this.#sendNext()
    })
  }

  /**
   * Resolves with a release function once this thread holds the lock.
   * A thread's requests are granted in the order it made them.
   */
  acquire (options) {
    try {
      return this.#acquire(options, 'AsyncLock.acquire')
    } catch (err) {
      // Bad options, a throwing option getter or a wrong receiver: a
      // promise-returning method reports every failure through its promise.
      return Promise.reject(err)
    }
  }

  // The promise API's common path; `where` names the public method in
  // error messages. May throw synchronously on bad options.
  #acquire (options, where) {
    if (options === undefined && this.#side.queue.size === 0 && this.#fast()) {
      return Promise.resolve(gate.makeRelease(this.#release, this.ownerDied))
    }
    const o = readAsyncOptions(options, where, true)
    return gate.acquire(this.#gate, this.#word.flags, o, where, this.#release)
  }


  /**
   * Runs `callback` while holding the lock and resolves with its result;
   * the lock is released however the callback ends.
   */
  runExclusive (callback, options) {
    try {
      if (options === undefined && typeof callback === 'function' &&
        this.#side.queue.size === 0 && this.#fast()) return gate.runHeld(callback, this.#release, this.#side.hold)
      return gate.runHolding(callback, 'AsyncLock.runExclusive',
        () => this.#acquire(options, 'AsyncLock.runExclusive'))
    } catch (err) {
      return Promise.reject(err) // a wrong receiver
    }
  }

  /** The V8 blog's name for runExclusive without options. */
  executeLocked (f) {
    try {
      if (typeof f === 'function' && this.#side.queue.size === 0 && this.#fast()) return gate.runHeld(f, this.#release, this.#side.hold)
      return gate.runHolding(f, 'AsyncLock.executeLocked',
        () => this.#acquire(undefined, 'AsyncLock.executeLocked'))
    } catch (err) {
      return Promise.reject(err)
    }
  }
}

// A lock on memory shared by processes is an AsyncLock: same methods,
// instanceof, and constructor (for from()).
Object.setPrototypeOf(ShmLock.prototype, AsyncLock.prototype)
Object.defineProperty(ShmLock.prototype, 'constructor', { value: AsyncLock, writable: true, configurable: true })

module.exports = {
  AsyncLock,
  hasQueued: (lock) => hasQueued(lock),
  holdOf: (lock) => holdOf(lock),
  resumeHold: (lock, hold) => resumeHold(lock, hold)
}
