'use strict'

// The promise requests that one thread made for one lock word and that wait,
// oldest first: one queue per thread and word, shared by every AsyncLock
// object of the thread on that word (lib/AsyncLock.js, sideOf).
//
// Only the oldest of them is queued in the native core, where it competes
// with the other threads; the rest wait here. So a thread's requests are
// granted in the order it made them, whatever the lock's policy across
// threads, and a thread that holds the lock can pass it to its own next
// request without a trip through the core or its event loop.
//
// A request waiting here carries its own timer (for `timeout`) and abort
// listener (for `signal`), and while one with `ref` waits here the queue keeps
// the event loop alive; once a request is sent to the core, the core's
// timeout, withdrawal and reference take over.

const { performance } = require('perf_hooks')
const { deadlineOf, remaining } = require('./gate')
const { timeoutError, abortError } = require('./errors')
const { atDeadline } = require('./timer')

class Request {
  constructor (options, where, resolve, reject) {
    this.options = options
    this.where = where
    this.resolve = resolve
    this.reject = reject
    this.deadline = deadlineOf(options.timeout)
    this.madeAt = performance.now() // its first arrival, for the core's order
    this.native = false // sent to the core, which now times or withdraws it
    this.watched = false // timer, listener and reference are this queue's
    this.timer = undefined
    this.onAbort = undefined
    this.prev = null
    this.next = null
  }
}

const FOREVER = 0x7fffffff
function noop () {}

// The request's timer: never fires before its deadline, also when the event
// loop's cached clock is behind, nor early for a timeout beyond
// setTimeout's range (lib/timer.js).
function armTimer (req, fire) {
  atDeadline(req.deadline, fire, (timer) => { req.timer = timer })
}

/**
 * The first request's turn to compete (in the core, or in the lock's own
 * wait across processes): the promise `compete(options)` returns, given the
 * options with the time the request has left; a timeout if none is left;
 * or the failure `compete` threw. A native call on a thread that is being
 * terminated throws once its stop's bound is over (lib/native.js,
 * stopTerminated), and the request must then leave the queue and reject
 * like any other failure: a throw that escaped left it first in the queue
 * for good, and the thread's next blocking request was refused (EDEADLK).
 */
function competing (req, compete) {
  const o = req.options
  const left = remaining(req.deadline)
  if (left === 0 && o.timeout !== 0) return Promise.reject(timeoutError(o.timeout, req.where))
  try {
    return compete(left === o.timeout ? o : { ...o, timeout: left })
  } catch (err) {
    return Promise.reject(err)
  }
}

class ThreadQueue {
  #head = null
  #tail = null
  #size = 0
  #refs = 0 // watched requests with `ref`
  #keepAlive = undefined // a timer that holds the event loop open

  get size () { return this.#size }
  get first () { return this.#head }

  /**
   * Appends `req`. Unless it goes to the core at once (`drop` undefined),
   * its timer and signal call `drop(req, err)`.
   */
  push (req, drop) {
    req.prev = this.#tail
    if (this.#tail === null) this.#head = req
    else this.#tail.next = req
    this.#tail = req
    this.#size++
    if (drop === undefined) return
    const { timeout, signal, ref } = req.options
    req.watched = true
    if (timeout !== Infinity) armTimer(req, () => drop(req, timeoutError(timeout, req.where)))
    if (signal !== undefined) {
      req.onAbort = () => drop(req, abortError(signal))
      signal.addEventListener('abort', req.onAbort, { once: true })
    }
    if (ref && this.#refs++ === 0) this.#keepAlive = setInterval(noop, FOREVER)
  }

  /** Stops the timer, listener and reference of a request sent on. */
  unwatch (req) {
    if (!req.watched) return
    req.watched = false
    if (req.timer !== undefined) clearTimeout(req.timer)
    if (req.onAbort !== undefined) req.options.signal.removeEventListener('abort', req.onAbort)
    req.timer = req.onAbort = undefined
    if (req.options.ref && --this.#refs === 0) {
      clearInterval(this.#keepAlive)
      this.#keepAlive = undefined
    }
  }

  /** Unlinks `req` and stops its timer and listener; false if not queued. */
  remove (req) {
    if (req.prev === null && this.#head !== req) return false
    if (req.prev === null) this.#head = req.next
    else req.prev.next = req.next
    if (req.next === null) this.#tail = req.prev
    else req.next.prev = req.prev
    req.prev = req.next = null
    this.#size--
    this.unwatch(req)
    return true
  }
}

module.exports = { ThreadQueue, Request, competing }
