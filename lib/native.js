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
const { stopTerminated } = require('./errors')

function load () {
  const root = path.join(__dirname, '..')
  // A build made here is what node-gyp-build picks first (build/Release,
  // unless PREBUILDS_ONLY or THREADLOCK_PREBUILD says otherwise): taken
  // directly, every thread that loads the package saves node-gyp-build's
  // module, its read of package.json and its directory walks (about 2 ms of
  // a worker's start-up).
  if (!process.env.PREBUILDS_ONLY && !process.env.THREADLOCK_PREBUILD) {
    try {
      return require(path.join(root, 'build', 'Release', 'threadlock.node'))
    } catch (err) {
      if (!err || err.code !== 'MODULE_NOT_FOUND') throw err
    }
  }
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

// Every native call below that has an answer (a number, boolean, array,
// promise, handle) answers or throws, except on a thread that is being
// terminated: once Node marks the thread stopping, Node-API refuses to make
// a promise or an array, or to set an element, and even to throw
// (napi_pending_exception with nothing pending), so the call returns
// undefined with its work done or undone (what it booked, teardown
// releases). V8 stops the thread only at its next interrupt check, and the
// caller would run on with undefined until then: destructure it
// (TypeError), take it for a result, or rejoin a loop. So an undefined
// answer stops the thread here, in the one place every call passes
// (stopTerminated: a loop whose back edge V8 checks). The wrapper adds one
// comparison to each call and is inlined where the call is hot; the
// uncontended fast paths make no native call at all.
function answered (fn, name) {
  return function (a, b, c, d, e, f, g, h, i) {
    const r = fn(a, b, c, d, e, f, g, h, i)
    if (r === undefined) stopTerminated(`threadlock (${name})`)
    return r
  }
}

module.exports = {
  binding,
  selfId,
  // Gate kinds, results, codes and word bits, written once in src/ and
  // exported frozen by the binding.
  constants: binding.constants,
  // Atomics-style waits on one element.
  wait: answered(binding.wait, 'wait'),
  waitAsync: answered(binding.waitAsync, 'waitAsync'),
  notify: answered(binding.notify, 'notify'),
  casNotify: answered(binding.casNotify, 'casNotify'),
  waiterCount: answered(binding.waiterCount, 'waiterCount'),
  wordKey: answered(binding.wordKey, 'wordKey'),
  cancel: answered(binding.cancel, 'cancel'),
  isDetached: answered(binding.isDetached, 'isDetached'),
  // Gates: lock, semaphore, rwlock words whose grants the core decides.
  gateAcquire: answered(binding.gateAcquire, 'gateAcquire'),
  gateAcquireAsync: answered(binding.gateAcquireAsync, 'gateAcquireAsync'),
  gateRelease: answered(binding.gateRelease, 'gateRelease'),
  gateQueued: answered(binding.gateQueued, 'gateQueued'),
  // Whether a lock owner id (threadId + 1) is a live thread.
  threadAlive: answered(binding.threadAlive, 'threadAlive'),
  // The process-wide table of named locks.
  namedInit: binding.namedInit,
  namedRequest: answered(binding.namedRequest, 'namedRequest'),
  namedRelease: answered(binding.namedRelease, 'namedRelease'),
  namedCancel: answered(binding.namedCancel, 'namedCancel'),
  namedQuery: answered(binding.namedQuery, 'namedQuery'),
  // threadlock/host: named locks in a table file shared by processes.
  hostSupported: binding.hostSupported === true,
  hostConstants: binding.hostConstants,
  hostAttach: answered(binding.hostAttach, 'hostAttach'),
  hostRequest: answered(binding.hostRequest, 'hostRequest'),
  hostWait: answered(binding.hostWait, 'hostWait'),
  hostRelease: answered(binding.hostRelease, 'hostRelease'),
  hostPoll: answered(binding.hostPoll, 'hostPoll'),
  hostQuery: answered(binding.hostQuery, 'hostQuery'),
  hostRewatch: answered(binding.hostRewatch, 'hostRewatch'),
  hostClaim: answered(binding.hostClaim, 'hostClaim'),
  hostPrune: answered(binding.hostPrune, 'hostPrune'),
  hostDefer: answered(binding.hostDefer, 'hostDefer'),
  hostTake: answered(binding.hostTake, 'hostTake'),
  hostRef: binding.hostRef,
  hostClose: binding.hostClose,
  hostStats: answered(binding.hostStats, 'hostStats'),
  // threadlock/host's shared memory (Node.js 22 and later, Linux).
  shmSupported: binding.shmSupported === true,
  shmConstants: binding.shmConstants,
  shmOpen: answered(binding.shmOpen, 'shmOpen'),
  shmContains: answered(binding.shmContains, 'shmContains'),
  // A view of the header page of the file of a typed array (for
  // lib/ShmRWLock.js: the count of read-hold records in use).
  shmHeader: answered(binding.shmHeader, 'shmHeader'),
  shmCount: answered(binding.shmCount, 'shmCount'),
  shmOwnerId: answered(binding.shmOwnerId, 'shmOwnerId'),
  shmOwnerAlive: answered(binding.shmOwnerAlive, 'shmOwnerAlive'),
  // Promise waiters and lock waiters on shared memory (lib/shmWait.js,
  // lib/ShmLock.js). shmAsyncInit and shmWatch answer nothing.
  shmAsyncInit: binding.shmAsyncInit,
  shmWaitAsync: answered(binding.shmWaitAsync, 'shmWaitAsync'),
  shmAsyncTake: answered(binding.shmAsyncTake, 'shmAsyncTake'),
  shmAsyncCancel: answered(binding.shmAsyncCancel, 'shmAsyncCancel'),
  shmWaitLock: answered(binding.shmWaitLock, 'shmWaitLock'),
  shmWatch: binding.shmWatch,
  shmPokes: answered(binding.shmPokes, 'shmPokes'),
  shmTicket: answered(binding.shmTicket, 'shmTicket'),
  shmLockRelease: answered(binding.shmLockRelease, 'shmLockRelease'),
  shmHasNode: answered(binding.shmHasNode, 'shmHasNode'),
  shmSemReserved: answered(binding.shmSemReserved, 'shmSemReserved'),
  shmWaitReserve: answered(binding.shmWaitReserve, 'shmWaitReserve'),
  // Read holds of RWLocks on shared memory (lib/ShmRWLock.js).
  shmReadEnter: answered(binding.shmReadEnter, 'shmReadEnter'),
  shmReadLeave: answered(binding.shmReadLeave, 'shmReadLeave'),
  shmReadHolds: answered(binding.shmReadHolds, 'shmReadHolds'),
  shmWakeWriter: answered(binding.shmWakeWriter, 'shmWakeWriter')
}
