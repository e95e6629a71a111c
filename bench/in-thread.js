'use strict'

// Row 6: runExclusive within one thread, against async-mutex's Mutex.
//
//   sequential: `await lock.runExclusive(f)` in a loop, so the lock is
//               always free when asked for;
//   burst:      `burst` calls started at once and awaited together, so all
//               but the first wait for the one before them in this thread.
// f is a plain function returning a number in both cases.

const { Mutex } = require('async-mutex')
const { AsyncLock } = require('..')
const { nowNs } = require('./common')

let sink = 0
function f () {
  return ++sink
}

async function sequentialThreadlock (lock, n) {
  for (let i = 0; i < n; i++) await lock.runExclusive(f)
}

async function sequentialMutex (mutex, n) {
  for (let i = 0; i < n; i++) await mutex.runExclusive(f)
}

async function burstThreadlock (lock, n, burst) {
  const calls = new Array(burst)
  for (let done = 0; done < n; done += burst) {
    for (let j = 0; j < burst; j++) calls[j] = lock.runExclusive(f)
    await Promise.all(calls)
  }
}

async function burstMutex (mutex, n, burst) {
  const calls = new Array(burst)
  for (let done = 0; done < n; done += burst) {
    for (let j = 0; j < burst; j++) calls[j] = mutex.runExclusive(f)
    await Promise.all(calls)
  }
}

// sample(impl) -> ns per runExclusive.
async function open ({ kind = 'sequential', n = 200000, burst = 64 } = {}) {
  const lock = new AsyncLock()
  const mutex = new Mutex()
  return {
    async sample (impl) {
      const t0 = nowNs()
      if (kind === 'sequential') {
        if (impl === 'threadlock') await sequentialThreadlock(lock, n)
        else await sequentialMutex(mutex, n)
      } else if (impl === 'threadlock') {
        await burstThreadlock(lock, n, burst)
      } else {
        await burstMutex(mutex, n, burst)
      }
      return (nowNs() - t0) / n
    },
    close () {}
  }
}

module.exports = { open }
