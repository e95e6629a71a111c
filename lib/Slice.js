'use strict'

// A thread's slice of a barging gate (an AsyncLock word, the writers of an
// RWLock): how long the thread may keep taking it while others wait. Every
// grant the thread takes while somebody waits counts; after SLICE_GRANTS of
// them or SLICE_MS, whichever comes first, the thread's release hands the
// gate to the oldest waiter (the native TL_LOCK_HANDOFF). The clock is read
// at every 16th grant only.

const SLICE_GRANTS = 2048
const SLICE_MS = 0.3

class Slice {
  #streak = 0 // grants taken in a row while others waited
  #end = 0 // performance.now() when the slice ends

  /** Whether a slice is under way (a grant was counted since the last reset). */
  get running () { return this.#streak !== 0 }

  /** A new slice: after a grant that came from waiting, or a free release. */
  reset () { this.#streak = 0 }

  /** Counts one grant while others wait; false when the slice is over. */
  take () {
    const s = ++this.#streak
    if (s === 1) this.#end = performance.now() + SLICE_MS
    else if (s >= SLICE_GRANTS || ((s & 15) === 0 && performance.now() >= this.#end)) {
      this.#streak = 0
      return false
    }
    return true
  }
}

module.exports = { Slice }
