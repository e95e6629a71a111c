'use strict'

// The one door to the compiled addon. It loads the addon once per thread,
// registers this thread as a live lock owner (so that a lock it still holds
// when it dies is recovered), and hands the rest of lib/ the native calls
// and constants by name. No other file in lib/ touches the binding object,
// so what the JavaScript layer asks of the C core can be read here in one
// place. `binding` itself is exported for the tests and benchmarks, which
// also reach the diagnostics (waiter counts, fault injection).

const path = require('path')
const { threadId } = require('worker_threads')

function load () {
  const root = path.join(__dirname, '..')
  try {
    return require('node-gyp-build')(root)
  } catch (err) {
    if (err && err.code !== 'MODULE_NOT_FOUND') throw err
    return require(path.join(root, 'build', 'Release', 'threadlock.node'))
  }
}

const binding = load()

// Lock words store the owner's thread id plus one, so that 0 means free.
const selfId = threadId + 1
binding.register(selfId)

module.exports = {
  binding,
  selfId,
  // Gate kinds, results, codes and word bits, written once in src/ and
  // exported frozen by the binding.
  constants: binding.constants,
  // Atomics-style waits on one element.
  wait: binding.wait,
  waitAsync: binding.waitAsync,
  notify: binding.notify,
  waiterCount: binding.waiterCount,
  wordKey: binding.wordKey,
  cancel: binding.cancel,
  isDetached: binding.isDetached,
  // Gates: lock, semaphore, rwlock words whose grants the core decides.
  gateAcquire: binding.gateAcquire,
  gateAcquireAsync: binding.gateAcquireAsync,
  gateRelease: binding.gateRelease,
  gateQueued: binding.gateQueued,
  // Whether a lock owner id (threadId + 1) is a live thread.
  threadAlive: binding.threadAlive,
  // The process-wide table of named locks.
  namedInit: binding.namedInit,
  namedRequest: binding.namedRequest,
  namedRelease: binding.namedRelease,
  namedCancel: binding.namedCancel,
  namedQuery: binding.namedQuery,
  // threadlock/host: named locks in a table file shared by processes.
  hostSupported: binding.hostSupported === true,
  hostConstants: binding.hostConstants,
  hostAttach: binding.hostAttach,
  hostRequest: binding.hostRequest,
  hostWait: binding.hostWait,
  hostRelease: binding.hostRelease,
  hostPoll: binding.hostPoll,
  hostQuery: binding.hostQuery,
  hostRewatch: binding.hostRewatch,
  hostPrune: binding.hostPrune,
  hostDefer: binding.hostDefer,
  hostTake: binding.hostTake,
  hostRef: binding.hostRef,
  hostClose: binding.hostClose,
  hostStats: binding.hostStats,
  // threadlock/host's shared memory (Node.js 22 and later, Linux).
  shmSupported: binding.shmSupported === true,
  shmConstants: binding.shmConstants,
  shmOpen: binding.shmOpen,
  shmContains: binding.shmContains,
  shmCount: binding.shmCount
}
