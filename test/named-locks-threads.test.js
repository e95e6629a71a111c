'use strict'

// Named locks across real worker threads: one table of names for the whole
// process, reached from every thread by name alone (no buffer or handle is
// passed). Exclusion, FIFO order and shared mode across threads, query()
// from another thread, steal and abort across threads, and dead owners: a
// worker that holds a lock or waits for one and is terminated, exits, throws
// or simply ends gives the lock up, so the next request is granted.
// Functions passed to w.run() execute inside the worker
// (test/fixtures/named-locks-runner.js) and can use only their (ctx, arg).

const assert = require('assert')
const { threadId } = require('worker_threads')
const { locks } = require('..')
const { binding } = require('../lib/native')
const { HOLDER, LockWorker, startRunners, cleanup, outcome, deferred } = require('./fixtures/named-locks-harness')
const { within, until, sleep } = require('./fixtures/threads')

let serial = 0
function unique (label) {
  return `locks-threads/${label}/${++serial}`
}

/**
 * Makes worker `w` request `name` and hold it until releaseIn(w, key).
 * Resolves once the request was made (not granted); the grant is the
 * worker's { granted: key } message.
 */
function holdIn (w, key, name, options = {}) {
  return w.run((ctx, { key, name, options }) => {
    const s = ctx.state[key] = {}
    s.done = ctx.locks.request(name, options, (lock) => {
      ctx.post({ granted: key, name: lock.name, mode: lock.mode })
      return new Promise((resolve) => { s.release = resolve })
    }).then((value) => ({ value }), (err) => ({
      error: { name: err.name, message: err.message, isDOMException: err instanceof DOMException }
    }))
  }, { key, name, options }, 5000)
}

function grantedIn (w, key, ms = 5000) {
  return w.message((m) => m.granted === key, `lock ${key} granted`, ms)
}

function releaseIn (w, key, value) {
  return w.run((ctx, { key, value }) => { ctx.state[key].release(value) }, { key, value }, 5000)
}

/** The outcome ({ value } or { error }) of the worker's request `key`. */
function outcomeIn (w, key) {
  return w.run((ctx, key) => ctx.state[key].done, key, 5000)
}

async function stateOf (name) {
  const { held, pending } = await locks.query()
  const pick = ({ mode, clientId }) => `${mode}@${clientId}`
  return {
    held: held.filter((l) => l.name === name).map(pick),
    pending: pending.filter((l) => l.name === name).map(pick)
  }
}

function available (name, mode = 'exclusive') {
  return locks.request(name, { mode, ifAvailable: true }, (lock) => lock !== null)
}

const me = String(threadId)

describe('named locks across threads', function () {
  afterEach(async function () {
    await cleanup()
    // Whatever a test's workers held or waited for is gone with them.
    await until(() => binding.namedCount() === 0, 'the name table is empty again', 3000)
    assert.deepStrictEqual(await locks.query(), { held: [], pending: [] })
  })

  it("a worker's lock is seen by the main thread's query() and holds its requests off", async () => {
    const name = unique('seen')
    const [w] = await startRunners(1)
    const them = String(w.threadId)
    assert.notStrictEqual(them, me)
    await holdIn(w, 'a', name)
    assert.deepStrictEqual(await grantedIn(w, 'a'), { granted: 'a', name, mode: 'exclusive' })
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${them}`], pending: [] })
    assert.strictEqual(await available(name), false)
    let granted = false
    const mine = locks.request(name, (lock) => { granted = true; return lock.name })
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${them}`], pending: [`exclusive@${me}`] })
    // The worker sees the same table.
    const seen = await w.run(async (ctx, name) => {
      const { held, pending } = await ctx.locks.query()
      return { held: held.filter((l) => l.name === name), pending: pending.filter((l) => l.name === name) }
    }, name, 5000)
    assert.deepStrictEqual(seen, {
      held: [{ name, mode: 'exclusive', clientId: them }],
      pending: [{ name, mode: 'exclusive', clientId: me }]
    })
    await sleep(30)
    assert.strictEqual(granted, false, 'granted while a worker held the lock')
    await releaseIn(w, 'a', 'worker done')
    assert.strictEqual(await within(mine, 5000, 'main granted after the worker released'), name)
    assert.deepStrictEqual(await outcomeIn(w, 'a'), { value: 'worker done' })
  })

  it('exclusion: the main thread and 3 workers add to a plain counter under one name, and the total is exact', async function () {
    this.timeout(20000)
    const name = unique('counter')
    const ROUNDS = 250
    // [0] the counter, read and written without atomics; [1] how many
    // callbacks are inside at once; [2] set if that was ever more than one;
    // [3] workers ready; [4] the start flag.
    const cells = new Int32Array(new SharedArrayBuffer(20))
    const body = async (locks, name, cells, rounds) => {
      for (let i = 0; i < rounds; i++) {
        await locks.request(name, async () => {
          if (Atomics.add(cells, 1, 1) !== 0) Atomics.store(cells, 2, 1)
          const value = cells[0]
          // Give other threads every chance to interleave.
          for (let spin = 0; spin < 1000; spin++) Atomics.load(cells, 1)
          await null
          cells[0] = value + 1
          Atomics.sub(cells, 1, 1)
        })
      }
    }
    const workers = await startRunners(3)
    const runs = workers.map((w) => w.run(async (ctx, { name, cells, rounds, src }) => {
      const body = (0, eval)(`(${src})`)
      // Start together with the other threads.
      Atomics.add(cells, 3, 1)
      Atomics.wait(cells, 4, 0, 5000)
      await body(ctx.locks, name, cells, rounds)
    }, { name, cells, rounds: ROUNDS, src: body.toString() }))
    await until(() => Atomics.load(cells, 3) === 3, 'workers ready')
    Atomics.store(cells, 4, 1)
    Atomics.notify(cells, 4)
    runs.push(body(locks, name, cells, ROUNDS))
    await within(Promise.all(runs), 15000, '4 threads x 250 locked increments')
    assert.strictEqual(cells[2], 0, 'two callbacks held the exclusive lock at once')
    assert.strictEqual(cells[0], 4 * ROUNDS)
  })

  it('FIFO across threads: requests are granted in the order they were queued, whatever the thread', async () => {
    const name = unique('fifo')
    const workers = await startRunners(3)
    const release = deferred()
    const first = locks.request(name, () => release.promise)
    const log = []
    // Queue: worker 0, main, worker 1, worker 2, main; each one only once
    // the previous one is listed as pending, so the order is known.
    const expected = []
    const mainRequests = []
    const plan = [workers[0], 'main', workers[1], workers[2], 'main']
    for (let i = 0; i < plan.length; i++) {
      const who = plan[i]
      if (who === 'main') {
        mainRequests.push(locks.request(name, async () => { log.push(`main${i}`); await sleep(2) }))
        expected.push(`main${i}`)
      } else {
        await holdIn(who, `q${i}`, name)
        expected.push(`w${who.threadId}`)
      }
      await until(async () => (await stateOf(name)).pending.length === i + 1, `request ${i} queued`)
    }
    const clients = plan.map((who) => `exclusive@${who === 'main' ? me : who.threadId}`)
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${me}`], pending: clients })
    release.resolve()
    await first
    // Let each worker's lock go as soon as it is granted, and log the grant.
    for (let i = 0; i < plan.length; i++) {
      const who = plan[i]
      if (who === 'main') {
        await until(() => log.includes(`main${i}`), `main request ${i} granted`)
      } else {
        await grantedIn(who, `q${i}`)
        log.push(`w${who.threadId}`)
        // Nothing behind it may have been granted meanwhile.
        assert.deepStrictEqual(log, expected.slice(0, log.length))
        await releaseIn(who, `q${i}`)
      }
    }
    await within(Promise.all(mainRequests), 5000, 'main requests done')
    assert.deepStrictEqual(log, expected)
  })

  it('shared locks are held by several threads at once; an exclusive request waits for all of them', async () => {
    const name = unique('shared')
    const [a, b] = await startRunners(2)
    await holdIn(a, 's', name, { mode: 'shared' })
    await grantedIn(a, 's')
    await holdIn(b, 's', name, { mode: 'shared' })
    await grantedIn(b, 's')
    assert.deepStrictEqual(await stateOf(name), {
      held: [`shared@${a.threadId}`, `shared@${b.threadId}`], pending: []
    })
    let granted = false
    const mine = locks.request(name, () => { granted = true })
    // With an exclusive request queued, a further shared one is not
    // available, even though only shared locks are held.
    assert.strictEqual(await available(name, 'shared'), false)
    await releaseIn(a, 's')
    await sleep(30)
    assert.strictEqual(granted, false, 'granted while a worker still held a shared lock')
    assert.deepStrictEqual(await stateOf(name), { held: [`shared@${b.threadId}`], pending: [`exclusive@${me}`] })
    await releaseIn(b, 's')
    await within(mine, 5000, 'the exclusive request after both shared locks')
    assert.strictEqual(granted, true)
  })

  it("ifAvailable sees another thread's lock", async () => {
    const name = unique('if-available')
    const [w] = await startRunners(1)
    await holdIn(w, 'x', name)
    await grantedIn(w, 'x')
    assert.strictEqual(await locks.request(name, { ifAvailable: true }, (lock) => lock), null)
    await releaseIn(w, 'x')
    await outcomeIn(w, 'x')
    assert.strictEqual(await available(name), true)
    // And the other way round.
    const release = deferred()
    const mine = locks.request(name, () => release.promise)
    await until(async () => (await stateOf(name)).held.length === 1, 'main holds the lock')
    assert.strictEqual(await w.run((ctx, name) => ctx.locks.request(name, { ifAvailable: true }, (lock) => lock), name, 5000), null)
    release.resolve()
    await mine
  })

  it("steal across threads: the worker's request rejects with an AbortError DOMException and the stealer runs at once", async () => {
    const name = unique('steal')
    const [w] = await startRunners(1)
    await holdIn(w, 'victim', name)
    await grantedIn(w, 'victim')
    const inside = await within(locks.request(name, { steal: true }, () => stateOf(name)), 5000,
      'the stealer runs while the worker still runs its callback')
    assert.deepStrictEqual(inside, { held: [`exclusive@${me}`], pending: [] })
    const r = await outcomeIn(w, 'victim')
    assert.deepStrictEqual(r, {
      error: { name: 'AbortError', message: r.error && r.error.message, isDOMException: true }
    })
    // The worker's callback ending afterwards releases nothing of anyone's.
    const release = deferred()
    const held = locks.request(name, { steal: true }, () => release.promise)
    await until(async () => (await stateOf(name)).held.length === 1, 'main holds the lock again')
    await releaseIn(w, 'victim')
    await sleep(20)
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${me}`], pending: [] })
    release.resolve()
    await held
  })

  it("a worker's steal takes the main thread's lock", async () => {
    const name = unique('steal-from-main')
    const [w] = await startRunners(1)
    const release = deferred()
    const mine = outcome(locks.request(name, () => release.promise))
    await until(async () => (await stateOf(name)).held.length === 1, 'main holds the lock')
    await holdIn(w, 'thief', name, { steal: true })
    await grantedIn(w, 'thief')
    const r = await within(mine, 5000, "the main thread's stolen request")
    assert.ok(r.error instanceof DOMException && r.error.name === 'AbortError', String(r.error || r.value))
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${w.threadId}`], pending: [] })
    release.resolve()
    await releaseIn(w, 'thief')
    assert.deepStrictEqual(await outcomeIn(w, 'thief'), { value: undefined })
  })

  it("an abort while queued behind a worker's lock leaves the queue", async () => {
    const name = unique('abort')
    const [w] = await startRunners(1)
    await holdIn(w, 'h', name)
    await grantedIn(w, 'h')
    const c = new AbortController()
    let ran = false
    const aborted = outcome(locks.request(name, { signal: c.signal }, () => { ran = true }))
    const next = locks.request(name, () => 'next')
    assert.deepStrictEqual(await stateOf(name), {
      held: [`exclusive@${w.threadId}`], pending: [`exclusive@${me}`, `exclusive@${me}`]
    })
    const reason = new Error('stop waiting')
    c.abort(reason)
    assert.strictEqual((await aborted).error, reason)
    assert.deepStrictEqual(await stateOf(name), { held: [`exclusive@${w.threadId}`], pending: [`exclusive@${me}`] })
    await releaseIn(w, 'h')
    assert.strictEqual(await within(next, 5000, 'the request behind the aborted one'), 'next')
    assert.strictEqual(ran, false)
  })

  describe('dead owners', function () {
    // A worker holding `name` ends the way `end` says; a request of the main
    // thread queued behind it must then be granted promptly.
    async function deadOwner (end, stop) {
      const name = unique(`dead-${end}`)
      const w = new LockWorker(HOLDER, { name, end })
      const hello = await w.message((m) => m.granted || m.error, 'holder granted')
      assert.deepStrictEqual(hello, { granted: true, name, mode: 'exclusive' })
      let grantedAt = 0
      const mine = locks.request(name, (lock) => { grantedAt = Date.now(); return lock.name })
      const state = await stateOf(name)
      assert.deepStrictEqual(state.held, [`exclusive@${w.threadId}`])
      assert.deepStrictEqual(state.pending, [`exclusive@${me}`], 'the main request queued behind the worker')
      const stoppedAt = Date.now()
      if (stop) await stop(w)
      const code = await w.join()
      assert.strictEqual(await within(mine, 3000, `the lock of a worker that ended by ${end}`), name)
      const latency = grantedAt - stoppedAt
      return { code, latency, error: w.error }
    }

    it('a terminated worker gives its lock to the next request', async () => {
      const r = await deadOwner('hang', (w) => w.terminate())
      assert.strictEqual(r.code, 1)
      assert.ok(r.latency < 2000, `granted ${r.latency} ms after terminate()`)
    })

    it('a worker terminated while its thread is busy in a loop gives its lock up', async () => {
      const r = await deadOwner('spin', async (w) => {
        await sleep(40)
        await w.terminate()
      })
      assert.strictEqual(r.code, 1)
      assert.ok(r.latency < 2000, `granted ${r.latency} ms after terminate()`)
    })

    it('a worker that calls process.exit() gives its lock up', async () => {
      const r = await deadOwner('exit')
      assert.strictEqual(r.code, 7)
      assert.ok(r.latency < 2000, `granted ${r.latency} ms after the exit was due`)
    })

    it('a worker killed by an uncaught exception gives its lock up', async () => {
      const r = await deadOwner('throw')
      assert.strictEqual(r.code, 1)
      assert.ok(r.error && /holder failed on purpose/.test(r.error.message), String(r.error))
      assert.ok(r.latency < 2000, `granted ${r.latency} ms after the throw was due`)
    })

    it('a worker that ends on its own while holding a lock gives it up', async () => {
      const r = await deadOwner('natural')
      assert.strictEqual(r.code, 0)
      assert.ok(r.latency < 2000, `granted ${r.latency} ms after the thread ran out of work`)
    })

    it("a terminated worker's queued request leaves query().pending, and the request behind it is granted", async () => {
      const name = unique('dead-waiter')
      const [w, other] = await startRunners(2)
      const release = deferred()
      const first = locks.request(name, () => release.promise)
      await until(async () => (await stateOf(name)).held.length === 1, 'main holds the lock')
      await holdIn(w, 'waiting', name, { mode: 'shared' })
      await holdIn(other, 'behind', name)
      // The worker also holds a lock of another name, to be freed as well.
      const otherName = unique('dead-waiter-other')
      await holdIn(w, 'second', otherName)
      await grantedIn(w, 'second')
      assert.deepStrictEqual(await stateOf(name), {
        held: [`exclusive@${me}`], pending: [`shared@${w.threadId}`, `exclusive@${other.threadId}`]
      })
      await w.terminate()
      assert.deepStrictEqual(await stateOf(name), {
        held: [`exclusive@${me}`], pending: [`exclusive@${other.threadId}`]
      })
      assert.deepStrictEqual(await stateOf(otherName), { held: [], pending: [] })
      release.resolve()
      await first
      await grantedIn(other, 'behind')
      await releaseIn(other, 'behind')
      assert.deepStrictEqual(await outcomeIn(other, 'behind'), { value: undefined })
    })

    it('a worker terminated just as its queued request is granted does not keep the lock', async function () {
      this.timeout(20000)
      const name = unique('dead-race')
      for (let round = 0; round < 8; round++) {
        const [w] = await startRunners(1)
        const release = deferred()
        const first = locks.request(name, () => release.promise)
        await until(async () => (await stateOf(name)).held.length === 1, 'main holds the lock')
        await holdIn(w, 'r', name)
        await until(async () => (await stateOf(name)).pending.length === 1, 'the worker is queued')
        // Grant to the worker and terminate it in the same turn.
        release.resolve()
        const stopping = w.terminate()
        await first
        await stopping
        const again = await within(locks.request(name, () => 'again'), 3000,
          `round ${round}: the lock after the worker that got it died`)
        assert.strictEqual(again, 'again')
      }
    })
  })

  it('nothing is left in the name table once every thread is done', async () => {
    const name = unique('leak')
    const workers = await startRunners(2)
    for (const [i, w] of workers.entries()) {
      await holdIn(w, 'h', name, { mode: 'shared' })
      await grantedIn(w, 'h')
      await holdIn(w, 'q', `${name}/${i}`)
      await grantedIn(w, 'q')
    }
    assert.ok(binding.namedCount() >= 3)
    await releaseIn(workers[0], 'h')
    await releaseIn(workers[0], 'q')
    await Promise.all(workers.map((w) => w.terminate()))
    assert.strictEqual(binding.namedCount(), 0)
    assert.deepStrictEqual(await locks.query(), { held: [], pending: [] })
  })
})
