'use strict'

// A process stopped inside the table's critical section (SIGSTOP, a
// debugger), or a live process's slot written into its word: no other
// process's event loop waits for it. Promise requests are handed to a
// worker thread that waits; requestSync waits at most its timeout.

const assert = require('assert')
const fs = require('fs')
const path = require('path')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')

const FILE = 'threadlock-host.table'
const CRIT = 32 // the critical-section word's offset in the header

function writeCrit (dir, value) {
  const fd = fs.openSync(path.join(dir, FILE), 'r+')
  const b = Buffer.alloc(4)
  b.writeUInt32LE(value)
  fs.writeSync(fd, b, 0, 4, CRIT)
  fs.closeSync(fd)
}

function readCrit (dir) {
  const fd = fs.openSync(path.join(dir, FILE), 'r')
  const b = Buffer.alloc(4)
  fs.readSync(fd, b, 0, 4, CRIT)
  fs.closeSync(fd)
  return b.readUInt32LE()
}

// `promise`, or a failure naming how the child ended if it ends first.
function alive (child, promise) {
  return Promise.race([promise, child.exited.then((how) => { throw new Error(`child ${child.pid} ended: ${JSON.stringify(how)}`) })])
}

async function waitFor (check, ms = 10000) {
  const until = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('threadlock/host: a process stopped inside the critical section (finding 3)', function () {
  this.timeout(60000)
  afterEach(killAll)

  it("a live idle process's slot in the section's word: another process's request('unrelated') leaves its event loop free, and is granted once the word is free", async () => {
    const dir = scopeDir()
    const [owner, other] = await spawn(dir, 2)
    const slot = (await owner.call('stats')).stats.slot
    writeCrit(dir, slot + 1) // as if `owner` were inside, and stopped
    const id = other.send('request', { name: 'unrelated' })
    // The event loop answers while the request waits for the section.
    const pong = await alive(other, other.call('ping', {}, 5000))
    assert.strictEqual(pong.ev, 'pong')
    assert.ok(!other.events.some((m) => m.id === id), 'not granted while the section is held')
    // A query waits there too, without blocking the loop.
    const q = other.send('query')
    assert.strictEqual((await alive(other, other.call('ping', {}, 5000))).ev, 'pong')
    writeCrit(dir, 0) // the owner leaves the section
    const granted = await alive(other, other.event(id, 'granted'))
    assert.strictEqual(granted.mode, 'exclusive')
    const snapshot = (await other.event(q, 'query')).snapshot
    assert.ok(Array.isArray(snapshot.held))
    other.send('release', { id })
    assert.strictEqual((await other.event(id, 'resolved')).value, 'done')
  })

  it('a requestSync with a timeout returns ETIMEDOUT while the section is held by a live process', async () => {
    const dir = scopeDir()
    const [owner, other] = await spawn(dir, 2)
    const slot = (await owner.call('stats')).stats.slot
    writeCrit(dir, slot + 1)
    const got = await alive(other, other.call('sync', { name: 'unrelated', options: { timeout: 300 } }, 10000))
    assert.strictEqual(got.ev, 'error')
    assert.strictEqual(got.error.code, 'ETIMEDOUT')
    assert.ok(got.waited >= 250, `waited ${got.waited} ms`)
    writeCrit(dir, 0)
    const again = await other.call('sync', { name: 'unrelated', options: { timeout: 5000 } })
    assert.strictEqual(again.ev, 'granted')
  })

  it('SIGSTOP inside the section: the others\' event loops stay free, their requests are granted in order after SIGCONT', async () => {
    const dir = scopeDir()
    const [holder] = await spawn(dir, 1)
    const [stopped] = await spawn(dir, 1, { THREADLOCK_HOST_FAULT: 'stop' })
    const [other] = await spawn(dir, 1)
    const h = holder.send('request', { name: 'busy' })
    await holder.event(h, 'granted')
    // The stopped process's first queued request stops it inside the section.
    stopped.send('request', { name: 'busy' })
    await waitFor(() => readCrit(dir) !== 0)
    const first = other.send('request', { name: 'unrelated-1' })
    const second = other.send('request', { name: 'unrelated-2', options: { ifAvailable: true } })
    assert.strictEqual((await alive(other, other.call('ping', {}, 5000))).ev, 'pong')
    // The holder's release waits for the section without blocking either.
    holder.send('release', { id: h })
    assert.strictEqual((await alive(holder, holder.call('ping', {}, 5000))).ev, 'pong')
    assert.ok(!other.events.some((m) => m.id === first || m.id === second))
    stopped.kill('SIGCONT')
    await alive(other, other.event(first, 'granted'))
    await alive(other, other.event(second, 'granted'))
    assert.strictEqual((await holder.event(h, 'resolved')).value, 'done')
  })

  it('a grant rung while a live process holds the section reaches the waiting event loop: its poll needs no section', async () => {
    const dir = scopeDir()
    const [owner, a, b] = await spawn(dir, 3)
    const slot = (await owner.call('stats')).stats.slot
    const held = a.send('request', { name: 'x' })
    await a.event(held, 'granted')
    const waiting = b.send('request', { name: 'x' })
    // Queued in the table (a request that found the section busy is
    // linked by b's worker, later than b answers anything): only a request
    // linked 1 ms before the release is served by it.
    await waitFor(async () => (await owner.call('query')).snapshot.pending.some((e) => e.name === 'x' && e.pid === b.pid))
    // Waiting 1 ms and more, it is served at the release (no barging
    // ahead of it): the grant is made then, not left for b to claim, which
    // would need the section.
    await new Promise((resolve) => setTimeout(resolve, 20))
    // b's event loop is busy while a releases: the grant is written and
    // b's doorbell rung, and b polls only after the section is taken.
    const busy = b.send('busy', { ms: 1500 })
    a.send('release', { id: held })
    assert.strictEqual((await a.event(held, 'resolved')).value, 'done')
    writeCrit(dir, slot + 1) // as if `owner` were inside, and stopped
    try {
      await alive(b, b.event(busy, 'idle'))
      const granted = await alive(b, b.event(waiting, 'granted', 5000))
      assert.strictEqual(granted.mode, 'exclusive')
      assert.strictEqual(readCrit(dir), slot + 1, 'the section was still held')
    } finally {
      writeCrit(dir, 0)
    }
    b.send('release', { id: waiting })
    assert.strictEqual((await b.event(waiting, 'resolved')).value, 'done')
  })
})
