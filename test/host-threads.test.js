'use strict'

// The threads of threadlock/host: the watchers a process needs and no
// more, and a thread that cannot start is an error the request reports,
// never a silent loss of liveness.

const assert = require('assert')
const fs = require('fs')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')

// The names of a process's threads.
function threads (pid) {
  const names = []
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      names.push(fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim())
    } catch {
      // the thread ended meanwhile
    }
  }
  return names
}

function watchers (pid) {
  return threads(pid).filter((n) => n === 'tl-host-watch').length
}

async function until (check, ms = 10000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

describe('threadlock/host: watcher threads (finding 5)', function () {
  this.timeout(120000)
  afterEach(killAll)

  it('a queue of 12 processes on one name drains: no watcher thread is left in any of them', async () => {
    const dir = scopeDir()
    const children = await spawn(dir, 12)
    const ids = [children[0].send('request', { name: 'queue' })]
    await children[0].event(ids[0], 'granted')
    for (let i = 1; i < children.length; i++) {
      ids.push(children[i].send('request', { name: 'queue' }))
      // Each queues behind every earlier one, in this order.
      for (;;) {
        const snap = (await children[0].call('query')).snapshot
        if (snap.pending.length === i) break
      }
    }
    // The last one waits behind 11 processes: it watches them.
    assert.ok(await until(() => watchers(children[11].pid) > 0), 'the last waiter watches the ones ahead')
    for (let i = 0; i < children.length; i++) {
      await children[i].event(ids[i], 'granted')
      children[i].send('release', { id: ids[i] })
      await children[i].event(ids[i], 'resolved')
    }
    for (const c of children) {
      assert.ok(await until(() => watchers(c.pid) === 0, 5000), `process ${c.pid} still has ${watchers(c.pid)} watcher threads`)
    }
  })

  it('a watcher that cannot start: the request rejects with HostError EAGAIN and leaves nothing in the table; requestSync throws it', async () => {
    const dir = scopeDir()
    const [holder] = await spawn(dir, 1)
    const [failing] = await spawn(dir, 1, { THREADLOCK_HOST_TEST_NO_THREAD: 'tl-host-watch' })
    const h = holder.send('request', { name: 'x' })
    await holder.event(h, 'granted')
    const id = failing.send('request', { name: 'x' })
    const got = await failing.event(id, 'rejected')
    assert.deepStrictEqual(got.error, {
      name: 'HostError',
      code: 'EAGAIN',
      message: 'LockManager.request: cannot start a thread (the process or user reached its limit of threads); the request was withdrawn'
    })
    const snap = (await holder.call('query')).snapshot
    assert.deepStrictEqual([snap.held.length, snap.pending.length], [1, 0])
    const sync = await failing.call('sync', { name: 'x', options: { timeout: 5000 } })
    assert.strictEqual(sync.ev, 'error')
    assert.strictEqual(sync.error.code, 'EAGAIN')
    // A request that needs no watcher (the lock is free) still works.
    holder.send('release', { id: h })
    await holder.event(h, 'resolved')
    const free = failing.send('request', { name: 'x' })
    await failing.event(free, 'granted')
  })
})
