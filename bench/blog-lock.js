'use strict'

// The anchor for the lock workloads: the AsyncLock that the V8 blog post
// "Atomics.wait, Atomics.notify, Atomics.waitAsync" (2020) describes, written
// here from that description. One Int32 holds 0 (free) or 1 (held). lock()
// and executeLocked() take it with a compare-exchange and otherwise wait on
// the word with the built-in Atomics.wait / Atomics.waitAsync; unlock() frees
// it and always notifies one waiter. Nothing is queued: a woken waiter retries
// the compare-exchange and may lose to a thread that just arrived, so the lock
// is not fair.
//
// Two changes that measuring needs and the post leaves open: executeLocked()
// returns a promise that settles once `f` has run and the lock was released
// (the post starts the attempt and returns nothing), and the word may sit at
// any 4-byte offset of the buffer.

const FREE = 0
const HELD = 1

class BlogLock {
  constructor (buffer = new SharedArrayBuffer(4), byteOffset = 0) {
    this.i32 = new Int32Array(buffer, byteOffset, 1)
  }

  // Blocks the calling worker until it holds the lock.
  lock () {
    const i32 = this.i32
    for (;;) {
      if (Atomics.compareExchange(i32, 0, FREE, HELD) === FREE) return
      // 'not-equal' means the holder left in between: just try again.
      Atomics.wait(i32, 0, HELD)
    }
  }

  unlock () {
    if (Atomics.compareExchange(this.i32, 0, HELD, FREE) !== HELD) {
      throw new Error('unlock() of a lock that is not held')
    }
    Atomics.notify(this.i32, 0, 1)
  }

  // Runs `f` once the lock is taken, without blocking the thread, then
  // releases it. Resolves with f's result.
  async executeLocked (f) {
    const i32 = this.i32
    for (;;) {
      if (Atomics.compareExchange(i32, 0, FREE, HELD) === FREE) {
        try {
          return f()
        } finally {
          this.unlock()
        }
      }
      // As in the post, a 'not-equal' result is awaited too (one microtask).
      await Atomics.waitAsync(i32, 0, HELD).value
    }
  }
}

module.exports = { BlogLock }
