'use strict'

// threadlock/postgres across real processes on a real server: mutual
// exclusion and fencing tokens over 4 processes, the server's FIFO order
// between processes, and what happens when a holder is killed or its
// connection is ended by the server.

const assert = require('assert')
const pg = require('pg')
const { createLockManager } = require('../postgres')
const { config, needServer, unique, child, serverLocks } = require('./fixtures/pg-env')
const { until } = require('./fixtures/threads')

const COUNTER = 'threadlock_test_counter'

describe('threadlock/postgres across processes', function () {
  this.timeout(120000)
  let pool
  let manager

  before(needServer())
  before(async () => {
    pool = new pg.Pool({ ...config(), max: 4 })
    await pool.query(`CREATE TABLE IF NOT EXISTS ${COUNTER} (id text PRIMARY KEY, value integer NOT NULL)`)
    manager = createLockManager(config())
  })
  after(async () => {
    if (manager) await manager.close()
    if (pool) await pool.end()
  })

  /** Runs `count` in `processes` children at once; resolves with every grant. */
  async function countIn (processes, n, lock) {
    const id = unique('counter')
    await pool.query(`INSERT INTO ${COUNTER} (id, value) VALUES ($1, 0)`, [id])
    const name = unique('counting')
    const children = Array.from({ length: processes }, () =>
      child({ task: 'count', name, n, lock, counter: COUNTER, id }))
    const done = children.map((c) => c.next('done', 100000))
    await Promise.all(children.map((c) => c.next('ready')))
    for (const c of children) c.send('go')
    const grants = (await Promise.all(done)).flatMap((m) => m.grants)
    const exits = await Promise.all(children.map((c) => c.exited))
    assert.deepStrictEqual(exits.map((e) => e.code), children.map(() => 0))
    const { rows } = await pool.query(`SELECT value FROM ${COUNTER} WHERE id = $1`, [id])
    return { value: rows[0].value, grants }
  }

  it('without a lock, 4 processes lose increments (the control for the next test)', async () => {
    const { value } = await countIn(4, 50, false)
    assert.ok(value < 200, `expected lost updates, got all 200 (${value})`)
  })

  it('4 processes x 250 increments under one lock count exactly 1000, with strictly increasing fencing tokens', async () => {
    const { value, grants } = await countIn(4, 250, true)
    assert.strictEqual(value, 1000)
    // Every grant saw the counter one higher than the one before it, and its
    // token must be higher too: sorted by value, tokens strictly increase.
    grants.sort((a, b) => a[0] - b[0])
    assert.deepStrictEqual(grants.map((g) => g[0]), Array.from({ length: 1000 }, (_, i) => i + 1))
    for (let i = 1; i < grants.length; i++) {
      assert.strictEqual(typeof grants[i][1], 'bigint')
      assert.ok(grants[i][1] > grants[i - 1][1], `token ${grants[i][1]} of grant ${i + 1} is not above ${grants[i - 1][1]}`)
    }
  })

  /** Resolves once the server shows `count` waiting requests for `name`. */
  async function waitersOnServer (name, count) {
    const deadline = Date.now() + 10000
    for (;;) {
      const rows = await serverLocks(pool, name)
      const waiting = rows.filter((r) => !r.granted).length
      if (waiting === count) return rows
      if (Date.now() > deadline) throw new Error(`watchdog: ${waiting} waiters of ${name}, expected ${count}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  it('processes are granted in the order they reached the server (its lock queue is FIFO)', async () => {
    const name = unique('fifo')
    const holder = child({ task: 'hold', name })
    await holder.next('granted')
    const waiters = []
    for (let i = 0; i < 3; i++) {
      const w = child({ task: 'hold', name })
      waiters.push(w)
      await waitersOnServer(name, i + 1)
    }
    holder.send('release')
    // Each turn, the first waiter to report a grant, and then only it.
    const order = []
    for (let turn = 0; turn < 3; turn++) {
      const deadline = Date.now() + 10000
      let granted = []
      while (granted.length === 0) {
        if (Date.now() > deadline) throw new Error(`watchdog: no grant in turn ${turn}`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        granted = waiters.filter((w) => !order.includes(w) && w.messages.some((m) => m.type === 'granted'))
      }
      assert.strictEqual(granted.length, 1, 'two waiters held the lock at once')
      order.push(granted[0])
      granted[0].send('release')
      await granted[0].next('settled')
    }
    assert.deepStrictEqual(order.map((w) => w.proc.pid), waiters.map((w) => w.proc.pid))
    await Promise.all([holder, ...waiters].map((c) => c.exited))
  })

  it('kill -9 of a holding process: the next waiter is granted within a second', async () => {
    const name = unique('kill')
    const holder = child({ task: 'hold', name })
    const first = await holder.next('granted')
    const waiter = child({ task: 'hold', name })
    await waitersOnServer(name, 1)
    const granted = waiter.next('granted')
    const killedAt = Date.now()
    holder.kill('SIGKILL')
    const second = await granted
    assert.ok(second.at - killedAt < 1000, `granted ${second.at - killedAt} ms after the kill`)
    assert.ok(second.token > first.token)
    assert.strictEqual((await holder.exited).signal, 'SIGKILL')
    waiter.send('release')
    assert.deepStrictEqual(await waiter.next('settled'), { type: 'settled', ok: true, value: 'released' })
  })

  it("pg_terminate_backend of the holder's session: its lock.signal fires, its request rejects with ELOCKLOST, and the next waiter is granted", async () => {
    const name = unique('terminate')
    const holder = child({ task: 'hold', name })
    const first = await holder.next('granted')
    const waiter = child({ task: 'hold', name })
    const rows = await waitersOnServer(name, 1)
    const holderPid = rows.find((r) => r.granted).pid
    const lost = holder.next('lost')
    const granted = waiter.next('granted')
    const { rows: [{ ok }] } = await pool.query('SELECT pg_terminate_backend($1) AS ok', [holderPid])
    assert.strictEqual(ok, true)
    assert.strictEqual((await lost).code, 'ELOCKLOST')
    const second = await granted
    assert.ok(second.token > first.token)
    // The holder's callback goes on until it ends; then its request rejects.
    holder.send('release')
    const settled = await holder.next('settled')
    assert.strictEqual(settled.ok, false)
    assert.strictEqual(settled.code, 'ELOCKLOST')
    waiter.send('release')
    assert.strictEqual((await waiter.next('settled')).ok, true)
  })

  it('a holder stopped by SIGSTOP keeps its lock while stopped (the kernel answers for it); pg_terminate_backend of its clientId frees it, and its signal fires once it runs again', async function () {
    this.timeout(60000)
    const name = unique('sigstop')
    const holder = child({ task: 'hold', name })
    await holder.next('granted')
    const other = createLockManager(config())
    try {
      holder.kill('SIGSTOP')
      // Longer than the liveness check (10 s) and the server's keepalive
      // idle time (30 s) would need to act, had the process vanished.
      await new Promise((resolve) => setTimeout(resolve, 35000))
      assert.strictEqual(await other.request(name, { ifAvailable: true }, (l) => l !== null), false)
      const clientId = (await other.query()).held.find((l) => l.name === name).clientId
      await pool.query('SELECT pg_terminate_backend($1::int)', [clientId])
      const lost = holder.next('lost')
      await until(() => other.request(name, { ifAvailable: true }, (l) => l !== null), 'the lock is free after pg_terminate_backend', 10000)
      holder.kill('SIGCONT')
      assert.strictEqual((await lost).code, 'ELOCKLOST')
      holder.send('release')
      assert.strictEqual((await holder.next('settled')).code, 'ELOCKLOST')
    } finally {
      holder.kill('SIGCONT')
      await other.close()
    }
  })

  it('shared mode across processes: readers hold together, a writer holds alone', async () => {
    const name = unique('shared')
    const readers = [child({ task: 'hold', name, mode: 'shared' }), child({ task: 'hold', name, mode: 'shared' })]
    await Promise.all(readers.map((r) => r.next('granted')))
    const writer = child({ task: 'hold', name, mode: 'exclusive' })
    await waitersOnServer(name, 1)
    // A reader that comes after a waiting writer waits behind it.
    const late = child({ task: 'hold', name, mode: 'shared' })
    await waitersOnServer(name, 2)
    const wrote = writer.next('granted')
    readers[0].send('release')
    await readers[0].next('settled')
    assert.strictEqual(writer.messages.some((m) => m.type === 'granted'), false, 'the writer was granted while a reader held')
    readers[1].send('release')
    await wrote
    let rows = await serverLocks(pool, name)
    assert.deepStrictEqual(rows.filter((r) => r.granted).map((r) => r.mode), ['ExclusiveLock'])
    const read = late.next('granted')
    writer.send('release')
    await read
    rows = await serverLocks(pool, name)
    assert.deepStrictEqual(rows.map((r) => [r.mode, r.granted]), [['ShareLock', true]])
    late.send('release')
    await Promise.all([...readers, writer, late].map((c) => c.exited))
  })

  it('query() of one process lists the locks of every process', async () => {
    const name = unique('query')
    const holder = child({ task: 'hold', name, mode: 'shared' })
    await holder.next('granted')
    const writer = child({ task: 'hold', name })
    await waitersOnServer(name, 1)
    const { held, pending } = await manager.query()
    assert.deepStrictEqual(held.filter((l) => l.name === name).map((l) => l.mode), ['shared'])
    assert.deepStrictEqual(pending.filter((l) => l.name === name).map((l) => l.mode), ['exclusive'])
    for (const l of [...held, ...pending]) assert.match(l.clientId, /^\d+$/)
    holder.send('release')
    await writer.next('granted')
    writer.send('release')
    await Promise.all([holder.exited, writer.exited])
  })
})
