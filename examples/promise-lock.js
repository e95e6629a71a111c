'use strict'

// The promise API of AsyncLock inside one thread: ordering async tasks,
// refusing a second run while one is in progress, and giving up after a
// timeout. Run: node examples/promise-lock.js

const { AsyncLock, LockError } = require('threadlock')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// Appends x after a delay: a random one of up to 50 ms by default.
async function push (list, x, ms = Math.random() * 50) {
  await sleep(ms)
  list.push(x)
}

async function main () {
  const seq = Array.from({ length: 10 }, (_, i) => i)

  // 1. Without a lock, the appends finish in whatever order the delays give.
  const unordered = []
  await Promise.all(seq.map((x) => push(unordered, x)))
  console.log('without a lock:   ', unordered.join(' '))

  // 2. With runExclusive, each call waits for the one before it: requests
  //    are granted in the order they were made.
  const lock = new AsyncLock()
  const ordered = []
  await Promise.all(seq.map((x) => lock.runExclusive(() => push(ordered, x))))
  console.log('with runExclusive:', ordered.join(' '))

  // 3. blocking: false gives up at once when the lock is held: only the
  //    first call runs, the others are refused with EBUSY.
  const once = []
  const refused = []
  await Promise.all(seq.map(async (x) => {
    try {
      await lock.runExclusive(() => push(once, x), { blocking: false })
    } catch (err) {
      if (!(err instanceof LockError)) throw err
      refused.push(err.code)
    }
  }))
  console.log('blocking: false:  ', once.join(' '), `(${refused.length} refused with ${refused[0]})`)

  // 4. A timeout: each call holds the lock for 40 ms, so the calls that
  //    would get it after 100 ms give up with ETIMEDOUT instead.
  const some = []
  const timedOut = []
  await Promise.all(seq.map(async (x) => {
    try {
      await lock.runExclusive(() => push(some, x, 40), { timeout: 100 })
    } catch (err) {
      if (!(err instanceof LockError)) throw err
      timedOut.push(x)
    }
  }))
  console.log('timeout: 100 ms:  ', some.join(' '), `(timed out: ${timedOut.join(' ')})`)

  // 5. The result of the callback comes back through the promise.
  const answer = await lock.runExclusive(async () => 42, { timeout: 500 })
  console.log('runExclusive returned', answer)
}

main()
