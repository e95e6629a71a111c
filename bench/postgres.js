'use strict'

// threadlock/postgres side by side with what its users would write by hand:
// a raw pg_advisory_lock / pg_advisory_unlock loop on one connection. Two
// measures, each as the median of several rounds that alternate which one
// goes first, printed as a Markdown table with the manager's overhead as a
// ratio against the raw loop of the same run:
//   1. the latency of an uncontended request (lock, empty callback, unlock),
//      and the client's CPU per request (process.cpuUsage(), user + system)
//   2. the hand-off: 2 processes taking one lock in turn, time per grant
//   3. contended grants per second: 4 processes taking one lock in turn
// The ratios are also given round by round (median and range), and the
// load average at the start and the end; an uncounted round of the
// uncontended measure warms the code up first. The raw loop takes no fencing token; a third anchor (raw loop plus the
// fencing counter's UPDATE) shows how much of the overhead that durable
// write is.
//
//   THREADLOCK_PG_URL=postgres://... node bench/postgres.js [--quick]
//
// Without a reachable server it says so and exits 0.

const { fork } = require('child_process')
const os = require('os')
const pg = require('pg')
const { createLockManager } = require('../postgres')

const URL = process.env.THREADLOCK_PG_URL
const QUICK = process.argv.includes('--quick')
const ROUNDS = QUICK ? 3 : 5
const UNCONTENDED = QUICK ? 200 : 1000
const CONTENDED_MS = QUICK ? 1000 : 3000
const PROCESSES = 4
const KEY = [0x62656e63, 1] // "benc", a key no test uses
const NAME = 'bench/postgres'

function median (values) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

// One way of taking and releasing the lock, on an open resource.
const kinds = {
  raw: {
    async open () {
      const client = new pg.Client(URL)
      await client.connect()
      return client
    },
    async once (client) {
      await client.query('SELECT pg_advisory_lock($1::int4, $2::int4)', KEY)
      await client.query('SELECT pg_advisory_unlock($1::int4, $2::int4)', KEY)
    },
    close: (client) => client.end()
  },
  'raw + fence': {
    async open () {
      const client = new pg.Client(URL)
      await client.connect()
      await client.query('CREATE TABLE IF NOT EXISTS threadlock_bench_fence (id int PRIMARY KEY, fence bigint NOT NULL)')
      await client.query('INSERT INTO threadlock_bench_fence VALUES (1, 0) ON CONFLICT DO NOTHING')
      return client
    },
    async once (client) {
      await client.query('SELECT pg_advisory_lock($1::int4, $2::int4)', KEY)
      await client.query('UPDATE threadlock_bench_fence SET fence = fence + 1 WHERE id = 1 RETURNING fence')
      await client.query('SELECT pg_advisory_unlock($1::int4, $2::int4)', KEY)
    },
    close: (client) => client.end()
  },
  manager: {
    async open () {
      const manager = createLockManager(URL, { maxConnections: 2 })
      await manager.request(NAME, () => {})
      return manager
    },
    once: (manager) => manager.request(NAME, () => {}),
    close: (manager) => manager.close()
  }
}

// Child process: take the lock in a loop until the deadline, report count.
async function child (kind) {
  const k = kinds[kind]
  const resource = await k.open()
  const go = new Promise((resolve) => process.once('message', resolve))
  process.send({ ready: true })
  const { until } = await go
  let n = 0
  while (Date.now() < until) {
    await k.once(resource)
    n++
  }
  await k.close(resource)
  process.send({ n })
}

// Resolves with [µs per request + release, µs of this process's CPU (user
// + system) per request + release].
async function uncontended (kind) {
  const k = kinds[kind]
  const resource = await k.open()
  for (let i = 0; i < 20; i++) await k.once(resource)
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < UNCONTENDED; i++) await k.once(resource)
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / UNCONTENDED
  const cpu = process.cpuUsage(cpu0)
  await k.close(resource)
  return [us, (cpu.user + cpu.system) / UNCONTENDED]
}

async function contended (kind, processes = PROCESSES) {
  const procs = Array.from({ length: processes }, () => fork(__filename, ['--child', kind], { env: process.env }))
  // Every listener is attached before its event can fire.
  const exited = procs.map((p) => new Promise((resolve) => p.once('exit', resolve)))
  const ready = procs.map((p) => new Promise((resolve) => p.once('message', resolve)))
  await Promise.all(ready)
  const counts = procs.map((p) => new Promise((resolve) => p.once('message', (m) => resolve(m.n))))
  const start = Date.now()
  for (const p of procs) p.send({ go: true, until: start + CONTENDED_MS })
  const total = (await Promise.all(counts)).reduce((a, b) => a + b, 0)
  await Promise.all(exited)
  return total / ((Date.now() - start) / 1000)
}

async function main () {
  if (process.argv[2] === '--child') {
    await child(process.argv[3])
    return
  }
  if (!URL) {
    console.log('bench/postgres: skipped, THREADLOCK_PG_URL is not set (bash .ci/postgres.sh start prints one)')
    return
  }
  try {
    const c = new pg.Client({ connectionString: URL, connectionTimeoutMillis: 3000 })
    await c.connect()
    const { rows: [{ v }] } = await c.query('SELECT version() AS v')
    await c.end()
    console.log(`# threadlock/postgres, ${new Date().toISOString().slice(0, 10)}: ${v.split(' on ')[0]}, node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)} at the start${QUICK ? ', --quick' : ''}\n`)
  } catch (err) {
    console.log(`bench/postgres: skipped, no server at THREADLOCK_PG_URL (${err.message})`)
    return
  }
  const names = Object.keys(kinds)
  const lat = Object.fromEntries(names.map((n) => [n, []]))
  const cpu = Object.fromEntries(names.map((n) => [n, []]))
  const rate = Object.fromEntries(names.map((n) => [n, []]))
  const hand = Object.fromEntries(names.map((n) => [n, []]))
  // One uncounted round of the uncontended measure first: the first
  // rounds of a fresh process run unoptimised code (the manager's more than
  // the raw loop's) and took 2-3x the CPU per request of the later ones.
  for (const n of names) await uncontended(n)
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const n of order) {
      const [us, cpuUs] = await uncontended(n)
      lat[n].push(us)
      cpu[n].push(cpuUs)
    }
    // Two processes on one lock: the server's queue makes them alternate,
    // so each grant is a hand-off from the other process.
    for (const n of order) hand[n].push(1e6 / await contended(n, 2))
    for (const n of order) rate[n].push(await contended(n))
    process.stderr.write(`round ${round + 1}/${ROUNDS}\r`)
  }
  const m = (o) => Object.fromEntries(names.map((n) => [n, median(o[n])]))
  const l = m(lat)
  const r = m(rate)
  const h = m(hand)
  const c = m(cpu)
  const range = (o, n, digits) => `${Math.min(...o[n]).toFixed(digits)}-${Math.max(...o[n]).toFixed(digits)}`
  console.log('| measure | raw lock/unlock | raw + fence UPDATE | threadlock/postgres | manager / raw | manager / raw + fence |')
  console.log('|---|---|---|---|---|---|')
  console.log(`| uncontended request, µs (median of ${ROUNDS} x ${UNCONTENDED}; range) | ${l.raw.toFixed(0)} (${range(lat, 'raw', 0)}) | ${l['raw + fence'].toFixed(0)} | ${l.manager.toFixed(0)} (${range(lat, 'manager', 0)}) | ${(l.manager / l.raw).toFixed(2)}x | ${(l.manager / l['raw + fence']).toFixed(2)}x |`)
  console.log(`| uncontended client CPU (user + system), µs per request (median; range) | ${c.raw.toFixed(0)} (${range(cpu, 'raw', 0)}) | ${c['raw + fence'].toFixed(0)} | ${c.manager.toFixed(0)} (${range(cpu, 'manager', 0)}) | ${(c.manager / c.raw).toFixed(2)}x | ${(c.manager / c['raw + fence']).toFixed(2)}x |`)
  console.log(`| hand-off, µs per grant, 2 processes (median of ${ROUNDS} x ${CONTENDED_MS} ms; range) | ${h.raw.toFixed(0)} (${range(hand, 'raw', 0)}) | ${h['raw + fence'].toFixed(0)} | ${h.manager.toFixed(0)} (${range(hand, 'manager', 0)}) | ${(h.manager / h.raw).toFixed(2)}x | ${(h.manager / h['raw + fence']).toFixed(2)}x |`)
  console.log(`| contended grants/s, ${PROCESSES} processes (median of ${ROUNDS} x ${CONTENDED_MS} ms; range) | ${r.raw.toFixed(0)} (${range(rate, 'raw', 0)}) | ${r['raw + fence'].toFixed(0)} | ${r.manager.toFixed(0)} (${range(rate, 'manager', 0)}) | ${(r.manager / r.raw).toFixed(2)}x of raw | ${(r.manager / r['raw + fence']).toFixed(2)}x |`)
  // The same ratios round by round (each round runs both back to back, so
  // a burst of load on the machine moves both sides of a round's ratio).
  const paired = (o) => {
    const ratios = o.raw.map((raw, i) => o.manager[i] / raw)
    return `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`
  }
  console.log(`\nmanager / raw round by round, median (range): uncontended ${paired(lat)}, client CPU ${paired(cpu)}, hand-off ${paired(hand)}, contended grants/s ${paired(rate)}`)
  console.log(`load average ${os.loadavg()[0].toFixed(1)} at the end`)
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
