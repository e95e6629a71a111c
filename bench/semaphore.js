'use strict'

// Semaphore acquire + release within one thread, against async-mutex's
// Semaphore.
//
//   sequential: `release = await sem.acquire(); release()` in a loop, so
//               permits are always available when asked for (threadlock:
//               one compare-exchange each way, no native call);
//   burst:      `burst` acquires started at once on a semaphore of
//               `permits` and awaited together, each releasing as soon as
//               it is granted, so all but the first `permits` queue
//               (threadlock: the native waiter list and its promise
//               resolution).
//
// Both implementations release through the function their acquire gave
// (threadlock's release function, async-mutex's releaser), so the loops do
// the same work. Run alone with `node bench/semaphore.js`.

const { Semaphore: MutexSemaphore } = require('async-mutex')
const { Semaphore } = require('..')
const { nowNs, median } = require('./common')

async function sequentialThreadlock (sem, n) {
  for (let i = 0; i < n; i++) {
    const release = await sem.acquire()
    release()
  }
}

async function sequentialMutex (sem, n) {
  for (let i = 0; i < n; i++) {
    const [, release] = await sem.acquire()
    release()
  }
}

async function burstThreadlock (sem, n, burst) {
  const calls = new Array(burst)
  for (let done = 0; done < n; done += burst) {
    for (let j = 0; j < burst; j++) calls[j] = sem.acquire().then((release) => release())
    await Promise.all(calls)
  }
}

async function burstMutex (sem, n, burst) {
  const calls = new Array(burst)
  for (let done = 0; done < n; done += burst) {
    for (let j = 0; j < burst; j++) calls[j] = sem.acquire().then(([, release]) => release())
    await Promise.all(calls)
  }
}

// sample(impl) -> ns per acquire + release.
async function open ({ kind = 'sequential', n = 200000, burst = 64, permits = 4 } = {}) {
  const tl = new Semaphore(permits)
  const am = new MutexSemaphore(permits)
  return {
    async sample (impl) {
      const t0 = nowNs()
      if (kind === 'sequential') {
        if (impl === 'threadlock') await sequentialThreadlock(tl, n)
        else await sequentialMutex(am, n)
      } else if (impl === 'threadlock') {
        await burstThreadlock(tl, n, burst)
      } else {
        await burstMutex(am, n, burst)
      }
      if (tl.value !== permits || am.getValue() !== permits) {
        throw new Error(`${impl}: permits not all returned`)
      }
      return (nowNs() - t0) / n
    },
    close () {}
  }
}

module.exports = { open }

// Standalone: a short side-by-side run of both workloads.
if (require.main === module) {
  (async () => {
    // threadlock's pending async waits keep the loop alive on their own;
    // this keeps it alive between samples, as bench/run.js does.
    const keepAlive = setInterval(() => {}, 1 << 30)
    for (const [kind, n] of [['sequential', 200000], ['burst', 25600]]) {
      const session = await open({ kind, n })
      const s = { threadlock: [], 'async-mutex': [] }
      for (let r = -1; r < 7; r++) {
        const order = r % 2 === 0 ? ['threadlock', 'async-mutex'] : ['async-mutex', 'threadlock']
        for (const impl of order) {
          const v = await session.sample(impl)
          if (r >= 0) s[impl].push(v)
        }
      }
      const tl = median(s.threadlock)
      const am = median(s['async-mutex'])
      process.stdout.write(`${kind}: threadlock ${tl.toFixed(1)} ns, async-mutex ${am.toFixed(1)} ns, ` +
        `ratio ${(tl / am).toFixed(2)}\n`)
      session.close()
    }
    clearInterval(keepAlive)
  })().catch((err) => {
    process.stderr.write(`${err.stack}\n`)
    process.exitCode = 1
  })
}
