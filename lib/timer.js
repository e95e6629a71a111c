'use strict'

// The one timer of every request that JavaScript times (a request queued in
// this thread behind the thread's own hold, a named lock's request of any
// scope). Loads no addon.
//
// Node's timers run on the event loop's cached clock, which is read once
// per turn of the loop: a timer armed after a long synchronous stretch
// counts its delay from the start of that stretch and fires early by the
// real clock. A deadline timer therefore checks performance.now() when it
// fires and arms again for what is left, so its callback never runs before
// the deadline. setTimeout takes at most 2^31 - 1 ms (a longer delay fires
// after 1 ms); a longer wait is made of such steps the same way.

const MAX_DELAY = 0x7fffffff

/**
 * Calls `fire()` once performance.now() >= `deadline` (a finite number).
 * The timers do not keep the event loop alive. `onArm(timer)` is told of
 * each timer armed, so that the caller can clear the current one; returns
 * the first.
 */
function atDeadline (deadline, fire, onArm) {
  const check = () => {
    const left = deadline - performance.now()
    if (left > 0) arm(left)
    else fire()
  }
  const arm = (left) => {
    // Rounded up: a delay below 1 ms is 1 ms anyway, and a fraction rounded
    // down would fire early once more.
    const timer = setTimeout(check, Math.min(Math.ceil(left), MAX_DELAY))
    timer.unref()
    if (onArm !== undefined) onArm(timer)
    return timer
  }
  return arm(Math.max(deadline - performance.now(), 0))
}

module.exports = { atDeadline }
