'use strict'

// Barrier(n): n parties wait for each other, phase after phase.
//
// Two Int32s: the parties, and a state word holding the phase number in the
// high 16 bits and the arrivals of the current phase in the low 16 bits. One
// compare-exchange both counts an arrival and tells which phase it belongs
// to; the last arrival instead moves to the next phase with the count 0 in
// that same step, then wakes everybody. Arrivals of the next phase cannot
// mix with the previous one, because a phase ends only when all its parties
// arrived, and a party that withdraws (timeout, abort) changes the word, so
// no completion is made on a count that no longer holds.
//
// On memory shared by processes (openSharedMemory) the same code works
// across processes: its waits and wakes are wait / waitAsync / notify,
// which go through the file's waiter list there. A process that dies after
// its arrival stays counted, as a worker that ends does. The completion
// and its wake are one native call (gate.casNotify: a worker terminated
// between them would leave the parties asleep), and on such memory the
// waits are woken by any death in the file too (gate.watchedWaitSync: the
// last party's process killed between the two), and look again.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const { readCount, readSyncOptions, readAsyncOptions } = require('./validate')
const { timeoutError, abortError } = require('./errors')

const COUNT_MASK = 0xffff
const PHASE_ONE = 0x10000
const { load, store, compareExchange } = Atomics

class Barrier extends SharedSlot {
  #i32
  #shm

  /**
   * @param {number} parties how many arrivals complete a phase (1-65535)
   * @param {SharedArrayBuffer | object} [buffer] a new 8-byte buffer by default;
   *   or one options object { buffer, byteOffset } in place of all three
   * @param {number} [byteOffset=0]
   * @param {object} [options] none are defined yet; unknown ones are refused
   */
  constructor (parties, buffer = undefined, byteOffset = undefined, options = undefined) {
    super({ type: 'Barrier', words: 2, shm: true }, [buffer, byteOffset, options], (i32, handle) => {
      if (handle !== undefined) return
      store(i32, 0, readCount(parties, 1, COUNT_MASK, 'Barrier', 'parties'))
      store(i32, 1, 0)
    })
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 2)
    this.#shm = native.shmSupported && native.shmContains(this.#i32)
  }

  get parties () { return load(this.#i32, 0) }
  /** Arrivals in the current phase. */
  get arrived () { return load(this.#i32, 1) & COUNT_MASK }
  /** The current phase number (wraps at 65536). */
  get phase () { return load(this.#i32, 1) >>> 16 }

  // Counts this arrival. Returns -1 when it completed the phase, else the
  // phase to wait out. One compare-exchange either counts the arrival or,
  // for the last one, moves to the next phase with the count 0: a party
  // that withdraws its arrival (#withdraw) meanwhile changes the word, so
  // the completion fails and is tried again on the count without it, and
  // nothing is ever done on a count another party changed in between.
  #arrive () {
    const parties = load(this.#i32, 0)
    let v = load(this.#i32, 1)
    for (;;) {
      if ((v & COUNT_MASK) + 1 === parties) {
        if (gate.casNotify(this.#i32, 1, v, (((v >>> 16) + 1) * PHASE_ONE) | 0, Infinity) >= 0) return -1
        v = load(this.#i32, 1)
        continue
      }
      const seen = compareExchange(this.#i32, 1, v, v + 1)
      if (seen === v) return v >>> 16
      v = seen
    }
  }

  // Takes back this party's arrival in `phase` after a timeout or abort, so
  // that a retry does not count twice. Returns false if the phase ended
  // first: the party then simply passed the barrier.
  #withdraw (phase) {
    let v = load(this.#i32, 1)
    while (v >>> 16 === phase) {
      const seen = compareExchange(this.#i32, 1, v, v - 1)
      if (seen === v) return true
      v = seen
    }
    return false
  }

  /**
   * Arrives and blocks until all parties arrived. Returns true in the one
   * party whose arrival completed the phase. A party that times out takes
   * its arrival back before it throws (unless the phase ended first, in
   * which case it returns false as if it had not timed out).
   */
  arriveAndWaitSync (options) {
    const timeout = readSyncOptions(options, 'Barrier.arriveAndWaitSync')
    const deadline = gate.deadlineOf(timeout)
    const phase = this.#arrive()
    if (phase < 0) return true
    for (;;) {
      const pokes = gate.pokesOf(this.#i32, this.#shm)
      const v = load(this.#i32, 1)
      if (v >>> 16 !== phase) return false
      if (gate.watchedWaitSync(this.#i32, 1, v, gate.remaining(deadline), 'Barrier.arriveAndWaitSync', this.#shm, pokes) === 'timed-out') {
        if (!this.#withdraw(phase)) return false
        throw timeoutError(timeout, 'Barrier.arriveAndWaitSync')
      }
    }
  }

  /**
   * The promise form of arriveAndWaitSync; resolves with the same value. A
   * timeout or an abort through `options.signal` takes the arrival back,
   * as in arriveAndWaitSync.
   */
  async arriveAndWait (options) {
    const o = readAsyncOptions(options, 'Barrier.arriveAndWait', false)
    if (o.signal !== undefined && o.signal.aborted) throw abortError(o.signal)
    const deadline = gate.deadlineOf(o.timeout)
    const phase = this.#arrive()
    if (phase < 0) return true
    for (;;) {
      const pokes = gate.pokesOf(this.#i32, this.#shm)
      const v = load(this.#i32, 1)
      if (v >>> 16 !== phase) return false
      let r
      try {
        r = await gate.watchedWaitAsync(this.#i32, 1, v, { ...o, timeout: gate.remaining(deadline) }, this.#shm, pokes)
      } catch (err) {
        if (!this.#withdraw(phase)) return false
        throw err // the abort
      }
      if (r === 'timed-out') {
        if (!this.#withdraw(phase)) return false
        throw timeoutError(o.timeout, 'Barrier.arriveAndWait')
      }
    }
  }
}

module.exports = { Barrier }
