'use strict'

// threadlock/host within one process: requestSync's handle, EDEADLK,
// close(), several managers and worker threads on one directory, tokens
// across a rebuilt table.

const assert = require('assert')
const fs = require('fs')
const path = require('path')
const { Worker } = require('worker_threads')
const { createLockManager, HeldLock, LockError } = require('../host')
const { scopeDir } = require('./fixtures/host-harness')
const { sleep, within } = require('./fixtures/threads')

const dispose = Symbol.dispose || Symbol.for('nodejs.dispose')

describe('threadlock/host in one process', function () {
  this.timeout(30000)
  let dir
  beforeEach(() => { dir = scopeDir() })

  it('requestSync returns a HeldLock; release() is idempotent and dispose releases', async () => {
    const m = createLockManager({ path: dir })
    const held = m.requestSync('h')
    assert.ok(held instanceof HeldLock)
    assert.strictEqual(held.name, 'h')
    assert.strictEqual(held.mode, 'exclusive')
    assert.strictEqual(typeof held.token, 'bigint')
    assert.strictEqual(held.ownerDied, false)
    assert.strictEqual(held.held, true)
    assert.strictEqual(m.requestSync('h', { ifAvailable: true }), null)
    assert.strictEqual(held.release(), true)
    assert.strictEqual(held.release(), false)
    const again = m.requestSync('h')
    assert.ok(again.token > held.token)
    again[dispose]()
    assert.strictEqual(again.held, false)
    assert.strictEqual(m.stats().nodes, 0)
    await m.close()
  })

  it('EDEADLK: a blocking request for a lock this manager holds (or waits for) could never be granted', async () => {
    const m = createLockManager({ path: dir })
    const held = m.requestSync('d')
    assert.throws(() => m.requestSync('d'), (err) => err instanceof LockError && err.code === 'EDEADLK' &&
      err.message === 'LockManager.requestSync: this thread holds lock "d" already, so a blocking wait would never return')
    held.release()
    const s1 = m.requestSync('d2', { mode: 'shared' })
    // A second shared lock is granted at once; an exclusive one never would be.
    const s2 = m.requestSync('d2', { mode: 'shared' })
    assert.throws(() => m.requestSync('d2'), (err) => err.code === 'EDEADLK')
    s1.release()
    s2.release()
    await m.request('d3', () => {
      assert.throws(() => m.requestSync('d3', { timeout: 10000 }), (err) => err.code === 'EDEADLK')
    })
    assert.strictEqual(m.stats().nodes, 0)
    await m.close()
  })

  it('two managers on one directory exclude each other like two processes', async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    const order = []
    const held = a.requestSync('two')
    const pb = b.request('two', (lock) => { order.push('b'); return lock.token })
    await sleep(50)
    order.push('a releases')
    held.release()
    const token = await within(pb, 5000, 'b granted')
    assert.deepStrictEqual(order, ['a releases', 'b'])
    assert.ok(token > held.token)
  })

  it('request() with a timeout rejects ETIMEDOUT and leaves the queue, as threadlock.locks does', async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    const held = a.requestSync('t')
    const t0 = Date.now()
    await assert.rejects(b.request('t', { timeout: 50 }, () => 'never'),
      (err) => err instanceof LockError && err.code === 'ETIMEDOUT' && /LockManager\.request/.test(err.message))
    assert.ok(Date.now() - t0 >= 45, 'rejected before its timeout')
    assert.deepStrictEqual((await b.query()).pending.filter((p) => p.name === 't'), [])
    held.release()
    assert.strictEqual(await within(b.request('t', { timeout: 5000 }, () => 'got it'), 5000, 'b granted'), 'got it')
    await a.close()
    await b.close()
  })

  it('request()\'s timeout never expires early, also after a busy event loop (performance.now())', async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    const held = a.requestSync('early')
    const early = []
    for (let round = 0; round < 20; round++) {
      const end = performance.now() + 5
      while (performance.now() < end); // the loop's cached clock falls behind
      const t0 = performance.now()
      const err = await b.request('early', { timeout: 1.5 }, () => 'never').then(() => null, (e) => e)
      const took = performance.now() - t0
      assert.ok(err instanceof LockError && err.code === 'ETIMEDOUT', `round ${round}: ${err}`)
      if (took < 1.5) early.push(took.toFixed(3))
    }
    assert.deepStrictEqual(early, [], 'ETIMEDOUT of a 1.5 ms timeout came after these ms')
    held.release()
    await a.close()
    await b.close()
  })

  it('close() rejects waiting requests, aborts held locks and frees everything in the table', async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    const held = a.requestSync('c')
    let signal
    const holding = b.request('c2', (lock) => { signal = lock.signal; return sleep(100) })
    const waiting = b.request('c', () => 'never')
    await sleep(20)
    await b.close()
    await assert.rejects(waiting, (err) => err.code === 'ECLOSED' && err.message === 'LockManager.close: the lock manager was closed')
    assert.strictEqual(signal.aborted, true)
    await assert.rejects(holding, (err) => err.code === 'ECLOSED')
    held.release()
    assert.strictEqual(a.stats().nodes, 0)
    assert.strictEqual(a.stats().slots, 1)
    await a.close()
  })

  it('a lock stolen between its grant and its callback: the request rejects and no node is left', async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    for (let i = 0; i < 20; i++) {
      let signal = null
      const p = a.request('sb', (lock) => { signal = lock.signal })
      // Granted at once; its callback waits for a task of its own, and the
      // steal comes first.
      const held = b.requestSync('sb', { steal: true })
      await assert.rejects(p, (err) => err.name === 'AbortError')
      // The callback either never ran or saw its signal abort.
      await sleep(5)
      assert.ok(signal === null || signal.aborted)
      assert.strictEqual(a.stats().nodes, 1, `round ${i}: only b's lock has a node`)
      held.release()
    }
    await a.close()
    await b.close()
  })

  it("a lock's signal first read after the lock was stolen, or its manager closed, is already aborted with that reason, and the same object at every read", async () => {
    const a = createLockManager({ path: dir })
    const b = createLockManager({ path: dir })
    let lock = null
    let done
    const running = new Promise((resolve) => { done = resolve })
    const p = a.request('ls', (l) => { lock = l; return running })
    await within(new Promise((resolve) => { const t = setInterval(() => { if (lock !== null) { clearInterval(t); resolve() } }, 1) }), 5000, 'grant')
    const thief = b.requestSync('ls', { steal: true })
    await assert.rejects(p, (err) => err.name === 'AbortError')
    const signal = lock.signal // made now, after the steal
    assert.strictEqual(signal.aborted, true)
    assert.strictEqual(signal.reason.name, 'AbortError')
    assert.strictEqual(lock.signal, signal)
    done()
    thief.release()
    const held = a.requestSync('hs')
    const other = a.requestSync('hs2')
    const early = other.signal // made before the close
    await a.close()
    assert.strictEqual(early.aborted, true)
    assert.strictEqual(held.signal.aborted, true)
    assert.strictEqual(held.signal.reason.code, 'ECLOSED')
    assert.strictEqual(held.signal, held.signal)
    assert.strictEqual(early.reason, held.signal.reason)
    await b.close()
  })

  it('fencing tokens around 2^53 come back exact and increasing (one number below it, an array from it on)', async () => {
    const m = createLockManager({ path: dir })
    m.requestSync('t53').release()
    // The header's fence (the last token handed out) is at byte 40.
    const fd = fs.openSync(path.join(dir, 'threadlock-host.table'), 'r+')
    const b = Buffer.alloc(8)
    b.writeBigUInt64LE(2n ** 53n - 3n)
    fs.writeSync(fd, b, 0, 8, 40)
    fs.closeSync(fd)
    const got = []
    for (let i = 0; i < 4; i++) got.push(await m.request('t53', (lock) => lock.token))
    assert.deepStrictEqual(got, [2n ** 53n - 2n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n])
    await m.close()
  })

  it('worker threads that name the same directory exclude each other', async () => {
    const file = path.join(dir, 'count.txt')
    fs.writeFileSync(file, '0')
    const code = `
      const { workerData } = require('worker_threads')
      const fs = require('fs')
      const { createLockManager } = require(${JSON.stringify(path.join(__dirname, '..', 'host'))})
      const m = createLockManager({ path: workerData.dir })
      for (let i = 0; i < 200; i++) {
        const held = m.requestSync('w')
        fs.writeFileSync(workerData.file, String(Number(fs.readFileSync(workerData.file, 'utf8')) + 1))
        held.release()
      }
      m.close()
    `
    const workers = [1, 2, 3].map(() => new Worker(code, { eval: true, workerData: { dir, file } }))
    await within(Promise.all(workers.map((w) => new Promise((resolve, reject) => {
      w.once('error', reject)
      w.once('exit', resolve)
    }))), 20000, 'workers done')
    assert.strictEqual(fs.readFileSync(file, 'utf8'), '600')
  })

  it('worker.terminate() ends a worker blocked in requestSync; its request leaves the queue', async () => {
    const m = createLockManager({ path: dir })
    const held = m.requestSync('term')
    const code = `
      const { workerData, parentPort } = require('worker_threads')
      const { createLockManager } = require(${JSON.stringify(path.join(__dirname, '..', 'host'))})
      const m = createLockManager({ path: workerData.dir })
      parentPort.postMessage('waiting')
      m.requestSync('term')
      parentPort.postMessage('granted')
    `
    const w = new Worker(code, { eval: true, workerData: { dir } })
    const messages = []
    w.on('message', (msg) => messages.push(msg))
    while ((await m.query()).pending.length === 0) await sleep(5)
    await within(w.terminate(), 5000, 'terminate() of a worker blocked in requestSync')
    assert.deepStrictEqual(messages, ['waiting'])
    assert.deepStrictEqual((await m.query()).pending, [])
    held.release()
    assert.strictEqual(m.stats().nodes, 0)
    await m.close()
  })

  it('tokens keep increasing when the table is rebuilt by a first attacher', async () => {
    const a = createLockManager({ path: dir })
    const t1 = a.requestSync('t').token
    await a.close()
    const b = createLockManager({ path: dir })
    const held = b.requestSync('t')
    assert.ok(held.token > t1)
    held.release()
    await b.close()
  })
})
