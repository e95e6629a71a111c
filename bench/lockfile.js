'use strict'

// threadlock/lockfile against proper-lockfile itself, in one run, rounds
// alternating between the two (same files system, same load):
//   1. uncontended lock() + release() in one process, µs per pair
//   2. uncontended lockSync() + release(), µs per pair
//   3. hand-off: process A holds, process B waits in lock() with the same
//      `retries` for both ({ retries: 1000, factor: 1, minTimeout: 50 });
//      A releases: ms from A's release to B's grant
//   4. recovery after kill -9: A holds, B waits as in 3, A is killed: ms
//      from the kill to B's grant (proper-lockfile with its smallest
//      `stale`, 2000 ms, and update 1000 ms)
// Prints medians with [min, max] over the rounds, and the ratio
// proper-lockfile ÷ threadlock of the medians.
//
//   flock /tmp/tl-bench.lock node bench/lockfile.js [--quick]

const fs = require('fs')
const os = require('os')
const path = require('path')
const { fork } = require('child_process')
const properLockfile = require('proper-lockfile')
const { createLockfile } = require('../lockfile')

const QUICK = process.argv.includes('--quick')
const ROUNDS = QUICK ? 3 : 7
const PAIRS = QUICK ? 300 : 2000
const PEER = path.join(__dirname, 'lockfile-peer.js')
const RETRIES = { retries: 1000, factor: 1, minTimeout: 50 }
const now = () => performance.timeOrigin + performance.now()

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-bench-lockfile-'))
fs.chmodSync(dir, 0o700)
const hostDir = path.join(dir, 'host')
const threadlock = createLockfile({ path: hostDir })
const impls = {
  threadlock: { lib: threadlock, options: {} },
  'proper-lockfile': { lib: properLockfile, options: { stale: 2000, update: 1000 } }
}

function stats (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] }
}

function file (name) {
  const f = path.join(dir, name)
  fs.writeFileSync(f, '')
  return f
}

async function uncontended (impl, f) {
  const { lib } = impls[impl]
  const start = performance.now()
  for (let i = 0; i < PAIRS; i++) {
    const release = await lib.lock(f)
    await release()
  }
  return (performance.now() - start) * 1000 / PAIRS
}

function uncontendedSync (impl, f) {
  const { lib } = impls[impl]
  const start = performance.now()
  for (let i = 0; i < PAIRS; i++) lib.lockSync(f)()
  return (performance.now() - start) * 1000 / PAIRS
}

function peer (impl) {
  const p = fork(PEER, [impl, hostDir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const queue = []
  const waiters = []
  p.on('message', (m) => (waiters.length > 0 ? waiters.shift()(m) : queue.push(m)))
  const next = () => queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve))
  const exited = new Promise((resolve) => p.once('exit', resolve))
  return { p, next, exited, ask: (m) => { p.send(m); return next() } }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// 3 and 4: A holds, B waits; then A releases (or is killed).
async function handOff (impl, f, kill) {
  const options = { ...impls[impl].options }
  const a = peer(impl)
  const b = peer(impl)
  await Promise.all([a.next(), b.next()])
  await a.ask({ op: 'lock', file: f, options })
  b.p.send({ op: 'lock', file: f, options: { ...options, retries: RETRIES } })
  await sleep(100) // B has tried once and waits
  let from
  if (kill) {
    from = now()
    a.p.kill('SIGKILL')
  } else {
    from = (await a.ask({ op: 'release' })).at
  }
  const granted = await b.next()
  const ms = granted.at - from
  await b.ask({ op: 'release' })
  b.p.send({ op: 'exit' })
  if (!kill) a.p.send({ op: 'exit' })
  await Promise.all([a.exited, b.exited])
  return ms
}

async function main () {
  const rows = [
    ['uncontended lock() + release(), µs', (impl, r) => uncontended(impl, file(`u-${impl}-${r}`))],
    ['uncontended lockSync() + release(), µs', (impl, r) => uncontendedSync(impl, file(`s-${impl}-${r}`))],
    ['hand-off, release to the waiter\'s grant, ms', (impl, r) => handOff(impl, file(`h-${impl}-${r}`), false)],
    ['recovery after kill -9 of the holder, ms', (impl, r) => handOff(impl, file(`k-${impl}-${r}`), true)]
  ]
  const load = os.loadavg()[0].toFixed(2)
  console.log(`threadlock/lockfile vs proper-lockfile ${require('proper-lockfile/package.json').version}, Node ${process.version}, ${os.cpus().length} CPUs, load ${load} at start, ${ROUNDS} rounds\n`)
  console.log('| measure | threadlock/lockfile | proper-lockfile | proper-lockfile ÷ threadlock |')
  console.log('|---|---|---|---|')
  for (const [label, run] of rows) {
    const results = { threadlock: [], 'proper-lockfile': [] }
    const rounds = label.startsWith('recovery') ? Math.min(ROUNDS, 3) : ROUNDS
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first.
      const order = r % 2 === 0 ? ['threadlock', 'proper-lockfile'] : ['proper-lockfile', 'threadlock']
      for (const impl of order) results[impl].push(await run(impl, r))
    }
    const t = stats(results.threadlock)
    const p = stats(results['proper-lockfile'])
    const cell = (s) => `${s.median.toFixed(2)} [${s.min.toFixed(2)}, ${s.max.toFixed(2)}]`
    console.log(`| ${label} | ${cell(t)} | ${cell(p)} | ${(p.median / t.median).toFixed(1)} |`)
  }
  console.log(`\nload ${os.loadavg()[0].toFixed(2)} at the end`)
  fs.rmSync(dir, { recursive: true, force: true })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
