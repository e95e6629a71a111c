'use strict'

// Promise waiters on memory shared by processes (threadlock/host's
// openSharedMemory): waitAsync there, and the promise requests of an
// AsyncLock there (lib/ShmLock.js).
//
// A waiter is a node in the file's waiter list (src/host/shm_wait.c) and a
// record of this thread's (src/host/binding_shm.c), named here by its
// token. A notify in any process moves the node to NOTIFIED and rings this
// process's doorbell in the file; the process's helper thread then calls
// `poll` on every thread with waiters, which takes the waiters whose node
// was notified (one native call per batch). No timer runs while a waiter
// has no timeout, and nothing polls: the thread sleeps in its event loop.
// A timeout (lib/timer.js, never early) or an abort withdraws the node; if
// a notify counted it first, the waiter resolves 'ok' as a notified one
// (the notify's count stays exact). A worker that is terminated withdraws
// its nodes in its env's cleanup hook.
//
// A lock waiter (`pokes` given) is also woken when an owner dies: a poke
// frees its node and rings the doorbell (src/host/shm_wait.c), and it
// resolves 'poked', so that the lock looks at its word again. An
// AsyncLock's waiter (`ticket` given too) that a release handed the lock
// took it up in the native call that found its node notified (the poll,
// or a withdrawal that came too late) and resolves 'accepted'.

const native = require('./native')
const { atDeadline } = require('./timer')
const { abortError } = require('./errors')

const { RESULT_OK, RESULT_NOT_EQUAL, RESULT_TIMED_OUT } = native.constants
const { POKED, ACCEPTED, KIND_LOCK, KIND_HANDOFF, KIND_PRESENT, KIND_RESERVE, KIND_READER } = native.shmConstants || {}


const RESULTS = { [RESULT_OK]: 'ok', [RESULT_NOT_EQUAL]: 'not-equal', [RESULT_TIMED_OUT]: 'timed-out', [POKED]: 'poked', [ACCEPTED]: 'accepted' }

// This thread's waiters by token.
const pending = new Map()
let ready = false

function poll () {
  const done = native.shmAsyncTake()
  for (let k = 0; k < done.length; k += 2) {
    const w = pending.get(done[k])
    if (w === undefined) continue
    const code = done[k + 1]
    if (code < 0) w.fail(Object.assign(new Error('waitAsync: the shared-memory file shrank under this process'), { code: 'ECORRUPT' }))
    else w.finish(code)
  }
}

/**
 * Waits while element `index` of `ta` (over shared memory) holds `value`.
 * Returns a number (a result code: not waiting) or a promise of 'ok',
 * 'timed-out' (or 'poked' for a lock waiter).
 * @param {Int32Array | BigInt64Array} ta
 * @param {number} index
 * @param {number | bigint} value
 * @param {{ timeout: number, ref: boolean, signal?: AbortSignal,
 *   pokes?: number, ticket?: number, present?: boolean, reader?: boolean,
 *   reserve?: number }} o
 *   `pokes` (lock waiters only): the file's poke counter read before the
 *   waiter looked at the holder (native.shmPokes); a poke since then, or
 *   while it waits, resolves 'poked'; `ticket` (lock waiters): the
 *   request's (native.shmTicket); `present`: it has come to try since it
 *   queued; `reader`: an RWLock's reader (a hand-off to it is a read
 *   lock); `reserve` (a Semaphore request, lib/ShmSemaphore.js): the
 *   permits it needs: it reserves the word (`value` must have too few and
 *   RESERVED clear) and resolves 'accepted' once it took them, 'ok' if the
 *   reservation was lost
 */
function waitAsync (ta, index, value, o) {
  // A signal aborted already: a lock's promise request may come back here
  // after a wake that it then lost (the lock retaken), with a signal
  // aborted in between, whose 'abort' event will not fire again.
  if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
  if (!ready) {
    native.shmAsyncInit(poll)
    ready = true
  }
  const lock = o.pokes !== undefined
  // A lock's waiter with a ticket (an AsyncLock's, an RWLock's) may be
  // handed the lock: it takes it up before its node is freed, and resolves
  // 'accepted'.
  // `present`: it came to try and sleeps again (a release may hand it the
  // lock once it has waited 1 ms).
  // `reader` (an RWLock's reader): it takes a hand-off up as a read lock.
  const handoff = lock && o.ticket !== undefined && o.ticket !== 0
  const reserve = o.reserve !== undefined
  const kind = reserve
    ? KIND_RESERVE
    : !lock ? 0 : !handoff ? KIND_LOCK : KIND_LOCK | KIND_HANDOFF | (o.present ? KIND_PRESENT : 0) | (o.reader ? KIND_READER : 0)
  const r = native.shmWaitAsync(ta, index, value, o.ref, kind, lock ? o.pokes : 0, reserve ? o.reserve : handoff ? o.ticket : 0)
  if (r < 16) return r
  const token = r
  return new Promise((resolve, reject) => {
    let timer
    const signal = o.signal
    const end = () => {
      pending.delete(token)
      if (timer !== undefined) clearTimeout(timer)
      if (signal !== undefined) signal.removeEventListener('abort', onAbort)
    }
    const w = {
      finish (code) {
        end()
        resolve(RESULTS[code])
      },
      fail (err) {
        end()
        reject(err)
      }
    }
    // Withdraws the node: 'timed-out' (or the abort) when withdrawn, 'ok'
    // when a notify counted it first ('poked' when a poke freed it).
    const withdraw = (onWithdrawn) => {
      const c = native.shmAsyncCancel(token)
      if (c < 0) return // taken already
      if (c === RESULT_TIMED_OUT) onWithdrawn()
      else w.finish(c)
    }
    const onAbort = () => withdraw(() => w.fail(abortError(signal)))
    pending.set(token, w)
    if (o.timeout !== Infinity) {
      atDeadline(performance.now() + o.timeout, () => withdraw(() => w.finish(RESULT_TIMED_OUT)), (t) => { timer = t })
    }
    if (signal !== undefined) signal.addEventListener('abort', onAbort, { once: true })
  })
}

module.exports = { waitAsync, RESULTS }
