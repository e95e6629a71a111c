'use strict'

// Row 4: lock() + unlock() on the main thread with nobody else around, so
// that both locks stay on their fast path. The blog lock's unlock() always
// calls the built-in Atomics.notify; threadlock's unlock() is one
// compare-exchange when nobody waits.
//
// The two loops are separate functions so that each keeps its own type
// feedback: one shared loop would see two receiver shapes and inline neither.

const { AsyncLock } = require('..')
const { BlogLock } = require('./blog-lock')
const { nowNs } = require('./common')

function loopThreadlock (lock, n) {
  for (let i = 0; i < n; i++) {
    lock.lock()
    lock.unlock()
  }
}

function loopBlog (lock, n) {
  for (let i = 0; i < n; i++) {
    lock.lock()
    lock.unlock()
  }
}

// sample(impl) -> ns per lock + unlock.
async function open ({ n = 1000000 } = {}) {
  const tl = new AsyncLock()
  const blog = new BlogLock()
  return {
    sample (impl) {
      const t0 = nowNs()
      if (impl === 'threadlock') loopThreadlock(tl, n)
      else loopBlog(blog, n)
      return (nowNs() - t0) / n
    },
    close () {}
  }
}

module.exports = { open }
