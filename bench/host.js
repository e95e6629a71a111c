'use strict'

// threadlock/host side by side with the cross-process locks Node users have
// (flock through fs-ext, proper-lockfile) and with the in-process
// threadlock.locks, in one run. Four measures, printed as Markdown tables
// with ratios against threadlock/host's blocking form (host sync):
//   1. uncontended: take and release in a loop in one process, µs (median
//      of 5 rounds; a round of the fast locks lasts at least 40 ms)
//   2. hand-off latency: process A holds, B waits (20 ms later), A releases;
//      the time from A's release to B's grant, µs (median of rounds); for
//      the in-process AsyncLock row, between two worker threads
//   3. contended grants per second: 4 processes (or, for threadlock.locks,
//      4 worker threads) taking one lock in turn for a fixed time
//   4. recovery after kill -9: A holds, B waits, A is killed; the time from
//      the kill to B's grant, ms (median of 5)
// proper-lockfile and fs-ext are optional: put them in a directory and
// point THREADLOCK_BENCH_DEPS at it (see bench/README.md). threadlock/postgres
// runs when a PostgreSQL server answers at THREADLOCK_PG_URL (or the PG*
// variables), as for its tests; a row that cannot run is listed with why.
//
//   [THREADLOCK_PG_URL=postgres://...] node bench/host.js [--quick] [--only=name,name]
//
// --only runs the named rows, in that order (and host sync first, the base of
// the ratios).

const fs = require('fs')
const os = require('os')
const path = require('path')
const { fork } = require('child_process')
const { Worker } = require('worker_threads')
const { impls } = require('./host-impls')

const QUICK = process.argv.includes('--quick')
const UNCONTENDED = QUICK ? 1000 : 5000
const HANDOFFS = QUICK ? 10 : 40
const CONTENDED_MS = QUICK ? 1000 : 3000
const ROUND_MS = QUICK ? 10 : 40
const PEER = path.join(__dirname, 'host-peer.js')
const ONLY = (process.argv.find((a) => a.startsWith('--only=')) || '').slice('--only='.length).split(',').filter(Boolean)

function median (values) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

const made = []
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

/** A new scope directory, removed when the bench exits. */
function freshDir () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-bench-host-'))
  made.push(dir)
  return dir
}

// A peer process (or worker) and a way to wait for its next event.
// The buffer that the in-process peers of one measure share (the rows of
// an in-process lock on a SharedArrayBuffer), by directory.
const buffers = new Map()

function peer (impl, dir) {
  const inProcess = impls[impl].inProcess
  if (!buffers.has(dir)) buffers.set(dir, new SharedArrayBuffer(8))
  const p = inProcess
    ? new Worker(PEER, { workerData: { impl, dir, buffer: buffers.get(dir) } })
    : fork(PEER, [impl, dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const queue = []
  const waiters = []
  p.on('message', (m) => {
    if (waiters.length > 0) waiters.shift()(m)
    else queue.push(m)
  })
  return {
    p,
    pid: inProcess ? null : p.pid,
    next: () => queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve)),
    send: (m) => inProcess ? p.postMessage(m) : p.send(m),
    kill: () => inProcess ? p.terminate() : p.kill('SIGKILL'),
    exited: new Promise((resolve) => p.once('exit', resolve))
  }
}

async function uncontended (name) {
  const dir = freshDir()
  const impl = await impls[name].open(dir)
  let n = Math.min(UNCONTENDED, impls[name].uncontended ?? (impls[name].slow ? 100 : UNCONTENDED))
  const warm = Math.min(n, 500)
  const w0 = process.hrtime.bigint()
  for (let i = 0; i < warm; i++) await (await impl.acquire())()
  // A round of the fast locks lasts at least ROUND_MS: a round of 5,000
  // operations of 0.2 µs (1 ms) doubled whenever the process was preempted
  // once, and the rows' medians jumped between modes 3x apart on a shared
  // machine. The slow locks keep their count.
  if (!impls[name].slow && impls[name].uncontended === undefined) {
    const perOp = Number(process.hrtime.bigint() - w0) / 1e6 / warm
    n = Math.max(n, Math.min(2e6, Math.ceil(ROUND_MS / perOp)))
  }
  // The median of 5 rounds: the machine may be shared.
  const rounds = []
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) {
      const release = await impl.acquire()
      await release()
    }
    rounds.push(Number(process.hrtime.bigint() - t0) / 1000 / n)
  }
  await impl.close()
  return median(rounds)
}

async function handoff (name) {
  if (impls[name].inProcess && !impls[name].handoff) return null
  const dir = freshDir()
  const a = peer(name, dir)
  const b = peer(name, dir)
  await a.next()
  await b.next()
  const rounds = impls[name].slow ? 3 : HANDOFFS
  const samples = []
  let [x, y] = [a, b]
  for (let i = 0; i < rounds; i++) {
    x.send({ op: 'acquire' })
    await x.next()
    y.send({ op: 'acquire' })
    await sleep(20)
    x.send({ op: 'release' })
    const released = await x.next()
    const acquired = await y.next()
    samples.push(Number(BigInt(acquired.t) - BigInt(released.t)) / 1000)
    y.send({ op: 'release' })
    await y.next()
    ;[x, y] = [y, x]
  }
  a.send({ op: 'exit' })
  b.send({ op: 'exit' })
  await Promise.all([a.exited, b.exited])
  return median(samples)
}

async function contended (name) {
  if (impls[name].slow) return null
  const dir = freshDir()
  const peers = [1, 2, 3, 4].map(() => peer(name, dir))
  for (const p of peers) await p.next()
  for (const p of peers) p.send({ op: 'contend', ms: CONTENDED_MS })
  let total = 0
  const shares = []
  for (const p of peers) {
    const m = await p.next()
    total += m.n
    shares.push(m.n)
  }
  for (const p of peers) p.send({ op: 'exit' })
  await Promise.all(peers.map((p) => p.exited))
  return { perSecond: total / (CONTENDED_MS / 1000), shares }
}

async function recovery (name) {
  if (impls[name].inProcess || impls[name].handoff) return null
  const samples = []
  for (let i = 0; i < (impls[name].slow ? 1 : 5); i++) samples.push(await recoveryOnce(name))
  return median(samples)
}

async function recoveryOnce (name) {
  const dir = freshDir()
  const a = peer(name, dir)
  const b = peer(name, dir)
  await a.next()
  await b.next()
  a.send({ op: 'acquire' })
  await a.next()
  b.send({ op: 'acquire' })
  await sleep(50)
  const t0 = process.hrtime.bigint()
  a.kill()
  const acquired = await b.next()
  const ms = Number(BigInt(acquired.t) - t0) / 1e6
  b.send({ op: 'release' })
  await b.next()
  b.send({ op: 'exit' })
  await b.exited
  return ms
}

function fmt (v, digits = 1) {
  if (v === null || v === undefined) return 'n/a'
  return v >= 100 ? v.toFixed(0) : v.toFixed(digits)
}

function ratio (v, base) {
  if (v === null || v === undefined || !base) return 'n/a'
  // Two significant digits below 0.01, so that a small ratio is not 0.00.
  const r = v / base
  return `${r >= 0.01 ? r.toFixed(2) : r.toPrecision(2)}×`
}

async function main () {
  const names = []
  const skipped = []
  const unknown = ONLY.filter((n) => !(n in impls))
  if (unknown.length > 0) throw new RangeError(`bench/host.js: --only names no row: ${unknown.join(', ')} (rows: ${Object.keys(impls).join(', ')})`)
  // With --only, the rows run in the order given (host sync first), so
  // that runs in a row can alternate the order.
  const order = ONLY.length > 0 ? ['host sync', ...ONLY.filter((n) => n !== 'host sync')] : Object.keys(impls)
  for (const name of order) {
    const why = await impls[name].missing()
    if (why === null) names.push(name)
    else skipped.push(`${name}: ${why}`)
  }
  const rows = {}
  for (const name of names) {
    process.stderr.write(`${name}: uncontended\n`)
    const u = await uncontended(name)
    process.stderr.write(`${name}: hand-off\n`)
    const h = await handoff(name)
    process.stderr.write(`${name}: contended\n`)
    const c = await contended(name)
    process.stderr.write(`${name}: recovery after kill -9\n`)
    const r = await recovery(name)
    rows[name] = { u, h, c, r }
  }
  const base = rows['host sync']
  const about = names.map((n) => impls[n].about && impls[n].about()).filter(Boolean)
  console.log(`\nthreadlock/host bench, Node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()} ${os.release()}${about.map((a) => `, ${a}`).join('')}${QUICK ? ', --quick' : ''}\n`)
  console.log('| lock | uncontended µs | ratio | hand-off µs | ratio | contended grants/s (4) | ratio | shares | recovery after kill -9, ms |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const [name, { u, h, c, r }] of Object.entries(rows)) {
    console.log(`| ${name} | ${fmt(u, 2)} | ${ratio(u, base.u)} | ${fmt(h)} | ${ratio(h, base.h)} | ${c ? fmt(c.perSecond, 0) : 'n/a'} | ${c ? ratio(c.perSecond, base.c.perSecond) : 'n/a'} | ${c ? c.shares.join('/') : 'n/a'} | ${fmt(r, 2)} |`)
  }
  if (skipped.length > 0) console.log(`\n${skipped.map((line) => `skipped ${line}`).join('\n')}`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
