'use strict'

// What a waiting request of threadlock/host costs: no threadpool thread
// (fs keeps working with more waiters than UV_THREADPOOL_SIZE) and no CPU
// (the waiter sleeps in the kernel, no timer), and what the table keeps
// after processes come and go (nothing).

const assert = require('assert')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')
const { sleep } = require('./fixtures/threads')
const { createLockManager } = require('../host')

describe('threadlock/host resources', function () {
  this.timeout(60000)
  let dir
  beforeEach(() => { dir = scopeDir() })
  afterEach(killAll)

  it('8 pending requests with UV_THREADPOOL_SIZE=2: fs.readFile still completes', async () => {
    const m = createLockManager({ path: dir })
    const held = []
    for (let i = 0; i < 8; i++) held.push(m.requestSync(`p${i}`))
    try {
      const [c] = await spawn(dir, 1, { UV_THREADPOOL_SIZE: '2' })
      for (let i = 0; i < 8; i++) c.send('request', { name: `p${i}` })
      const until = Date.now() + 10000
      while ((await m.query()).pending.length < 8) {
        assert.ok(Date.now() < until, 'the 8 requests were not queued')
        await sleep(5)
      }
      const r = await c.call('readFile', { file: __filename }, 5000)
      assert.strictEqual(r.ok, true)
      // Generous: a starved threadpool would never answer.
      assert.ok(r.ms < 2000, `readFile took ${r.ms} ms`)
    } finally {
      for (const h of held) h.release()
      await m.close()
    }
  })

  it('a process waiting for a lock uses no CPU', async () => {
    const m = createLockManager({ path: dir })
    const held = m.requestSync('cpu')
    try {
      const [c] = await spawn(dir, 1)
      const id = c.send('request', { name: 'cpu' })
      while ((await m.query()).pending.length < 1) await sleep(5)
      const before = (await c.call('stats')).cpu
      await sleep(1000)
      const after = (await c.call('stats')).cpu
      const used = (after.user + after.system - before.user - before.system) / 1000
      // Two IPC round trips cost a little; a poll loop or a spinning
      // waiter would cost far more over a second.
      assert.ok(used < 100, `the waiting process used ${used} ms of CPU in 1 s`)
      held.release()
      await c.event(id, 'granted')
    } finally {
      if (held.held) held.release()
      await m.close()
    }
  })

  it('a request costs O(1) in the requests queued: 2,000 on one name behind another process, then drained, visit at most 4 requests each (finding 7)', async () => {
    const [c] = await spawn(dir, 1)
    const h = c.send('request', { name: 'busy' })
    await c.event(h, 'granted')
    const m = createLockManager({ path: dir })
    try {
      const n = 2000
      const done = []
      for (let i = 0; i < n; i++) done.push(m.request('busy', () => {}))
      const queued = m.stats()
      assert.strictEqual(queued.nodes, n + 1)
      // Queueing walks no list: the tail and head say whether to wait,
      // and the name keeps the set of processes to watch.
      assert.ok(queued.walked <= n, `queueing visited ${queued.walked} requests`)
      c.send('release', { id: h })
      await Promise.all(done)
      const drained = m.stats()
      assert.strictEqual(drained.nodes, 0)
      assert.ok(drained.walked <= 4 * n, `queueing and draining ${n} requests visited ${drained.walked}`)
    } finally {
      await m.close()
    }
  })
})
