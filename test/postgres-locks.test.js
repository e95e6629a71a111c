'use strict'

// threadlock/postgres in one process, against a real server: the Web Locks
// behaviour of threadlock.locks (the Lock object, results and errors, modes,
// order, ifAvailable, signal, query) with what a server adds: fencing tokens,
// a cancelled request leaving the server's queue, names of any content, and
// the bound on connections. Two managers in one process use separate
// sessions, so they contend on the server like two processes.

const assert = require('assert')
const pg = require('pg')
const { createLockManager, Lock, LockError } = require('../postgres')
const { config, needServer, unique, serverLocks, leftovers } = require('./fixtures/pg-env')
const { within, until, sleep } = require('./fixtures/threads')
const { outcome, deferred } = require('./fixtures/named-locks-harness')

describe('threadlock/postgres in one process', function () {
  this.timeout(30000)
  let pool
  let a // the manager under test
  let b // another client of the same server

  before(needServer())
  before(() => {
    pool = new pg.Pool({ ...config(), max: 2 })
    a = createLockManager(config())
    b = createLockManager(config())
  })
  after(async () => {
    if (a) await a.close()
    if (b) await b.close()
    if (pool) await pool.end()
  })
  afterEach(async function () {
    if (pool === undefined || this.currentTest.state === undefined) return
    // A failed test may leave locks held: release them first, so that the
    // next tests and close() do not wait for them.
    const open = holds.splice(0)
    for (const h of open) h.release()
    await within(Promise.all(open.map((h) => h.settled)), 15000, 'every lock of the test released')
    // Every test releases what it took: nothing of this run may stay on
    // the server.
    await until(async () => (await leftovers(pool)).length === 0,
      'no advisory lock of this run is left on the server', 5000)
  })

  const holds = []

  /** Requests `name` on `manager` and keeps it until release(). */
  function hold (manager, name, options = {}) {
    const release = deferred()
    const granted = deferred()
    let isGranted = false
    const request = manager.request(name, options, (lock) => {
      isGranted = true
      granted.resolve(lock)
      return release.promise
    })
    const h = {
      get granted () { return within(granted.promise, 10000, `lock ${name} granted`) },
      isGranted: () => isGranted,
      release: release.resolve,
      fail: release.reject,
      settled: outcome(request)
    }
    holds.push(h)
    return h
  }

  function available (manager, name, mode = 'exclusive') {
    return manager.request(name, { mode, ifAvailable: true }, (lock) => lock !== null)
  }

  /** Resolves once the server shows `count` waiters for `name`. */
  async function serverWaiters (name, count, ms = 10000) {
    let rows = []
    await until(async () => {
      rows = await serverLocks(pool, name)
      return rows.filter((r) => !r.granted).length === count
    }, `${count} waiters of ${name} on the server`, ms)
    return rows
  }

  describe('granting and releasing', function () {
    it('the callback gets a Lock with name, mode, a bigint token and a live signal', async () => {
      const name = unique('lock')
      const lock = await a.request(name, { mode: 'shared' }, (l) => l)
      assert.ok(lock instanceof Lock)
      assert.strictEqual(lock.name, name)
      assert.strictEqual(lock.mode, 'shared')
      assert.strictEqual(typeof lock.token, 'bigint')
      assert.ok(lock.token > 0n)
      assert.ok(lock.signal instanceof AbortSignal)
      assert.strictEqual(lock.signal.aborted, false)
      assert.strictEqual(Object.prototype.toString.call(lock), '[object Lock]')
      assert.throws(() => new Lock(), TypeError)
      assert.throws(() => { 'use strict'; lock.token = 1n }, TypeError)
    })

    it("the request resolves with the callback's value, and rejects with its error; the lock is released either way", async () => {
      const name = unique('result')
      assert.deepStrictEqual(await a.request(name, async () => ({ v: 1 })), { v: 1 })
      const boom = new Error('boom')
      assert.strictEqual((await outcome(a.request(name, () => { throw boom }))).error, boom)
      assert.strictEqual((await outcome(a.request(name, () => Promise.reject(boom)))).error, boom)
      assert.strictEqual(await available(b, name), true)
    })

    it("the lock is held until the callback's promise settles, and released before the request settles", async () => {
      const name = unique('held')
      const h = hold(a, name)
      await h.granted
      assert.strictEqual(await available(b, name), false)
      await sleep(50)
      assert.strictEqual(await available(b, name), false)
      h.release('done')
      const r = await h.settled
      assert.strictEqual(r.value, 'done')
      assert.strictEqual(await available(b, name), true)
    })

    it('fencing tokens strictly increase across grants of every manager, shared ones included', async () => {
      const name = unique('fence')
      const tokens = []
      for (let i = 0; i < 4; i++) {
        tokens.push(await a.request(name, (l) => l.token))
        tokens.push(await b.request(name, { mode: 'shared' }, (l) => l.token))
      }
      const together = [hold(a, name, { mode: 'shared' }), hold(b, name, { mode: 'shared' })]
      // Two shared holders at once get distinct tokens, in either order.
      const pair = []
      for (const h of together) pair.push((await h.granted).token)
      tokens.push(...pair.sort((x, y) => (x < y ? -1 : 1)))
      for (const h of together) h.release()
      await Promise.all(together.map((h) => h.settled))
      tokens.push(await b.request(name, (l) => l.token))
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], `tokens ${tokens.join(', ')}`)
    })
  })

  describe('modes and order', function () {
    it('exclusive requests of one manager are granted one at a time, in the order they were made', async () => {
      const name = unique('order')
      const order = []
      let inside = 0
      await Promise.all([0, 1, 2, 3, 4].map((i) => a.request(name, async () => {
        inside++
        assert.strictEqual(inside, 1)
        order.push(i)
        await sleep(10)
        inside--
      })))
      assert.deepStrictEqual(order, [0, 1, 2, 3, 4])
    })

    it('shared locks are held together; an exclusive request waits for every holder; a shared request waits behind it', async () => {
      const name = unique('shared')
      const r1 = hold(a, name, { mode: 'shared' })
      const r2 = hold(b, name, { mode: 'shared' })
      await r1.granted
      await r2.granted
      const w = hold(b, name)
      await serverWaiters(name, 1)
      const r3 = hold(a, name, { mode: 'shared' })
      await serverWaiters(name, 2)
      r1.release()
      await r1.settled
      await sleep(100)
      assert.strictEqual(w.isGranted(), false)
      r2.release()
      await w.granted
      assert.strictEqual(r3.isGranted(), false)
      w.release()
      await r3.granted
      r3.release()
      await Promise.all([r2.settled, w.settled, r3.settled])
    })
  })

  describe('ifAvailable', function () {
    it('grants a free lock, and calls back with null when another client holds it, queueing nothing', async () => {
      const name = unique('if')
      assert.strictEqual(await a.request(name, { ifAvailable: true }, (l) => l && l.name), name)
      const h = hold(b, name)
      await h.granted
      assert.strictEqual(await a.request(name, { ifAvailable: true }, (l) => l), null)
      assert.deepStrictEqual((await serverLocks(pool, name)).map((r) => r.granted), [true])
      assert.strictEqual(await available(a, name, 'shared'), false)
      h.release()
      await h.settled
    })

    it('shared joins shared; null when a request of this manager waits, without asking the server', async () => {
      const name = unique('if-shared')
      const s = hold(b, name, { mode: 'shared' })
      await s.granted
      assert.strictEqual(await available(a, name, 'shared'), true)
      assert.strictEqual(await available(a, name, 'exclusive'), false)
      const w = hold(a, name)
      await serverWaiters(name, 1)
      assert.strictEqual(await available(a, name, 'shared'), false)
      s.release()
      await w.granted
      w.release()
      await Promise.all([s.settled, w.settled])
    })
  })

  describe('signal', function () {
    it('an already aborted signal rejects with its reason and asks nothing of the server', async () => {
      const reason = new Error('stop')
      let ran = false
      const r = await outcome(a.request(unique('pre'), { signal: AbortSignal.abort(reason) }, () => { ran = true }))
      assert.strictEqual(r.error, reason)
      assert.strictEqual(ran, false)
    })

    it("an abort while waiting on the server rejects at once, cancels the wait there (pg_locks), and the callback never runs", async () => {
      const name = unique('cancel')
      const h = hold(b, name)
      await h.granted
      const ac = new AbortController()
      let ran = false
      const w = outcome(a.request(name, { signal: ac.signal }, () => { ran = true }))
      const rows = await serverWaiters(name, 1)
      const waiterPid = rows.find((r) => !r.granted).pid
      const reason = new Error('no longer needed')
      ac.abort(reason)
      assert.strictEqual((await within(w, 1000, 'the aborted request settled')).error, reason)
      await serverWaiters(name, 0, 3000)
      // The waiting session itself is gone, not only its lock request.
      await until(async () => {
        const { rows: [{ n }] } = await pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [waiterPid])
        return n === 0
      }, 'the waiting session ended', 5000)
      h.release()
      await h.settled
      // A later request is granted at once: nothing of the cancelled one remains.
      assert.strictEqual(await available(b, name), true)
      assert.strictEqual(ran, false)
    })

    it('an abort while waiting behind an earlier request of the same manager takes it out of the queue', async () => {
      const name = unique('cancel-local')
      const h = hold(a, name)
      await h.granted
      const ac = new AbortController()
      const w = outcome(a.request(name, { signal: ac.signal }, () => 'ran'))
      const after = hold(a, name)
      await serverWaiters(name, 1)
      const { pending } = await a.query()
      assert.deepStrictEqual(pending.filter((l) => l.name === name).map((l) => l.clientId !== 'local'), [true, false])
      ac.abort(new Error('x'))
      assert.strictEqual((await w).error.message, 'x')
      h.release()
      await after.granted
      after.release()
      await Promise.all([h.settled, after.settled])
    })

    it('an abort once the callback runs is ignored', async () => {
      const name = unique('late-abort')
      const ac = new AbortController()
      const v = await a.request(name, { signal: ac.signal }, async () => {
        ac.abort(new Error('late'))
        await sleep(20)
        return 'kept'
      })
      assert.strictEqual(v, 'kept')
    })
  })

  // lock.signal is made when it is first read, and the liveness queries
  // run from one timer per manager: the states those shortcuts must keep.
  describe('a held lock: its signal and liveness', function () {
    /** The server process of the session holding `name` on `manager`. */
    async function holderPid (manager, name) {
      return Number((await manager.query()).held.find((l) => l.name === name).clientId)
    }

    it('a signal first read after its session was lost is aborted with the reason the request rejected with', async () => {
      const name = unique('late-read')
      let lock
      const release = deferred()
      const request = outcome(a.request(name, (l) => { lock = l; return release.promise }))
      await until(() => lock !== undefined, 'granted', 10000)
      await pool.query('SELECT pg_terminate_backend($1)', [await holderPid(a, name)])
      // The server freed the lock: another client gets it.
      await until(() => available(b, name), 'the lock is free after pg_terminate_backend', 10000)
      release.resolve('done')
      const r = await within(request, 10000, 'the request settled')
      assert.strictEqual(r.error.code, 'ELOCKLOST')
      assert.strictEqual(lock.signal.aborted, true)
      assert.strictEqual(lock.signal.reason, r.error)
      assert.strictEqual(lock.signal, lock.signal)
    })

    it("the loss of a session lent to a later request does not abort an earlier lock's signal, read or not", async () => {
      // One connection: the second request runs on the session of the first.
      const m = createLockManager(config(), { maxConnections: 1 })
      try {
        const first = await m.request(unique('first'), (l) => l)
        const read = await m.request(unique('read'), (l) => { assert.strictEqual(l.signal.aborted, false); return l })
        const name = unique('second')
        const h = hold(m, name)
        const second = await h.granted
        await pool.query('SELECT pg_terminate_backend($1)', [await holderPid(m, name)])
        await until(() => second.signal.aborted, "the second lock's signal aborted", 10000)
        h.release()
        assert.strictEqual((await h.settled).error.code, 'ELOCKLOST')
        assert.strictEqual(first.signal.aborted, false)
        assert.strictEqual(read.signal.aborted, false)
      } finally {
        await m.close()
      }
    })

    it('every session that holds a lock is asked SELECT 1 once quiet for about 5 s, also after another lock of the manager was released', async function () {
      this.timeout(60000)
      const m = createLockManager(config())
      try {
        const names = [unique('live-x'), unique('live-y'), unique('live-z')]
        const hs = names.map((n) => hold(m, n))
        for (const h of hs) await h.granted
        const pids = []
        for (const n of names) pids.push(await holderPid(m, n))
        // The first one goes: the others stay watched.
        hs[0].release()
        await hs[0].settled
        const lastQuery = async (pid) => (await pool.query('SELECT query FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].query
        assert.notStrictEqual(await lastQuery(pids[1]), 'SELECT 1')
        assert.notStrictEqual(await lastQuery(pids[2]), 'SELECT 1')
        // Probed 4 to 5 s after the grant (a tick every second); generous
        // bounds for a loaded machine.
        await until(async () => (await lastQuery(pids[1])) === 'SELECT 1' && (await lastQuery(pids[2])) === 'SELECT 1',
          'both holders asked SELECT 1', 20000)
        for (const h of hs) h.release()
        await Promise.all(hs.map((h) => h.settled))
      } finally {
        for (const h of holds) h.release()
        await m.close()
      }
    })
  })

  // threadlock's addition, as in threadlock.locks: Web Locks has only the
  // signal.
  describe('timeout', function () {
    function assertTimeout (err, name, ms) {
      assert.ok(err instanceof LockError, `expected a LockError, got ${err && err.stack}`)
      assert.strictEqual(err.code, 'ETIMEDOUT')
      assert.strictEqual(err.message, `LockManager.request: lock ${JSON.stringify(name)}: not acquired within ${ms} ms`)
    }

    it('is the LockError of threadlock', () => {
      assert.strictEqual(LockError, require('..').LockError)
    })

    it('a request waiting on the server rejects with LockError ETIMEDOUT, and its wait there is cancelled', async () => {
      const name = unique('timeout')
      const h = hold(b, name)
      await h.granted
      let ran = false
      const t0 = Date.now()
      const w = outcome(a.request(name, { timeout: 300 }, () => { ran = true }))
      await serverWaiters(name, 1)
      assertTimeout((await within(w, 10000, 'the timed-out request settled')).error, name, 300)
      assert.ok(Date.now() - t0 >= 250, 'rejected before its timeout')
      await serverWaiters(name, 0, 3000)
      h.release()
      await h.settled
      assert.strictEqual(await available(b, name), true)
      assert.strictEqual(ran, false)
    })

    it('a request waiting behind an earlier request of the same manager times out there and leaves the queue', async () => {
      const name = unique('timeout-local')
      const h = hold(a, name)
      await h.granted
      // `next` waits on the server, the request with a timeout behind it here.
      const next = hold(a, name)
      await serverWaiters(name, 1)
      const w = outcome(a.request(name, { timeout: 200 }, () => 'ran'))
      const before = await a.query()
      assert.deepStrictEqual(before.pending.filter((l) => l.name === name).map((l) => l.clientId !== 'local'), [true, false])
      assertTimeout((await within(w, 10000, 'the timed-out request settled')).error, name, 200)
      const { pending } = await a.query()
      assert.deepStrictEqual(pending.filter((l) => l.name === name).map((l) => l.clientId !== 'local'), [true])
      h.release()
      await next.granted
      next.release()
      await Promise.all([h.settled, next.settled])
    })

    it('a request granted in time runs its callback to the end', async () => {
      const name = unique('timeout-in-time')
      const v = await a.request(name, { timeout: 100 }, async () => {
        await sleep(250)
        return 'kept'
      })
      assert.strictEqual(v, 'kept')
      const h = hold(b, name)
      await h.granted
      const w = a.request(name, { timeout: 10000 }, () => 'second')
      await serverWaiters(name, 1)
      h.release()
      assert.strictEqual(await within(w, 10000, 'the queued request'), 'second')
      await h.settled
    })
  })

  describe('names', function () {
    it('names with NUL, lone surrogates, any script, and of any length are kept exactly and never collide', async () => {
      const names = ['', 'a\u0000b', 'a\u0000c', '\ud800', '\udc00x', 'x\ufffd', 'x\ud800', 'ünïcødé ✓', '-'.padStart(5, 'y'), 'L'.repeat(20000)]
      for (const name of names) {
        const seen = await a.request(name, async (lock) => {
          const { held } = await a.query()
          return { name: lock.name, queried: held.filter((l) => l.name === name).length }
        })
        assert.deepStrictEqual(seen, { name, queried: 1 })
      }
      // Names that differ only where text would lose the difference still
      // name different locks.
      const h = hold(a, 'x\ud800')
      await h.granted
      assert.strictEqual(await available(b, 'x\ufffd'), true)
      assert.strictEqual(await available(b, 'x\ud800'), false)
      h.release()
      await h.settled
    })
  })

  describe('connections', function () {
    it('maxConnections bounds the sessions; requests beyond it wait in order, and an abort takes one out', async () => {
      const m = createLockManager(config(), { maxConnections: 2 })
      try {
        const x = hold(m, unique('bound-x'))
        const y = hold(m, unique('bound-y'))
        await x.granted
        await y.granted
        const ac = new AbortController()
        const zName = unique('bound-z')
        const z = hold(m, zName)
        const gone = outcome(m.request(unique('bound-w'), { signal: ac.signal }, () => 'ran'))
        await sleep(200)
        assert.strictEqual(z.isGranted(), false)
        const { pending } = await m.query()
        assert.deepStrictEqual(pending.filter((l) => l.name === zName), [{ name: zName, mode: 'exclusive', clientId: 'local' }])
        ac.abort(new Error('gave up'))
        assert.strictEqual((await gone).error.message, 'gave up')
        x.release()
        await z.granted
        assert.strictEqual(m.pool.totalCount <= 3, true, `${m.pool.totalCount} connections`)
        y.release()
        z.release()
        await Promise.all([x.settled, y.settled, z.settled])
      } finally {
        for (const h of holds) h.release()
        await m.close()
      }
    })

    it('a pg.Pool given to createLockManager is used, and left open by close()', async () => {
      const own = new pg.Pool({ ...config(), max: 3 })
      const m = createLockManager(own)
      const name = unique('given-pool')
      assert.strictEqual(await m.request(name, () => own.totalCount), 1)
      await m.close()
      assert.strictEqual((await own.query('SELECT 1 AS one')).rows[0].one, 1)
      await own.end()
    })
  })
})
