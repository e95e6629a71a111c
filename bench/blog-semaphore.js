'use strict'

// The anchor for the contended Semaphore row: a counting semaphore in the
// style of the V8 blog's lock (see blog-lock.js), on the built-in Atomics
// only, written for this benchmark. One Int32 holds the free permits.
// acquire() takes one with a compare-exchange from a positive count and
// otherwise awaits Atomics.waitAsync on the word while it reads 0;
// acquireSync() is the same loop with Atomics.wait, for workers;
// release() adds one back and always notifies one waiter. Nothing is
// queued: a woken waiter retries and may lose to a thread that just
// arrived, exactly as with the blog lock.

class BlogSemaphore {
  // `permits` initializes the word; pass undefined to attach to a word that
  // another thread already initialized.
  constructor (buffer, byteOffset = 0, permits = undefined) {
    this.i32 = new Int32Array(buffer, byteOffset, 1)
    if (permits !== undefined) Atomics.store(this.i32, 0, permits)
  }

  get value () {
    return Atomics.load(this.i32, 0)
  }

  // Resolves once this thread holds one permit.
  async acquire () {
    const i32 = this.i32
    for (;;) {
      const v = Atomics.load(i32, 0)
      if (v > 0) {
        if (Atomics.compareExchange(i32, 0, v, v - 1) === v) return
        continue
      }
      // Wakes on release(); a 'not-equal' result means a permit came back
      // in between, and costs one microtask as in the blog lock.
      await Atomics.waitAsync(i32, 0, 0).value
    }
  }

  // Blocks the calling worker until it holds one permit.
  acquireSync () {
    const i32 = this.i32
    for (;;) {
      const v = Atomics.load(i32, 0)
      if (v > 0) {
        if (Atomics.compareExchange(i32, 0, v, v - 1) === v) return
        continue
      }
      Atomics.wait(i32, 0, 0)
    }
  }

  release () {
    Atomics.add(this.i32, 0, 1)
    Atomics.notify(this.i32, 0, 1)
  }
}

module.exports = { BlogSemaphore }
