'use strict'

// threadlock/host's barging policy (src/host/lists.c, B1-B3): a name that a
// release leaves free goes to the request that comes first, often the
// releaser's next one, without a wake-up of another process; a waiter that
// has waited 1 ms is granted at the next release, so a process taking and
// releasing a name in a loop cannot starve another.

const assert = require('assert')
const { createLockManager } = require('../host')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')

describe('threadlock/host: barging with a bounded wait', function () {
  this.timeout(60000)
  afterEach(killAll)

  it('a request that comes first takes a name its release left free, ahead of a waiter younger than 1 ms; the waiter gets it next', async () => {
    const dir = scopeDir()
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    let barged = 0
    for (let i = 0; i < 20; i++) {
      const held = a.requestSync('bg')
      let granted = false
      const waiting = b.request('bg', () => { granted = true })
      held.release()
      // The waiter's request is younger than 1 ms (unless this thread was
      // descheduled meanwhile): the name is left free for whoever comes.
      const again = a.requestSync('bg', { ifAvailable: true })
      if (again !== null) {
        barged++
        assert.strictEqual(granted, false)
        again.release()
      }
      await waiting
      assert.strictEqual(granted, true, `round ${i}`)
    }
    assert.ok(barged > 0, 'no request ever took the name ahead of a young waiter')
    assert.strictEqual(a.stats().nodes, 0)
    await a.close()
    await b.close()
  })

  it("a request does not barge ahead of its own manager's earlier requests, even when another manager's waiter is first", async () => {
    const dir = scopeDir()
    const b = createLockManager({ path: dir })
    const c = createLockManager({ path: dir })
    for (let round = 0; round < 20; round++) {
      const order = []
      // c holds (so that it may barge: every waiter watches it), b's
      // request is first, c's first one behind it: both young when c's
      // release leaves the name free.
      const held = c.requestSync('own')
      const fromB = b.request('own', () => { order.push('b') })
      const first = c.request('own', () => { order.push('c1') })
      held.release()
      const second = c.requestSync('own', { ifAvailable: true })
      if (second !== null) {
        order.push('c2')
        second.release()
      }
      await Promise.all([fromB, first])
      assert.strictEqual(second, null, `round ${round}: c's second request went ahead of its first (${order})`)
    }
    await b.close()
    await c.close()
  })

  it('a manager whose process no waiter watches does not barge (it queues): were it to die holding the name, nobody would notice', async () => {
    const dir = scopeDir()
    const h = createLockManager({ path: dir })
    const w = createLockManager({ path: dir })
    const e = createLockManager({ path: dir })
    let queued = 0
    for (let round = 0; round < 10; round++) {
      const held = h.requestSync('watched')
      const waiting = w.request('watched', () => {})
      held.release()
      // w's request is young and the name free, but e has never been in
      // the name's list: w does not watch it.
      const barged = e.requestSync('watched', { ifAvailable: true })
      if (barged === null) queued++
      else barged.release()
      await waiting
    }
    assert.strictEqual(queued, 10)
    await h.close()
    await w.close()
    await e.close()
  })

  for (const kind of ['request', 'sync']) {
    it(`a waiter (${kind === 'sync' ? 'requestSync' : 'request'}) is granted within a bounded number of grants while another process takes and releases the name in a loop`, async () => {
      const dir = scopeDir()
      const [looper, waiter] = await spawn(dir, 2)
      const loop = looper.send('loop', { name: 'starve' })
      await looper.event(loop, 'looping')
      // Both processes have been in the name's list (the waiter watches
      // the looper: it may barge), and the looper is taking it in a loop.
      const warm = waiter.send('request', { name: 'starve' })
      await waiter.event(warm, 'granted')
      waiter.send('release', { id: warm })
      await waiter.event(warm, 'resolved')
      await new Promise((resolve) => setTimeout(resolve, 50))
      const before = (await looper.call('count')).count
      const w = waiter.send(kind, { name: 'starve' })
      const granted = await waiter.event(w, 'granted', 10000)
      const during = (await looper.call('count')).count - before
      assert.strictEqual(granted.ev, 'granted')
      waiter.send('release', { id: w })
      looper.send('stop')
      const stopped = await looper.event(loop, 'stopped', 10000)
      assert.ok(stopped.count > before, 'the looper went on after the grant')
      // Without the bound the looper keeps the name for as long as it
      // loops (several thousand grants a second, and the waiter none).
      // With it the waiter is old 1 ms after it was linked and is granted
      // at the next release: the grants in between are those of that
      // millisecond plus the messages' way (the count is read over IPC).
      assert.ok(during < 3000, `the looper made ${during} grants while the waiter waited`)
    })
  }

  it('kill -9 of a process taking and releasing the name in a loop, at random moments: the waiter is granted every time', async () => {
    const dir = scopeDir()
    const [waiter] = await spawn(dir, 1)
    for (let round = 0; round < 8; round++) {
      const [looper] = await spawn(dir, 1)
      const loop = looper.send('loop', { name: 'killed' })
      await looper.event(loop, 'looping')
      await new Promise((resolve) => setTimeout(resolve, 20))
      const kind = round % 2 === 0 ? 'request' : 'sync'
      const w = waiter.send(kind, { name: 'killed' })
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)))
      await looper.kill()
      const granted = await waiter.event(w, 'granted', 10000)
      assert.strictEqual(granted.ev, 'granted', `round ${round}`)
      waiter.send('release', { id: w })
      if (kind === 'request') await waiter.event(w, 'resolved')
      else await waiter.event(w, 'released')
    }
  })
})
