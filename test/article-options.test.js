'use strict'

// The options of the promise lock in "JavaScriptでロックを実装する"
// (sections 6-8): `blocking` and `timeout` may be given together, and a
// non-blocking attempt ignores the timeout. Code written against the article
// runs unchanged on every primitive that has both options.

const assert = require('assert')
const { AsyncLock, Semaphore, RWLock } = require('..')

const OPTIONS = { blocking: false, timeout: 500 }

// Each entry: a name, a fresh primitive, a way to hold it from this thread,
// and the promise forms to try with the article's options.
const CASES = [
  {
    name: 'AsyncLock',
    make: () => new AsyncLock(),
    hold: (p) => { p.lock(); return () => p.unlock() },
    forms: {
      acquire: (p, o) => p.acquire(o).then((release) => release()),
      runExclusive: (p, o) => p.runExclusive(() => 'ran', o)
    }
  },
  {
    name: 'Semaphore',
    make: () => new Semaphore(1),
    hold: (p) => { p.acquireSync(1); return () => p.release(1) },
    forms: {
      acquire: (p, o) => p.acquire(1, o).then((release) => release()),
      runExclusive: (p, o) => p.runExclusive(() => 'ran', o)
    }
  },
  {
    name: 'RWLock',
    make: () => new RWLock(),
    hold: (p) => { p.acquireWriteSync(); return () => p.releaseWrite() },
    forms: {
      acquireRead: (p, o) => p.acquireRead(o).then((release) => release()),
      acquireWrite: (p, o) => p.acquireWrite(o).then((release) => release()),
      runRead: (p, o) => p.runRead(() => 'ran', o),
      runWrite: (p, o) => p.runWrite(() => 'ran', o)
    }
  }
]

describe('the article\'s options: { blocking: false, timeout } together', () => {
  for (const { name, make, hold, forms } of CASES) {
    for (const [form, call] of Object.entries(forms)) {
      it(`${name}.${form}: free, it is granted at once; held, it rejects EBUSY at once, not after the timeout`, async () => {
        const p = make()
        const result = await call(p, OPTIONS)
        if (form.startsWith('run')) assert.strictEqual(result, 'ran')
        const release = hold(p)
        const t0 = performance.now()
        await assert.rejects(call(p, OPTIONS), (err) => err.code === 'EBUSY')
        const took = performance.now() - t0
        assert.ok(took < 250, `the non-blocking attempt took ${took.toFixed(0)} ms: the timeout was applied`)
        release()
        // Nothing stayed queued: the primitive is free again.
        assert.strictEqual(await call(p, OPTIONS), form.startsWith('run') ? 'ran' : undefined)
      })
    }
  }

  it('the timeout still must be a valid timeout', async () => {
    const lock = new AsyncLock()
    await assert.rejects(lock.acquire({ blocking: false, timeout: -1 }), RangeError)
    await assert.rejects(lock.runExclusive(() => {}, { blocking: false, timeout: 'soon' }), TypeError)
    assert.strictEqual(lock.locked, false)
  })

  it('the article\'s demo: runExclusive with { blocking: true, timeout: 500 } times out while another holder keeps the lock', async () => {
    const lock = new AsyncLock()
    lock.lock()
    await assert.rejects(lock.runExclusive(() => {}, { blocking: true, timeout: 50 }), (err) => err.code === 'ETIMEDOUT')
    lock.unlock()
    assert.strictEqual(await lock.runExclusive(() => 7, { blocking: true, timeout: 500 }), 7)
  })
})
