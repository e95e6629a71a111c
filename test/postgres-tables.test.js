'use strict'

// The name table against what its users and their administrators do: two
// tables in one namespace (the `table` option, or one name resolved in two
// schemas by search_path), and a table dropped, or dropped and created
// again, while managers use it. Two names never share a lock, and one name
// never has two.

const assert = require('assert')
const pg = require('pg')
const { createLockManager, SessionError } = require('../postgres')
const { config, needServer } = require('./fixtures/pg-env')
const { within } = require('./fixtures/threads')
const { outcome, deferred } = require('./fixtures/named-locks-harness')

const RUN = `${process.pid % 100000}_${Date.now() % 100000}`

describe('threadlock/postgres: name tables', function () {
  this.timeout(30000)
  let pool
  const managers = []
  const tables = []
  let serial = 0

  before(needServer())
  before(() => {
    pool = new pg.Pool({ ...config(), max: 2 })
  })
  after(async () => {
    for (const m of managers.splice(0)) await m.close()
    if (pool === undefined) return
    for (const t of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS ${t}, ${t}_live; DROP SEQUENCE IF EXISTS ${t}_tokens`)
    await pool.end()
  })

  /** A namespace and a table name no other test uses. */
  function fresh () {
    serial++
    const table = `tl_test_${RUN}_${serial}`
    tables.push(table)
    return { table, namespace: 0x10000000 + ((process.pid * 7919 + Date.now() + serial * 104729) % 0x60000000) }
  }

  function manager (options) {
    const m = createLockManager(config(), options)
    managers.push(m)
    return m
  }

  /** Holds `name` on `m` until the returned release() is called. */
  async function hold (m, name) {
    const granted = deferred()
    const release = deferred()
    const settled = outcome(m.request(name, async (lock) => {
      granted.resolve(lock)
      await release.promise
    }))
    const lock = await within(granted.promise, 10000, `lock ${name} granted`)
    return { lock, release: release.resolve, settled }
  }

  it('two tables in one namespace: the second is refused with ETABLE instead of sharing the keys of the first', async () => {
    const t1 = fresh()
    const t2 = { ...fresh(), namespace: t1.namespace }
    const a = manager(t1)
    const b = manager(t2)
    const orders = await hold(a, 'orders')
    try {
      const got = await outcome(b.request('invoices', { ifAvailable: true }, (lock) => lock !== null))
      // Before: the same key 1 in both tables, so b was told "invoices" was
      // taken (by a's "orders").
      assert.notStrictEqual(got.value, false, '"invoices" in t2 shares the lock of "orders" in t1')
      assert.ok(got.error instanceof SessionError, String(got.error))
      assert.strictEqual(got.error.code, 'ETABLE')
      assert.match(got.error.message, new RegExp(`^LockManager.request: namespace ${t1.namespace} is served by the name table ${t1.table}`))
      // With a namespace of its own, t2 serves "invoices" while "orders" is held.
      const c = manager({ table: t2.table, namespace: t2.namespace + 1 })
      assert.strictEqual(await c.request('invoices', { ifAvailable: true }, (lock) => lock !== null), true)
      assert.deepStrictEqual((await c.query()).held.filter((l) => l.name === 'invoices'), [])
    } finally {
      orders.release()
      await orders.settled
    }
  })

  it('one table name resolved in two schemas by search_path: the second table is refused', async () => {
    const t = fresh()
    const schema = `tl_schema_${RUN}_${serial}`
    await pool.query(`CREATE SCHEMA ${schema}`)
    try {
      const a = manager(t)
      const orders = await hold(a, 'orders')
      const other = createLockManager({ ...config(), options: `-c search_path=${schema}` }, t)
      managers.push(other)
      try {
        const got = await outcome(other.request('invoices', { ifAvailable: true }, (lock) => lock !== null))
        assert.ok(got.error instanceof SessionError, String(got.error || got.value))
        assert.strictEqual(got.error.code, 'ETABLE')
      } finally {
        orders.release()
        await orders.settled
      }
    } finally {
      await pool.query(`DROP SCHEMA ${schema} CASCADE`)
    }
  })

  it('a table dropped while a lock is held: no manager creates a new one (whose keys would give that lock to another name) until the lock is released', async () => {
    const t = fresh()
    const a = manager(t)
    const b = manager(t)
    // "orders" gets key 3 in the first table, and would get key 1 in a new one.
    await a.request('x1', () => {})
    await a.request('x2', () => {})
    const orders = await hold(a, 'orders')
    try {
      await pool.query(`DROP TABLE ${t.table}`)
      let bRan = false
      const got = await outcome(b.request('orders', { ifAvailable: true }, (lock) => { bRan = lock !== null }))
      assert.strictEqual(bRan, false, 'two managers hold "orders"')
      assert.ok(got.error instanceof SessionError, String(got.error))
      assert.strictEqual(got.error.code, 'ETABLE')
      assert.match(got.error.message, /is missing while 1 lock\(s\) of namespace \d+ are held or awaited/)
      // The holder's next request fails too: its key belongs to no table.
      const again = await outcome(a.request('x1', { ifAvailable: true }, () => 'ran'))
      assert.ok(again.error instanceof SessionError, String(again.error || again.value))
      assert.strictEqual(again.error.code, 'ETABLE')
      assert.match(again.error.message, /is missing \(dropped while in use\?\)/)
    } finally {
      orders.release()
      await orders.settled
    }
    // Once nothing is held, the table is created again and serves both.
    assert.strictEqual(await b.request('orders', (lock) => lock.name), 'orders')
    assert.strictEqual(await a.request('orders', (lock) => lock.name), 'orders')
  })

  it('a table dropped and created again: a manager that knew the old keys fails its request with ETABLE, then reads the new table', async () => {
    const t = fresh()
    const a = manager(t)
    const b = manager(t)
    await a.request('x1', () => {})
    await a.request('x2', () => {})
    await a.request('orders', () => {})
    await pool.query(`DROP TABLE ${t.table}`)
    // b creates the table again: "invoices" gets key 1, "orders" key 2.
    const invoices = await hold(b, 'invoices')
    await b.request('x', () => {})
    try {
      let ran = false
      const got = await outcome(a.request('x1', () => { ran = true }))
      assert.strictEqual(ran, false, 'a took key 1, the lock of "invoices", as "x1"')
      assert.ok(got.error instanceof SessionError, String(got.error || got.value))
      assert.strictEqual(got.error.code, 'ETABLE')
      assert.match(got.error.message, /was dropped and created again while in use/)
      // The next request reads the new table: "x1" gets a key of its own.
      assert.strictEqual(await a.request('x1', { ifAvailable: true }, (lock) => lock !== null), true)
    } finally {
      invoices.release()
      await invoices.settled
    }
  })

})

describe('threadlock/postgres: fencing tokens in blocks', function () {
  this.timeout(30000)
  let pool
  let m
  const table = `tl_tokens_${process.pid % 100000}_${Date.now() % 100000}`
  const namespace = 0x10000000 + ((process.pid * 31 + Date.now()) % 0x60000000)

  before(needServer())
  before(() => {
    pool = new pg.Pool({ ...config(), max: 1 })
    m = createLockManager(config(), { table, namespace })
  })
  after(async () => {
    if (m) await m.close()
    if (pool === undefined) return
    await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_live; DROP SEQUENCE IF EXISTS ${table}_tokens`)
    await pool.end()
  })

  const mark = async () => BigInt((await pool.query(`SELECT fence FROM ${table} WHERE digest = '\\x'::bytea`)).rows[0].fence)
  const marker = async () => (await pool.query(`SELECT lo, hi FROM ${table}_live`)).rows.map((r) => [BigInt(r.lo), BigInt(r.hi)])
  const grants = async (n) => {
    const tokens = []
    for (let i = 0; i < n; i++) tokens.push(await m.request(i % 2 ? 'a' : 'b', (lock) => lock.token))
    return tokens
  }
  const increasing = (tokens) => tokens.every((t, i) => i === 0 || t > tokens[i - 1])
  // A connection reads the marker once and trusts it while it stays open
  // (NameTable.coveredToken(): without a crash the marker only grows, and
  // a crash ends every session). The marker is changed here by hand, as a
  // crash or a block running out would leave it, so the manager's
  // connections are ended too, as a crash ends them: a new manager.
  const reconnect = async () => {
    await m.close()
    m = createLockManager(config(), { table, namespace })
  }

  it('every token handed out is at most the durable mark, and the mark moves ahead when a block runs out', async () => {
    const first = await grants(5)
    assert.ok(increasing(first), first.join(' '))
    assert.ok(first[4] <= await mark())
    // A block that runs out after 3 more values.
    await pool.query(`UPDATE ${table}_live SET hi = $1::int8`, [String(first[4] + 3n)])
    await reconnect()
    const next = await grants(10)
    assert.ok(increasing([...first, ...next]), [...first, ...next].join(' '))
    const durable = await mark()
    assert.ok(next[9] <= durable, `token ${next[9]} above the durable mark ${durable}`)
    const [[, hi]] = await marker()
    assert.ok(hi <= durable)
    // The block ran out and was moved ahead, above every token handed out.
    assert.ok(next[9] <= hi, `token ${next[9]} above the marker's ${hi}`)
  })

  it('a connection whose marker another connection moved on reads it again: its grants go on, with increasing tokens under the marker', async () => {
    const start = await grants(1)
    // A block that runs out after 3 more values, read by both managers'
    // new connections.
    await pool.query(`UPDATE ${table}_live SET hi = $1::int8`, [String(start[0] + 3n)])
    await reconnect()
    const other = createLockManager(config(), { table, namespace })
    try {
      const tokens = [...start]
      tokens.push(await other.request('a', (lock) => lock.token))
      // m runs the block out and moves the mark on once.
      tokens.push(...await grants(5))
      const moved = await mark()
      const [[, hi]] = await marker()
      // `other` still knows the old marker: its next values are above it.
      for (let i = 0; i < 3; i++) tokens.push(await other.request('b', (lock) => lock.token))
      assert.ok(increasing(tokens), tokens.join(' '))
      assert.ok(tokens.at(-1) <= hi, `token ${tokens.at(-1)} above the marker's ${hi}`)
      assert.strictEqual(await mark(), moved, 'the mark moved again: a connection took a block it did not need')
    } finally {
      await other.close()
    }
  })

  it('what a crash leaves (the unlogged marker emptied, the sequence taken back): the next tokens are above every earlier one', async () => {
    const before = await grants(5)
    await pool.query(`TRUNCATE ${table}_live`)
    await pool.query(`SELECT setval('${table}_tokens', 1)`)
    await reconnect()
    const after = await grants(5)
    assert.ok(increasing([...before, ...after]), [...before, ...after].join(' '))
    assert.ok(after[4] <= await mark())
  })
})
