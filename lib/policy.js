'use strict'

// The lock policy's settings, as the core defines them (src/waiters.h,
// TL_POLICY_MAP), in the units a user reads: frozen, for the README's
// quotes and for programs that want to know the bounds they rely on.

const { constants } = require('./native')

const lockPolicy = Object.freeze({
  /** Grants a holder may take in a row while others wait. */
  sliceGrants: constants.POLICY_SLICE_GRANTS,
  /** Milliseconds a holder's slice lasts at most while others wait. */
  sliceMs: constants.POLICY_SLICE_NS / 1e6,
  /** A waiter that has waited this many milliseconds gets the lock at the next release (a promise request: the first after its event loop runs). */
  starvationMs: constants.POLICY_STARVING_NS / 1e6,
  /** Microseconds a woken waiter lets the previous holder take the lock again first. */
  courtesyMicros: constants.POLICY_COURTESY_NS / 1e3,
  /** Microseconds a promise request that came and found the lock taken watches for the hand-off it is owed before its thread returns to its event loop. */
  presentMicros: constants.POLICY_PRESENT_NS / 1e3
})

module.exports = { lockPolicy }
