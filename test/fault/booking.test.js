'use strict'

// A waitAsync whose booking fails after a notify already took its waiter
// (the glue's tl__track): the failure must stay with that request. Before
// the fix, the node, never booked, was unbooked anyway when it came out of
// the ready queue: that emptied the thread's list of pending waiters (so
// teardown no longer cancelled them) and gave back a loop reference it
// never took (so another pending waitAsync no longer kept its thread
// alive). The failure is forced with the allocation-failure switch, and the
// notify lands exactly at the failing allocation.

const assert = require('assert')
const { Worker } = require('worker_threads')
const { root, binding } = require('./root')

function onExit (worker) {
  return new Promise((resolve) => worker.once('exit', resolve))
}

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

describe('fault injection: a booking that fails after a notify', function () {
  const workers = []
  afterEach(async function () {
    await Promise.all(workers.splice(0).map((w) => w.terminate()))
  })

  it('throws ENOMEM and leaves the other pending waits of the thread booked and ref\'d', async function () {
    // Two buffers, so that the second wait has to allocate its keep-alive.
    const a = new Int32Array(new SharedArrayBuffer(4))
    const b = new Int32Array(new SharedArrayBuffer(4))
    const worker = new Worker(`
      const { parentPort, workerData: { root, a, b } } = require('worker_threads')
      const tl = require(root)
      const { binding } = require(root + '/lib/native')
      const pending = tl.waitAsync(a, 0, 0)
      pending.value.then((v) => parentPort.postMessage({ woken: v }))
      // The node is the first allocation of the next waitAsync, its
      // buffer's keep-alive the second: that one fails, and b[0] is
      // notified at that very moment, after the waiter was enqueued.
      binding.faultArm(2, b, 0)
      let code = null
      try {
        tl.waitAsync(b, 0, 0)
      } catch (err) {
        code = err.code
      }
      const fired = binding.faultFired()
      binding.faultArm(0)
      // Let the ready queue deliver the notified node before reporting.
      setTimeout(() => parentPort.postMessage({ code, fired }), 50)
    `, { eval: true, workerData: { root, a, b } })
    workers.push(worker)
    const exited = onExit(worker)
    let exitedEarly = false
    exited.then(() => { exitedEarly = true })
    const messages = []
    worker.on('message', (m) => messages.push(m))
    const first = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    assert.deepStrictEqual(first, { code: 'ENOMEM', fired: true })

    // The first wait still keeps its thread alive.
    await sleep(300)
    assert.strictEqual(exitedEarly, false, 'the worker ended while its waitAsync was pending')
    assert.strictEqual(binding.waiterCount(a, 0), 1)
    assert.strictEqual(binding.waiterCount(b, 0), 0)

    // And teardown still finds and cancels it.
    await worker.terminate()
    await exited
    assert.strictEqual(binding.waiterCount(a, 0), 0, 'teardown left a waiter of a dead thread in the table')
    assert.strictEqual(binding.totalWaiters(), 0)
    assert.deepStrictEqual(messages, [first], 'the pending wait must not have resolved')
  })

  it('a notify that wakes the pending wait after the failure still resolves it', async function () {
    const a = new Int32Array(new SharedArrayBuffer(4))
    const b = new Int32Array(new SharedArrayBuffer(4))
    const worker = new Worker(`
      const { parentPort, workerData: { root, a, b } } = require('worker_threads')
      const tl = require(root)
      const { binding } = require(root + '/lib/native')
      const pending = tl.waitAsync(a, 0, 0)
      pending.value.then((v) => parentPort.postMessage({ woken: v }))
      binding.faultArm(2, b, 0)
      try { tl.waitAsync(b, 0, 0) } catch {}
      binding.faultArm(0)
      setTimeout(() => parentPort.postMessage('ready'), 50)
    `, { eval: true, workerData: { root, a, b } })
    workers.push(worker)
    const exited = onExit(worker)
    const messages = []
    const ready = new Promise((resolve, reject) => {
      worker.on('message', (m) => { messages.push(m); if (m === 'ready') resolve() })
      worker.once('error', reject)
    })
    await ready
    assert.strictEqual(binding.notify(a, 0, 1), 1)
    // With nothing else pending, the worker ends once the wait resolved.
    assert.strictEqual(await exited, 0)
    assert.deepStrictEqual(messages, ['ready', { woken: 'ok' }])
    assert.strictEqual(binding.totalWaiters(), 0)
  })
})
