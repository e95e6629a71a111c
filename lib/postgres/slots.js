'use strict'

// The bound on connections: a FIFO counting semaphore. A request takes a
// slot before it asks the pool for a session and gives it back once the
// session is released or destroyed, so a manager never uses more than
// maxConnections sessions for its requests, and requests beyond that wait
// here, in order, where an abort can take them out.

class Slots {
  constructor (max) {
    this.free = max
    this.waiting = []
  }

  /**
   * Takes a slot at once if one is free and nobody waits for one; returns
   * whether it did (then the caller owns it and must give() it back).
   */
  tryTake () {
    if (this.free > 0 && this.waiting.length === 0) {
      this.free--
      return true
    }
    return false
  }

  /**
   * Asks for a slot. Returns { granted, withdraw }: `granted` resolves with
   * true once the slot is taken, or with false if the ticket was withdrawn
   * first; withdraw() takes a waiting ticket out of the line and returns
   * true, or returns false if the slot was already granted (then the caller
   * owns it and must give() it back).
   */
  take () {
    if (this.free > 0 && this.waiting.length === 0) {
      this.free--
      return { granted: Promise.resolve(true), withdraw: () => false }
    }
    let ticket
    const granted = new Promise((resolve) => { ticket = { resolve } })
    this.waiting.push(ticket)
    const withdraw = () => {
      const i = this.waiting.indexOf(ticket)
      if (i === -1) return false
      this.waiting.splice(i, 1)
      ticket.resolve(false)
      return true
    }
    return { granted, withdraw }
  }

  /** Gives a slot back, to the oldest waiting ticket if there is one. */
  give () {
    const next = this.waiting.shift()
    if (next !== undefined) next.resolve(true)
    else this.free++
  }
}

module.exports = { Slots }
