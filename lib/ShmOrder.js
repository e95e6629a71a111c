'use strict'

// One thread's promise requests for one lock word in memory shared by
// processes, kept in the order the thread made them (lib/ShmLock.js for
// the lock, lib/ShmRWLock.js for the write lock).
//
// The cross-process locks have no queue in a core: their waiters compete at
// each release. So the order of one thread's requests is kept here, as
// lib/ThreadQueue.js keeps it for the in-process lock: only the oldest of
// them competes (its `compete`, the lock's own wait); the others wait in
// this thread's queue for the word, shared by every object of the thread on
// that word (by its address, native.wordKey), each with its own timer,
// abort listener and reference on the event loop (ThreadQueue). The next
// one starts to compete when the one before it failed (timeout, abort), or
// when the thread releases the lock that the one before it got (`released`,
// from every release of the word by this thread). While this thread holds
// the word, a new request waits here too: the release starts it.
//
// Invariants:
// - O1 (order). A request competes only while it is first in its thread's
//   queue for the word, and it leaves the queue when it settles; so a
//   thread's requests are granted in the order they were made, whichever
//   object made them.
// - O2 (progress). The first request of a queue competes unless the thread
//   holds the word; every way the thread stops holding it (a release by any
//   of its objects on the word) and every way a first request leaves
//   (grant, failure, its timer or signal) starts the next one. A grant
//   leaves the thread holding the word, whose release starts the next.
// - O3 (nothing kept). A request waiting here keeps the event loop alive
//   only with `ref` (ThreadQueue), and its timer fires never early
//   (lib/timer.js): an expired one that reaches the front is rejected
//   without competing.

const sides = require('./sides')
const { ThreadQueue, Request, competing } = require('./ThreadQueue')

class ShmSide {
  queue = new ThreadQueue()
  hold = 0 // this thread's hold on the word through these objects (0: none)
  // Write requests of this thread whose id is in the word while they wait
  // for readers to leave (lib/ShmRWLock.js: a release must not end them).
  draining = 0

  /**
   * Queues a promise request. `held()`: whether this thread holds the word
   * now; `compete(o, where, timeout)`: the lock's wait, with options whose
   * timeout is what is left (`timeout`: the request's own, for its error),
   * resolving with its grant (what the request resolves with).
   */
  request (o, where, held, compete) {
    return new Promise((resolve, reject) => {
      const req = new Request(o, where, resolve, reject)
      req.compete = compete
      req.held = held
      if (this.queue.size === 0 && !held()) {
        this.queue.push(req, undefined)
        this.#start(req)
      } else {
        this.queue.push(req, this.#drop)
      }
    })
  }

  /** Whether promise requests of this thread wait for the word. */
  get waiting () { return this.queue.size !== 0 }

  /** Requests waiting here that do not compete yet. */
  get local () {
    const first = this.queue.first
    return first !== null && first.native ? this.queue.size - 1 : this.queue.size
  }

  /** This thread released the word: its next request competes (O2). */
  released () {
    this.hold = 0
    const next = this.queue.first
    if (next !== null && !next.native) this.#start(next)
  }

  // A request waiting here ended by its timer or signal.
  #drop = (req, err) => {
    const first = this.queue.first === req
    if (!this.queue.remove(req)) return
    req.reject(err)
    if (first) this.#next()
  }

  // The first request competes, unless this thread holds the word.
  #next () {
    const next = this.queue.first
    if (next !== null && !next.native && !next.held()) this.#start(next)
  }

  #start (req) {
    req.native = true
    this.queue.unwatch(req)
    const p = competing(req, (o) => req.compete(o, req.where, req.options.timeout))
    p.then((grant) => {
      this.queue.remove(req)
      req.resolve(grant)
    }, (err) => {
      this.queue.remove(req)
      req.reject(err)
      this.#next()
    })
  }
}

/**
 * This thread's side of the word of `i32` (its first element) for one kind
 * of request ('lock', 'write').
 */
function sideOf (i32, kind) {
  return sides.sideOf(i32, `shm ${kind}`, () => new ShmSide())
}

module.exports = { sideOf }
