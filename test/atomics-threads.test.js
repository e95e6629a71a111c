'use strict'

// wait / notify / waitAsync across real worker threads: who wakes whom, in
// what order, how many, through which views, with what timeouts, and that
// no event loop takes part in waking a blocked thread.
//
// Layout of each test's SharedArrayBuffer (Int32 indices): elements 0..15
// are waited on; 32..47 are flags that a woken thread raises (CONTROL).

const assert = require('assert')
const path = require('path')
const { spawnSync } = require('child_process')
const { Worker } = require('worker_threads')
const { wait, notify, waitAsync, waiterCount } = require('..')
const { until, sleep } = require('./fixtures/threads')

const FIXTURE = path.join(__dirname, 'fixtures', 'atomics-peer.js')
const TERMINATE_RACE = path.join(__dirname, 'fixtures', 'atomics-terminate-race.js')
const SAB_BYTES = 256
const CONTROL = 32
// How long a thread may take to react to something (generous: the machine
// may be loaded); and how long "nothing happens" is watched for.
const PROMPT_MS = 10000
const QUIET_MS = 60

function nowMs () {
  return Number(process.hrtime.bigint()) / 1e6
}

// Spins on the calling thread, never yielding to its event loop.
function spinUntil (condition, ms = PROMPT_MS) {
  const deadline = nowMs() + ms
  while (!condition()) {
    if (nowMs() > deadline) return false
  }
  return true
}

function views (sab) {
  return { i32: new Int32Array(sab), i64: new BigInt64Array(sab) }
}

const peers = new Set()
const buffers = new Set()
// Workers of finished tests whose every command had ended, for the next
// Peer: a thread start costs more than most tests here. Unref'd while
// idle, so that they keep no mocha process alive.
const idle = []

// Every buffer a test uses, so that the cleanup can wake whatever a failed
// test left waiting on this thread (a pending waitAsync keeps mocha alive).
function newSab () {
  const sab = new SharedArrayBuffer(SAB_BYTES)
  buffers.add(sab)
  return sab
}

// One worker running test/fixtures/atomics-peer.js.
class Peer {
  constructor (sab, label) {
    this.label = label
    this.messages = []
    this.ended = new Set() // ids of commands that reported 'done'
    this.listeners = []
    this.nextId = 1
    this.on = {
      message: (m) => this.deliver(m),
      error: (err) => this.deliver({ type: 'crash', error: String(err && err.stack) }),
      exit: (code) => this.deliver({ type: 'exit', code })
    }
    this.worker = idle.pop()
    if (this.worker === undefined) {
      const worker = new Worker(FIXTURE, { workerData: { sab } })
      const leave = () => {
        if (idle.includes(worker)) idle.splice(idle.indexOf(worker), 1)
      }
      // Between tests too: an error event with no listener would throw here.
      worker.on('error', leave)
      worker.on('exit', leave)
      this.worker = worker
    } else {
      this.worker.ref()
      this.worker.postMessage({ op: 'attach', sab })
    }
    for (const [event, listener] of Object.entries(this.on)) this.worker.on(event, listener)
    peers.add(this)
  }

  deliver (message) {
    if (message.type === 'error' || message.type === 'crash') {
      this.failure = new Error(`${this.label}: ${message.error}`)
    }
    if (message.type === 'done') this.ended.add(message.id)
    this.messages.push(message)
    for (const l of [...this.listeners]) l()
  }

  // The first message matching `predicate`, removed from the queue.
  next (predicate, what, ms = PROMPT_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.failure) {
          cleanupListener()
          reject(this.failure)
          return true
        }
        const k = this.messages.findIndex(predicate)
        if (k < 0) return false
        cleanupListener()
        resolve(this.messages.splice(k, 1)[0])
        return true
      }
      const timer = setTimeout(() => {
        cleanupListener()
        reject(new Error(`${this.label}: no message after ${ms} ms: ${what}`))
      }, ms)
      const listener = () => { check() }
      listener.cancel = () => clearTimeout(timer)
      const cleanupListener = () => {
        clearTimeout(timer)
        this.listeners = this.listeners.filter((l) => l !== listener)
      }
      this.listeners.push(listener)
      check()
    })
  }

  // Stops listening: pending `next` calls never settle, so that no timer
  // of a finished test fires into a later one. A worker whose every
  // command has ended, with nothing gone wrong, waits for the next Peer;
  // any other is terminated.
  async close () {
    for (const l of this.listeners) l.cancel()
    this.listeners = []
    for (const [event, listener] of Object.entries(this.on)) this.worker.off(event, listener)
    let allEnded = true
    for (let id = 1; id < this.nextId; id++) allEnded = allEnded && this.ended.has(id)
    const quiet = this.failure === undefined && allEnded &&
      !this.messages.some((m) => m.type === 'exit' || m.type === 'error' || m.type === 'crash')
    if (quiet) {
      this.worker.unref()
      idle.push(this.worker)
    } else {
      await this.worker.terminate()
    }
  }

  async ready () {
    const m = await this.next((m) => m.type === 'ready', 'worker ready')
    this.threadId = m.threadId
    return this
  }

  // Sends a command; returns its id and promises of its two reports.
  send (cmd) {
    const id = this.nextId++
    this.worker.postMessage({ ...cmd, id })
    const what = `${cmd.op} #${id}`
    return {
      id,
      started: () => this.next((m) => m.id === id && m.type === 'started', `${what} started`),
      done: (ms) => this.next((m) => m.id === id && m.type === 'done', `${what} done`, ms),
      hasEnded: () => this.ended.has(id)
    }
  }
}

async function startPeers (sab, n) {
  const out = []
  for (let k = 0; k < n; k++) out.push(new Peer(sab, `worker ${String.fromCharCode(65 + k)}`))
  return Promise.all(out.map((p) => p.ready()))
}

// Starts a blocking wait in `peer` and returns once it is enqueued on
// `probe[index]` (a view of the same element in this thread).
async function blockIn (peer, cmd, probe, probeIndex) {
  const before = waiterCount(probe, probeIndex)
  const call = peer.send({ op: 'wait', ...cmd })
  await call.started()
  await until(() => waiterCount(probe, probeIndex) === before + 1,
    `${peer.label} is enqueued`, PROMPT_MS)
  return call
}

async function waitAsyncIn (peer, cmd, probe, probeIndex) {
  const before = waiterCount(probe, probeIndex)
  const call = peer.send({ op: 'waitAsync', ...cmd })
  const started = await call.started()
  assert.strictEqual(started.async, true)
  await until(() => waiterCount(probe, probeIndex) === before + 1,
    `${peer.label} is enqueued`, PROMPT_MS)
  return call
}

// A waitAsync on this thread whose settlement can be observed.
function localWaitAsync (ta, index, value, timeout) {
  const r = waitAsync(ta, index, value, timeout)
  assert.strictEqual(r.async, true)
  const w = { settled: false }
  w.done = r.value.then((result) => {
    w.settled = true
    return result
  })
  return w
}

async function assertStillWaiting (calls, locals = []) {
  await sleep(QUIET_MS)
  for (const c of calls) assert.strictEqual(c.hasEnded(), false, 'a waiter ended early')
  for (const w of locals) assert.strictEqual(w.settled, false, 'a local waiter ended early')
}

describe('atomics across threads', function () {
  this.timeout(60000)
  after(() => Promise.all(idle.splice(0).map((w) => w.terminate())))

  afterEach(async () => {
    const all = [...peers]
    peers.clear()
    await Promise.all(all.map((p) => p.close()))
    for (const sab of buffers) {
      const i32 = new Int32Array(sab)
      for (let k = 0; k < i32.length; k++) notify(i32, k)
    }
    buffers.clear()
  })

  describe('waking blocked threads', () => {
    for (const type of ['Int32Array', 'BigInt64Array']) {
      const big = type === 'BigInt64Array'
      const v = big ? 0n : 0

      it(`${type}: a worker blocked in wait is woken from the main thread`, async () => {
        const sab = newSab()
        const ta = big ? views(sab).i64 : views(sab).i32
        const [a] = await startPeers(sab, 1)
        const call = await blockIn(a, { view: { type }, index: 1, value: v }, ta, 1)
        await assertStillWaiting([call])
        assert.strictEqual(notify(ta, 1), 1)
        const done = await call.done()
        assert.strictEqual(done.result, 'ok')
        assert.strictEqual(done.threadId, a.threadId)
        assert.strictEqual(waiterCount(ta, 1), 0)
      })

      it(`${type}: a worker blocked in wait is woken from another worker`, async () => {
        const sab = newSab()
        const ta = big ? views(sab).i64 : views(sab).i32
        const [a, b] = await startPeers(sab, 2)
        const call = await blockIn(a, { view: { type }, index: 2, value: v }, ta, 2)
        const n = await b.send({ op: 'notify', view: { type }, index: 2 }).done()
        assert.strictEqual(n.result, 1)
        assert.strictEqual((await call.done()).result, 'ok')
      })
    }

    it('the main thread blocked in wait is woken by a worker', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [b] = await startPeers(sab, 1)
      const call = b.send({ op: 'spinNotify', index: 3, waiters: 1, count: 1 })
      // Blocks this thread, event loop included, until the worker notifies.
      const start = nowMs()
      assert.strictEqual(wait(i32, 3, 0, PROMPT_MS), 'ok')
      assert.ok(nowMs() - start < PROMPT_MS)
      assert.strictEqual((await call.done()).result, 1)
    })

    it('a worker is woken while the notifying worker never yields to its event loop', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a, b] = await startPeers(sab, 2)
      const waitCall = a.send({ op: 'wait', index: 4, value: 0, flagIndex: CONTROL })
      const notifyCall = b.send({
        op: 'spinNotify', index: 4, waiters: 1, count: 1, flagIndex: CONTROL
      })
      const n = await notifyCall.done()
      assert.deepStrictEqual([n.ready, n.result, n.flagged], [true, 1, true])
      assert.strictEqual((await waitCall.done()).result, 'ok')
      assert.strictEqual(waiterCount(i32, 4), 0)
    })

    it('a worker is woken while the main thread never yields to its event loop', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a] = await startPeers(sab, 1)
      const call = await blockIn(a, { index: 5, value: 0, flagIndex: CONTROL }, i32, 5)
      assert.strictEqual(notify(i32, 5, 1), 1)
      assert.ok(spinUntil(() => Atomics.load(i32, CONTROL) === 1),
        'the worker did not wake while this thread spun')
      assert.strictEqual((await call.done()).result, 'ok')
    })

    it('a worker whose own event loop has timers and messages pending is woken', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a] = await startPeers(sab, 1)
      const call = await blockIn(a, { index: 6, value: 0, flagIndex: CONTROL, busyLoop: true },
        i32, 6)
      // Messages pile up in the blocked worker's queue.
      for (let k = 0; k < 50; k++) a.worker.postMessage({ op: 'notify', index: 15, count: 0, id: -1 })
      await sleep(20)
      assert.strictEqual(notify(i32, 6), 1)
      assert.ok(spinUntil(() => Atomics.load(i32, CONTROL) === 1),
        'the busy worker did not wake')
      assert.strictEqual((await call.done()).result, 'ok')
    })

    it('waitAsync in a worker resolves on that worker, while the main thread is blocked', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a] = await startPeers(sab, 1)
      const call = await waitAsyncIn(a, { index: 7, value: 0, flagIndex: CONTROL + 1 }, i32, 7)
      assert.strictEqual(notify(i32, 7), 1)
      // The worker's promise callback raises the flag; this thread sleeps
      // until then without running its event loop.
      const r = wait(i32, CONTROL + 1, 0, PROMPT_MS)
      assert.ok(r === 'ok' || r === 'not-equal', r)
      assert.strictEqual(Atomics.load(i32, CONTROL + 1), 1)
      const done = await call.done()
      assert.strictEqual(done.result, 'ok')
      assert.strictEqual(done.threadId, a.threadId)
    })

    it('a waitAsync of a worker blocked in wait counts as woken at once and settles when it unblocks', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a] = await startPeers(sab, 1)
      const call = a.send({ op: 'asyncThenBlock', asyncIndex: 9, index: 10, value: 0 })
      assert.strictEqual((await call.started()).async, true)
      await until(() => waiterCount(i32, 10) === 1, 'worker A blocks', PROMPT_MS)
      assert.strictEqual(waiterCount(i32, 9), 1)
      assert.strictEqual(notify(i32, 9), 1)
      assert.strictEqual(waiterCount(i32, 9), 0)
      assert.strictEqual(notify(i32, 9), 0, 'a woken async waiter was counted twice')
      await assertStillWaiting([call])
      assert.strictEqual(notify(i32, 10), 1)
      assert.deepStrictEqual((await call.done()).result, ['sync ok', 'async ok'])
    })

    it('the addon loads in every worker and each resolves its own promises', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const ps = await startPeers(sab, 4)
      const calls = []
      for (const p of ps) calls.push(await waitAsyncIn(p, { index: 8, value: 0 }, i32, 8))
      assert.strictEqual(notify(i32, 8), 4)
      const done = await Promise.all(calls.map((c) => c.done()))
      assert.deepStrictEqual(done.map((d) => d.result), ['ok', 'ok', 'ok', 'ok'])
      assert.deepStrictEqual(done.map((d) => d.threadId), ps.map((p) => p.threadId))
    })
  })

  describe('FIFO order of sync and async waiters', () => {
    for (const notifier of ['the main thread', 'a worker']) {
      it(`wakes in the order the waits began, whatever their kind, notified by ${notifier}`, async () => {
        const sab = newSab()
        const { i32 } = views(sab)
        const [a, b, c, d, n] = await startPeers(sab, 5)
        const waiters = []
        const add = (label, done) => waiters.push({ label, done })
        const cmd = { index: 0, value: 0 }

        // Each wait begins only once the previous one is enqueued.
        add('A sync', (await blockIn(a, cmd, i32, 0)).done)
        const m1 = localWaitAsync(i32, 0, 0)
        add('main async 1', () => m1.done)
        add('B async 1', (await waitAsyncIn(b, cmd, i32, 0)).done)
        add('C sync', (await blockIn(c, cmd, i32, 0)).done)
        const m2 = localWaitAsync(i32, 0, 0)
        add('main async 2', () => m2.done)
        add('B async 2', (await waitAsyncIn(b, cmd, i32, 0)).done)
        add('D sync', (await blockIn(d, cmd, i32, 0)).done)
        assert.strictEqual(waiterCount(i32, 0), 7)

        const pending = waiters.map((w) => ({
          label: w.label,
          outcome: Promise.resolve(w.done()).then((r) => ({ label: w.label, r }))
        }))
        const order = []
        for (let k = 0; k < waiters.length; k++) {
          const woken = notifier === 'the main thread'
            ? notify(i32, 0, 1)
            : (await n.send({ op: 'notify', index: 0, count: 1 }).done()).result
          assert.strictEqual(woken, 1)
          const first = await Promise.race(pending.map((p) => p.outcome))
          const result = first.r.result || first.r
          assert.strictEqual(result, 'ok')
          order.push(first.label)
          pending.splice(pending.findIndex((p) => p.label === first.label), 1)
          assert.strictEqual(waiterCount(i32, 0), waiters.length - k - 1)
        }
        assert.deepStrictEqual(order, waiters.map((w) => w.label))
      })
    }
  })

  describe('wake counts', () => {
    it('count 0, 1, 2 and Infinity wake that many sync and async waiters, oldest first', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const ps = await startPeers(sab, 4)
      const calls = []
      calls.push(await blockIn(ps[0], { index: 1, value: 0 }, i32, 1))
      calls.push(await waitAsyncIn(ps[1], { index: 1, value: 0 }, i32, 1))
      calls.push(await blockIn(ps[2], { index: 1, value: 0 }, i32, 1))
      const local = localWaitAsync(i32, 1, 0)
      calls.push({ hasEnded: () => local.settled, done: () => local.done.then((r) => ({ result: r })) })
      calls.push(await blockIn(ps[3], { index: 1, value: 0 }, i32, 1))
      assert.strictEqual(waiterCount(i32, 1), 5)

      const ended = () => calls.map((c) => c.hasEnded())
      assert.strictEqual(notify(i32, 1, 0), 0)
      await sleep(QUIET_MS)
      assert.deepStrictEqual(ended(), [false, false, false, false, false])
      assert.strictEqual(waiterCount(i32, 1), 5)

      assert.strictEqual(notify(i32, 1, 1), 1)
      assert.strictEqual((await calls[0].done()).result, 'ok')
      await sleep(QUIET_MS)
      assert.deepStrictEqual(ended(), [true, false, false, false, false])

      assert.strictEqual(notify(i32, 1, 2), 2)
      assert.strictEqual((await calls[1].done()).result, 'ok')
      assert.strictEqual((await calls[2].done()).result, 'ok')
      await sleep(QUIET_MS)
      assert.deepStrictEqual(ended(), [true, true, true, false, false])

      assert.strictEqual(notify(i32, 1, Infinity), 2)
      assert.strictEqual((await calls[3].done()).result, 'ok')
      assert.strictEqual((await calls[4].done()).result, 'ok')
      assert.strictEqual(notify(i32, 1, Infinity), 0)
      assert.strictEqual(waiterCount(i32, 1), 0)
    })

    it('count undefined wakes every waiter; a count above the waiters wakes them all', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const ps = await startPeers(sab, 3)
      let calls = []
      for (const p of ps) calls.push(await blockIn(p, { index: 2, value: 0 }, i32, 2))
      assert.strictEqual(notify(i32, 2), 3)
      for (const c of calls) assert.strictEqual((await c.done()).result, 'ok')
      calls = []
      for (const p of ps) calls.push(await blockIn(p, { index: 2, value: 0 }, i32, 2))
      assert.strictEqual(notify(i32, 2, 10), 3)
      for (const c of calls) assert.strictEqual((await c.done()).result, 'ok')
    })
  })

  describe('waiters are keyed by address', () => {
    it('views of either type and any offset that address one element share its waiters', async () => {
      const sab = newSab()
      const { i32, i64 } = views(sab)
      const [a, b, c] = await startPeers(sab, 3)
      // Address byte 12: worker A through an Int32Array at byte offset 8.
      const atTwelve = await blockIn(a, { view: { byteOffset: 8 }, index: 1, value: 0 }, i32, 3)
      // Address byte 8, three waiters: B (Int32Array index 2), C (BigInt64Array
      // index 1) and this thread (BigInt64Array at byte offset 8, index 0).
      const first = await blockIn(b, { index: 2, value: 0 }, i32, 2)
      const second = await blockIn(c, { view: { type: 'BigInt64Array' }, index: 1, value: 0n }, i32, 2)
      const third = localWaitAsync(new BigInt64Array(sab, 8), 0, 0n)
      assert.strictEqual(waiterCount(i32, 2), 3)
      assert.strictEqual(waiterCount(i64, 1), 3)
      assert.strictEqual(waiterCount(new Int32Array(sab, 4), 1), 3)
      assert.strictEqual(waiterCount(i32, 3), 1)
      assert.strictEqual(waiterCount(new Int32Array(sab, 12), 0), 1)

      // Neighbouring elements have no waiters. The upper half of the
      // 64-bit element (byte 12) is another address.
      for (const k of [0, 1, 4, 5]) assert.strictEqual(notify(i32, k), 0, `element ${k}`)
      assert.strictEqual(notify(i64, 0), 0)
      assert.strictEqual(notify(i64, 2), 0)
      await assertStillWaiting([atTwelve, first, second], [third])

      assert.strictEqual(notify(new Int32Array(sab, 12), 0), 1)
      assert.strictEqual((await atTwelve.done()).result, 'ok')
      assert.strictEqual(notify(i64, 1, 1), 1)
      assert.strictEqual((await first.done()).result, 'ok')
      await assertStillWaiting([second], [third])
      assert.strictEqual(notify(new Int32Array(sab, 4), 1, Infinity), 2)
      assert.strictEqual((await second.done()).result, 'ok')
      assert.strictEqual(await third.done, 'ok')
    })

    it('a buffer reachable only from pending async waiters stays theirs until they settle', async () => {
      // Garbage collection on demand, for this test only.
      require('v8').setFlagsFromString('--expose-gc')
      const gc = require('vm').runInNewContext('gc')
      let sab = newSab()
      const [b] = await startPeers(sab, 1)
      const waiters = []
      for (let k = 0; k < 16; k++) {
        // A fresh view each time: nothing but the waiter refers to it.
        waiters.push(localWaitAsync(new Int32Array(sab, 4 * k), 0, 0))
      }
      // Buffers that only their waiters refer to. Were one freed, a new
      // buffer could get its address, and a notify through the new one
      // would wake the old waiter.
      const timed = []
      for (let k = 0; k < 16; k++) {
        timed.push(waitAsync(new Int32Array(new SharedArrayBuffer(64)), k, 0, 300 + k).value)
      }
      buffers.delete(sab)
      sab = null
      let strays = 0
      for (let k = 0; k < 4; k++) {
        gc()
        for (let j = 0; j < 64; j++) {
          const fresh = new Int32Array(new SharedArrayBuffer(64))
          for (let i = 0; i < fresh.length; i++) strays += notify(fresh, i)
        }
        await sleep(5)
      }
      assert.strictEqual(strays, 0, 'a notify through a new buffer woke a waiter of a collected one')
      assert.deepStrictEqual(await Promise.all(timed), timed.map(() => 'timed-out'))
      assert.ok(waiters.every((w) => !w.settled))
      // The worker still holds the buffer and wakes every element of it.
      let woken = 0
      for (let k = 0; k < 16; k++) {
        woken += (await b.send({ op: 'notify', index: k }).done()).result
      }
      assert.strictEqual(woken, 16)
      assert.deepStrictEqual(await Promise.all(waiters.map((w) => w.done)), waiters.map(() => 'ok'))
    })

    it('separate buffers never share waiters', async () => {
      const sab1 = newSab()
      const sab2 = newSab()
      const [a] = await startPeers(sab1, 1)
      const call = await blockIn(a, { index: 0, value: 0 }, views(sab1).i32, 0)
      assert.strictEqual(notify(views(sab2).i32, 0), 0)
      await assertStillWaiting([call])
      assert.strictEqual(notify(views(sab1).i32, 0), 1)
      assert.strictEqual((await call.done()).result, 'ok')
    })

    it('the built-in Atomics and threadlock keep separate waiter lists', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [a, b] = await startPeers(sab, 2)
      const mine = await blockIn(a, { index: 3, value: 0 }, i32, 3)
      const builtin = b.send({ op: 'wait', impl: 'Atomics', index: 3, value: 0 })
      await builtin.started()
      // The built-in waiter is invisible to waiterCount; give it time to block.
      await sleep(QUIET_MS)
      assert.strictEqual(notify(i32, 3), 1)
      assert.strictEqual((await mine.done()).result, 'ok')
      await assertStillWaiting([builtin])
      assert.strictEqual(Atomics.notify(i32, 3), 1)
      assert.strictEqual((await builtin.done()).result, 'ok')
    })
  })

  describe('timeouts', () => {
    for (const kind of ['wait', 'waitAsync']) {
      const start = kind === 'wait' ? blockIn : waitAsyncIn

      it(`${kind} in a worker: a finite timeout ends it no earlier than asked`, async () => {
        const sab = newSab()
        const { i32 } = views(sab)
        const [a] = await startPeers(sab, 1)
        for (const [type, value, timeout] of [['Int32Array', 0, 1], ['Int32Array', 0, 30.5],
          ['Int32Array', 0, 100], ['BigInt64Array', 0n, 1], ['BigInt64Array', 0n, 45]]) {
          // Not `start`: a short wait may end before its enqueue is seen.
          const done = await a.send({ op: kind, view: { type }, index: 0, value, timeout }).done()
          assert.strictEqual(done.result, 'timed-out')
          assert.ok(done.elapsed >= timeout, `${timeout} ms timed out after ${done.elapsed} ms`)
          assert.ok(done.elapsed < timeout + PROMPT_MS, `${timeout} ms took ${done.elapsed} ms`)
          assert.strictEqual(waiterCount(i32, 0), 0, 'a timed-out waiter stayed enqueued')
        }
      })

      it(`${kind} in a worker: timeout 0 or negative times out at once, without enqueuing`, async () => {
        const sab = newSab()
        const { i32 } = views(sab)
        const [a] = await startPeers(sab, 1)
        for (const timeout of [0, -0, -1, -Infinity, false, null]) {
          const call = a.send({ op: kind, index: 0, value: 0, timeout })
          if (kind === 'wait') {
            const done = await call.done()
            assert.strictEqual(done.result, 'timed-out')
            assert.ok(done.elapsed < PROMPT_MS)
          } else {
            const started = await call.started()
            assert.deepStrictEqual([started.async, started.value], [false, 'timed-out'])
          }
          assert.strictEqual(waiterCount(i32, 0), 0)
        }
        // A value that differs still reports not-equal first.
        if (kind === 'wait') {
          assert.strictEqual((await a.send({ op: kind, index: 0, value: 1, timeout: 0 }).done()).result,
            'not-equal')
        }
      })

      for (const [label, timeout] of [['NaN', NaN], ['undefined', undefined], ['Infinity', Infinity]]) {
        it(`${kind} in a worker: timeout ${label} waits until notified`, async () => {
          const sab = newSab()
          const { i32 } = views(sab)
          const [a] = await startPeers(sab, 1)
          const call = await start(a, { index: 0, value: 0, timeout }, i32, 0)
          await sleep(150)
          assert.strictEqual(call.hasEnded(), false)
          assert.strictEqual(waiterCount(i32, 0), 1)
          assert.strictEqual(notify(i32, 0), 1)
          assert.strictEqual((await call.done()).result, 'ok')
        })
      }

      it(`${kind} in a worker: woken before its timeout reports ok`, async () => {
        const sab = newSab()
        const { i32 } = views(sab)
        const [a] = await startPeers(sab, 1)
        const call = await start(a, { index: 0, value: 0, timeout: 60000 }, i32, 0)
        assert.strictEqual(notify(i32, 0), 1)
        const done = await call.done()
        assert.strictEqual(done.result, 'ok')
        assert.ok(done.elapsed < 60000)
      })

      for (const type of ['Int32Array', 'BigInt64Array']) {
        it(`${kind} in a worker (${type}): stores, built-in notifies and other elements' notifies do not end it`, async () => {
          const sab = newSab()
          const ta = type === 'Int32Array' ? views(sab).i32 : views(sab).i64
          const one = type === 'Int32Array' ? 1 : 1n
          const [a] = await startPeers(sab, 1)
          const timeout = 500
          const call = await start(a, { view: { type }, index: 0, value: one - one, timeout }, ta, 0)
          Atomics.store(ta, 0, one)
          assert.strictEqual(Atomics.notify(ta, 0), 0)
          assert.strictEqual(notify(ta, 1), 0)
          assert.strictEqual(notify(ta, 0, 0), 0)
          Atomics.add(ta, 0, one)
          Atomics.store(ta, 0, one - one)
          const done = await call.done()
          assert.strictEqual(done.result, 'timed-out')
          assert.ok(done.elapsed >= timeout, `timed out after ${done.elapsed} ms`)
        })
      }
    }

    it('waitAsync on the main thread: finite, 0, NaN and negative timeouts', async () => {
      const ta = new Int32Array(newSab())
      const start = nowMs()
      const finite = localWaitAsync(ta, 0, 0, 40)
      const forever = localWaitAsync(ta, 0, 0, NaN)
      assert.deepStrictEqual(waitAsync(ta, 0, 0, 0), { async: false, value: 'timed-out' })
      assert.deepStrictEqual(waitAsync(ta, 0, 0, -5), { async: false, value: 'timed-out' })
      assert.strictEqual(await finite.done, 'timed-out')
      assert.ok(nowMs() - start >= 40)
      await sleep(QUIET_MS)
      assert.strictEqual(forever.settled, false)
      assert.strictEqual(notify(ta, 0), 1)
      assert.strictEqual(await forever.done, 'ok')
    })

    it('wait on the main thread: a finite timeout is not cut short by a worker\'s unrelated notifies', async () => {
      const sab = newSab()
      const { i32 } = views(sab)
      const [b] = await startPeers(sab, 1)
      // The worker notifies a neighbouring element as soon as this thread waits.
      const call = b.send({ op: 'spinNotify', watchIndex: 0, index: 1, waiters: 1, count: 1 })
      await call.started()
      const start = nowMs()
      assert.strictEqual(wait(i32, 0, 0, 100), 'timed-out')
      assert.ok(nowMs() - start >= 100)
      assert.strictEqual((await call.done()).result, 0)
    })
  })

  describe('termination', () => {
    it('a worker terminated right after a wake, or while waiting, neither crashes the process nor leaves a waiter', () => {
      // In a child process: a native crash must fail this test, not end the run.
      const rounds = 10
      const r = spawnSync(process.execPath, [TERMINATE_RACE, String(rounds)],
        { encoding: 'utf8', timeout: 60000 })
      assert.strictEqual(r.status, 0,
        `the child ended with status ${r.status}, signal ${r.signal}:\n${r.stderr.slice(0, 1500)}`)
      assert.strictEqual(r.stdout.trim(), `done ${rounds}`)
    })
  })

  describe('bad arguments', () => {
    it('bad calls in any thread throw, wake nobody and enqueue nothing', async () => {
      const sab = newSab()
      const { i32, i64 } = views(sab)
      const [a, b] = await startPeers(sab, 2)
      const blocked = await blockIn(a, { index: 1, value: 0 }, i32, 1)
      const local = localWaitAsync(i32, 1, 0)
      const before = [0, 1, 2, 3].map((k) => waiterCount(i32, k))
      assert.deepStrictEqual(before, [0, 2, 0, 0])

      const poison = { valueOf () { throw new SyntaxError('coerced') } }
      const bad = [
        [() => notify(i32, Symbol('index')), TypeError],
        [() => notify(i32, 1, Symbol('count')), TypeError],
        [() => notify(i32, 1, poison), SyntaxError],
        [() => notify(i32, 1, 1n), TypeError],
        [() => notify(i32, 64), RangeError],
        [() => notify(i32, -1, 1), RangeError],
        [() => notify(new Uint32Array(sab), 1), TypeError],
        [() => notify(new Float64Array(sab), 0), TypeError],
        [() => notify(new BigUint64Array(sab), 0), TypeError],
        [() => notify([0, 0], 1), TypeError],
        [() => notify(sab, 1), TypeError],
        [() => wait(i32, 1, 0, Symbol('timeout')), TypeError],
        [() => wait(i32, 1, Symbol('value')), TypeError],
        [() => wait(i32, 1, 0, poison), SyntaxError],
        [() => wait(i32, 1, 0n), TypeError],
        [() => wait(i64, 0, 0), TypeError],
        [() => wait(i32, Infinity, poison, poison), RangeError],
        [() => wait(new Int32Array(4), 1, 0, 0), TypeError],
        [() => wait(new Uint8Array(sab), 1, 0, 0), TypeError],
        [() => waitAsync(i32, 1, 0, Symbol('timeout')), TypeError],
        [() => waitAsync(i32, 1, poison), SyntaxError],
        [() => waitAsync(i32, 1, 0, 0n), TypeError],
        [() => waitAsync(i32, '64', 0), RangeError],
        [() => waitAsync(new Int32Array(4), 1, 0), TypeError],
        [() => waitAsync(new Int16Array(sab), 1, 0), TypeError],
        [() => waitAsync(i32, 1, 0, Infinity, { ref: 'no' }), TypeError]
      ]
      for (const [call, Err] of bad) assert.throws(call, Err, String(call))

      const fromWorker = await b.send({ op: 'badCalls', index: 1 }).done()
      assert.deepStrictEqual(fromWorker.result, [
        'TypeError', 'TypeError', 'RangeError', 'TypeError', 'TypeError',
        'TypeError', 'TypeError', 'RangeError', 'TypeError', 'TypeError'
      ])

      assert.deepStrictEqual([0, 1, 2, 3].map((k) => waiterCount(i32, k)), before)
      await assertStillWaiting([blocked], [local])
      assert.strictEqual(notify(i32, 1), 2)
      assert.strictEqual((await blocked.done()).result, 'ok')
      assert.strictEqual(await local.done, 'ok')
    })
  })
})
