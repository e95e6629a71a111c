'use strict'

// Runs threadlock and its anchors side by side in one process, alternating
// which one goes first in each round, and prints Markdown tables: per row the
// median and min–max of each, the ratio threadlock / anchor, the target and
// whether it is met; then how the costs grow with the number of waiters and
// threads; then rows 1, 2 and 5 under several spin settings. At the end it
// writes the results as JSON and draws them as SVG charts (charts.js).
//
//   node --expose-gc bench/run.js [--quick] [--only=1,3] [--spin=N]
//                                 [--sections=table,waiters,threads,sweep]
//                                 [--lock-options=JSON] [--out=DIR]
//   node bench/run.js --charts-only[=results.json] [--out=DIR]
//
// --quick       fewer rounds and shorter samples; the main table and a short
//               thread sweep only
// --only=...    rows whose number starts with one of these (and the scaling
//               and spin sections that belong to them)
// --spin=N      threadlock's sync-wait spin for the main table and the
//               scaling section (default: the binding's own default)
// --sections=   which parts to run (default: all; --quick: table,threads;
//               'scaling' is waiters and threads)
// --lock-options=JSON
//               AsyncLock options for threadlock in rows 5a-5c, the scaling
//               and the spin sweep, instead of none (the default policy)
// --out=DIR     where results.json, ratios.svg and contended.svg go. The
//               default is docs/bench for a full run (no option but --out)
//               and build/bench for any other, so that a partial or quick
//               run never replaces the recorded charts by accident
// --charts-only[=FILE]
//               measure nothing: draw the charts again from a saved
//               results.json (default docs/bench/results.json)
//
// Progress goes to stderr, and only when stderr is a terminal.

const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')

// Drawing a saved run needs neither the addon nor --expose-gc.
const chartsOnly = process.argv.slice(2).find((a) => a === '--charts-only' || a.startsWith('--charts-only='))
if (chartsOnly !== undefined) {
  const rest = process.argv.slice(2).filter((a) => a !== chartsOnly)
  const file = chartsOnly.includes('=') ? [chartsOnly.slice(chartsOnly.indexOf('=') + 1)] : []
  process.exit(require('./charts').main([...file, ...rest]))
}

if (typeof global.gc !== 'function') {
  // Bytes per waiter needs a full gc: run again with it exposed.
  const r = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, __filename,
    ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status === null ? 1 : r.status)
}

const { median, setSpin, summary } = require('./common')
const charts = require('./charts')
const { fmt } = require('./format')

// Command line.

function parseLockOptions (text) {
  let o
  try {
    o = JSON.parse(text)
  } catch (err) {
    process.stderr.write(`bench: --lock-options: ${err.message}\n`)
    process.exit(2)
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) {
    process.stderr.write('bench: --lock-options must be a JSON object\n')
    process.exit(2)
  }
  return o
}

const SECTIONS = ['table', 'waiters', 'threads', 'sweep']

function parseArgs (argv) {
  const opts = { quick: false, only: null, spin: null, sections: null, lockOptions: null, out: null }
  for (const a of argv) {
    if (a === '--quick') opts.quick = true
    else if (a.startsWith('--out=')) opts.out = a.slice(6)
    else if (a.startsWith('--sections=')) opts.sections = a.slice(11).split(',').filter(Boolean)
    else if (a.startsWith('--only=')) opts.only = a.slice(7).split(',').filter(Boolean)
    else if (a.startsWith('--spin=')) opts.spin = Number(a.slice(7))
    else if (a.startsWith('--lock-options=')) opts.lockOptions = parseLockOptions(a.slice(15))
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node --expose-gc bench/run.js [--quick] [--only=1,3] ' +
        '[--spin=N] [--sections=table,waiters,threads,sweep] [--lock-options=JSON] [--out=DIR]\n' +
        '       node bench/run.js --charts-only[=results.json] [--out=DIR]\n')
      process.exit(0)
    } else {
      process.stderr.write(`bench: unknown option ${a}\n`)
      process.exit(2)
    }
  }
  if (opts.spin !== null && !(Number.isInteger(opts.spin) && opts.spin >= 0)) {
    process.stderr.write('bench: --spin must be a nonnegative integer\n')
    process.exit(2)
  }
  // The recorded charts come from a full run only.
  opts.full = !opts.quick && opts.only === null && opts.spin === null &&
    opts.sections === null && opts.lockOptions === null
  const sections = (opts.sections || (opts.quick ? ['table', 'threads'] : SECTIONS))
    .flatMap((name) => (name === 'scaling' ? ['waiters', 'threads'] : [name]))
  for (const name of sections) {
    if (!SECTIONS.includes(name)) {
      process.stderr.write(`bench: unknown section ${name}\n`)
      process.exit(2)
    }
  }
  for (const name of SECTIONS) opts[name] = sections.includes(name)
  return opts
}

const opts = parseArgs(process.argv.slice(2))
const quick = opts.quick

// What the run measured, for results.json and the charts (see charts.js for
// the format). The sections fill it in as they go.
const results = { format: charts.FORMAT, meta: {}, table: [] }

function selected (id) {
  return opts.only === null || opts.only.some((o) => id.startsWith(o))
}

// Progress.

const tty = process.stderr.isTTY
function progress (text) {
  if (tty) process.stderr.write(`\r\x1b[K${text}`)
}
function progressDone () {
  if (tty) process.stderr.write('\r\x1b[K')
}

// Formatting.

// Both sides Infinity (a thread starved in both) or no anchor: no ratio.
function fmtRatio (x) {
  return Number.isNaN(x) ? 'n/a' : fmt(x)
}

function fmtSummary (s) {
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`
}

function table (header, rows) {
  const all = [header, ...rows]
  const widths = header.map((_, c) => Math.max(...all.map((r) => String(r[c]).length)))
  const line = (r) => `| ${r.map((cell, c) => String(cell).padEnd(widths[c])).join(' | ')} |`
  const out = [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`]
  for (const r of rows) out.push(line(r))
  return out.join('\n') + '\n'
}

// Rows 5*: one gate contended by several threads (contended.js). The lock
// rows carry the goals of issue 11 (throughput, share and longest wait);
// the other gates are held to the same goals, since the same policy should
// reach them. Only the lock options of threadlock differ between 5a-5c and
// 5f; they come from contended.POLICIES (--lock-options overrides the
// default's for a comparison run).

function contendedRows () {
  const contended = require('./contended')
  const durationMs = quick ? 200 : 500
  const rounds = quick ? 3 : 5
  const lockOptions = opts.lockOptions === null ? contended.POLICIES.default : opts.lockOptions
  const goals = [
    { key: 'throughput', label: 'throughput, ops/s', higher: true, target: 1.0 },
    { key: 'share', label: 'share, max/min per thread', absolute: 1.5 },
    { key: 'longestMs', label: 'longest wait, ms', target: 0.5 },
    { key: 'p99Us', label: 'p99 wait, µs' }
  ]
  const info = goals.map(({ key, label, higher }) => ({ key, label, higher }))
  const row = (id, workload, anchor, metrics, o) => ({
    id,
    workload,
    anchor: anchor[1],
    impls: ['threadlock', anchor[0]],
    open: () => contended.open({ durationMs, ...o }),
    args: [],
    rounds,
    metrics
  })
  const blogLock = ['blog', 'blog lock']
  return [
    row('5a', 'A: executeLocked, main + 3 workers', blogLock, goals,
      { kind: 'lock', threads: 4, lockOptions }),
    row('5b', 'B: executeLocked, main + 7 workers (8 threads, 2 cores)', blogLock, goals,
      { kind: 'lock', threads: 8, lockOptions }),
    row('5c', 'C: main executeLocked, 3 workers blocking lock()/unlock()', blogLock, goals,
      { kind: 'lock', threads: 4, workers: 'sync', lockOptions }),
    row('5f', `as 5a, threadlock with ${JSON.stringify(contended.POLICIES.fifo)} (FIFO hand-off)`, blogLock, info,
      { kind: 'lock', threads: 4, lockOptions: contended.POLICIES.fifo }),
    row('5sem', 'Semaphore(2) acquire() + release, main + 3 workers', ['blog', 'blog semaphore'], goals,
      { kind: 'semaphore', threads: 4, permits: 2 }),
    row('5rw', 'RWLock writers: main runWrite, 3 workers acquireWriteSync()/releaseWrite()', blogLock, goals,
      { kind: 'rwlock', threads: 4, workers: 'sync' }),
    row('5n', 'named locks.request(name, f), main + 3 workers', ['web', 'worker_threads.locks'], goals,
      { kind: 'named', threads: 4 })
  ]
}

// The main table. Each row opens a session (workers, buffers), then takes
// `rounds` samples of each implementation, alternating which goes first,
// after `warmup` unrecorded rounds. A sample is one number or an object of
// named metrics.

const R = quick ? 3 : 7

const ROWS = [
  {
    id: '1',
    workload: 'wait/notify round trip between two workers',
    anchor: 'Atomics',
    impls: ['threadlock', 'atomics'],
    open: () => require('./roundtrip').open({ pairs: 1 }),
    args: [quick ? 3000 : 10000],
    metrics: [{ label: 'µs per round trip', target: 1.0 }]
  },
  {
    id: '2',
    workload: 'main-thread await waitAsync woken by a worker (worker polls)',
    anchor: 'Atomics',
    impls: ['threadlock', 'atomics'],
    open: () => require('./waitasync').open({ workers: 1, mode: 'poll' }),
    args: [quick ? 2000 : 5000],
    metrics: [{ label: 'µs per wake-up', target: 0.7 }]
  },
  {
    id: '2w',
    workload: 'as 2, the worker sleeps in wait() and is notified (round trip)',
    anchor: 'Atomics',
    impls: ['threadlock', 'atomics'],
    open: () => require('./waitasync').open({ workers: 1, mode: 'wait' }),
    args: [quick ? 2000 : 5000],
    metrics: [{ label: 'µs per round trip' }]
  },
  {
    id: '3',
    workload: '100,000 pending waitAsync on one address',
    anchor: 'Atomics',
    impls: ['threadlock', 'atomics'],
    open: () => require('./many-waiters').open({ N: 100000 }),
    args: [],
    warmup: 0,
    rounds: quick ? 3 : 5,
    metrics: [
      { key: 'createMs', label: 'create, ms', target: 1.0 },
      { key: 'wakeMs', label: 'notify all → all settled, ms', target: 0.5 },
      { key: 'rssBytes', label: 'rss bytes per waiter', target: 0.5 },
      { key: 'heapBytes', label: 'heapUsed+external bytes per waiter', target: 0.5 }
    ]
  },
  {
    id: '3t',
    workload: 'as 3, each wait with a 60 s timeout',
    anchor: 'Atomics',
    impls: ['threadlock', 'atomics'],
    open: () => require('./many-waiters').open({ N: 100000, timeout: 60000 }),
    args: [],
    warmup: 0,
    rounds: quick ? 3 : 5,
    metrics: [
      { key: 'createMs', label: 'create, ms' },
      { key: 'wakeMs', label: 'notify all → all settled, ms' },
      { key: 'rssBytes', label: 'rss bytes per waiter' }
    ]
  },
  {
    id: '4',
    workload: 'uncontended lock() + unlock(), main thread',
    anchor: 'blog lock',
    impls: ['threadlock', 'blog'],
    open: () => require('./uncontended').open({ n: quick ? 300000 : 1000000 }),
    args: [],
    rounds: quick ? 5 : 11,
    metrics: [{ label: 'ns per lock+unlock', target: 1.2 }]
  },
  ...contendedRows(),
  {
    id: '6',
    workload: 'in-thread runExclusive, sequential awaits',
    anchor: 'async-mutex',
    impls: ['threadlock', 'async-mutex'],
    open: () => require('./in-thread').open({ kind: 'sequential', n: quick ? 50000 : 200000 }),
    args: [],
    metrics: [{ label: 'ns per runExclusive', target: 1.0 }]
  },
  {
    id: '6b',
    workload: 'in-thread runExclusive, bursts of 64 queued calls',
    anchor: 'async-mutex',
    impls: ['threadlock', 'async-mutex'],
    open: () => require('./in-thread').open({ kind: 'burst', n: quick ? 6400 : 25600, burst: 64 }),
    args: [],
    metrics: [{ label: 'ns per runExclusive', target: 1.0 }]
  },
  {
    id: '7',
    workload: 'in-thread Semaphore(4) acquire + release, sequential awaits',
    anchor: 'async-mutex',
    impls: ['threadlock', 'async-mutex'],
    open: () => require('./semaphore').open({ kind: 'sequential', n: quick ? 50000 : 200000 }),
    args: [],
    metrics: [{ label: 'ns per acquire+release', target: 1.0 }]
  },
  {
    id: '7b',
    workload: 'in-thread Semaphore(4), bursts of 64 queued acquires',
    anchor: 'async-mutex',
    impls: ['threadlock', 'async-mutex'],
    open: () => require('./semaphore').open({ kind: 'burst', n: quick ? 6400 : 25600, burst: 64 }),
    args: [],
    metrics: [{ label: 'ns per acquire+release' }]
  }
]

function asMetrics (x) {
  return typeof x === 'number' ? { value: x } : x
}

// Takes alternating samples; returns { impl: { key: [values] } }.
async function measure (label, session, impls, args, rounds, warmup) {
  const samples = {}
  for (const impl of impls) samples[impl] = {}
  for (let r = -warmup; r < rounds; r++) {
    const order = r % 2 === 0 ? impls : [...impls].reverse()
    for (const impl of order) {
      progress(`${label}: ${r < 0 ? 'warm-up' : `round ${r + 1}/${rounds}`}, ${impl}`)
      const m = asMetrics(await session.sample(impl, ...args))
      if (r < 0) continue
      for (const [k, v] of Object.entries(m)) (samples[impl][k] ||= []).push(v)
    }
  }
  return samples
}

// `anchor` is null when the anchor is not available: a ratio target then
// has no verdict.
function verdict (metric, tl, anchor) {
  const ratio = anchor === null ? NaN : tl.median / anchor.median
  if (metric.absolute !== undefined) {
    return { ratio, target: `≤ ${metric.absolute} (threadlock)`, ok: tl.median <= metric.absolute }
  }
  if (metric.target === undefined) return { ratio, target: '—', ok: null }
  if (anchor === null) return { ratio, target: `${metric.higher ? '≥' : '≤'} ${metric.target.toFixed(1)}`, ok: null }
  const t = metric.target.toFixed(1)
  if (metric.higher) return { ratio, target: `≥ ${t}`, ok: ratio >= metric.target }
  return { ratio, target: `≤ ${t}`, ok: ratio <= metric.target }
}

async function runTable () {
  const out = []
  const misses = []
  for (const row of ROWS) {
    if (!selected(row.id)) continue
    const [tlName, anchorName] = row.impls
    let session
    try {
      progress(`row ${row.id}: starting`)
      session = await row.open()
      // A session may lack an anchor that this Node does not have.
      const impls = row.impls.filter((impl) => !session.impls || session.impls.includes(impl))
      const samples = await measure(`row ${row.id}`, session, impls, row.args,
        row.rounds || R, row.warmup === undefined ? 1 : row.warmup)
      for (const metric of row.metrics) {
        const key = metric.key || 'value'
        const tl = summary(samples[tlName][key])
        const an = impls.includes(anchorName) ? summary(samples[anchorName][key]) : null
        const v = verdict(metric, tl, an)
        const mark = v.ok === null ? '' : v.ok ? 'pass' : 'MISS'
        if (v.ok === false) misses.push(`${row.id} ${metric.label}`)
        out.push([row.id, row.workload, metric.label, fmtSummary(tl),
          `${an ? fmtSummary(an) : 'n/a'} ${row.anchor}`, fmtRatio(v.ratio), v.target, mark])
        results.table.push({
          id: row.id,
          workload: row.workload,
          anchor: row.anchor,
          metric: metric.label,
          higher: metric.higher === true,
          target: metric.absolute === undefined && metric.target !== undefined ? metric.target : null,
          absolute: metric.absolute === undefined ? null : metric.absolute,
          threadlock: tl,
          anchorValue: an,
          ratio: v.ratio,
          ok: v.ok
        })
      }
    } catch (err) {
      out.push([row.id, row.workload, 'error', String(err.message).split('\n')[0], '', '', '', 'ERROR'])
      misses.push(`${row.id} error`)
      results.table.push({
        id: row.id,
        workload: row.workload,
        anchor: row.anchor,
        metric: 'error',
        higher: false,
        target: null,
        absolute: null,
        threadlock: null,
        anchorValue: null,
        ratio: null,
        ok: false,
        error: String(err.message).split('\n')[0]
      })
    } finally {
      if (session) await session.close()
    }
  }
  progressDone()
  process.stdout.write(`\n## Side by side (${quick ? 'quick, ' : ''}median (min–max) of ` +
    `${R} rounds unless noted; rows 3/3t/5*: ${quick ? 3 : 5}, row 4: ${quick ? 5 : 11})\n\n`)
  process.stdout.write(table(['#', 'workload', 'metric', 'threadlock', 'anchor', 'ratio', 'target', ''], out))
  process.stdout.write(misses.length
    ? `\nmissed: ${misses.join('; ')}\n`
    : '\nall targets met\n')
}

// Scaling: pending waiters, and threads on the contended lock.

async function runWaiterScaling () {
  const mw = require('./many-waiters')
  const rows = []
  for (const N of [1000, 10000, 100000, 1000000]) {
    const session = await mw.open({ N })
    const rounds = N >= 1000000 ? 3 : 5
    const s = await measure(`waiters ${N}`, session, ['threadlock', 'atomics'], [], rounds, 0)
    const m = (impl, k) => median(s[impl][k])
    const per = (impl) => Object.fromEntries(['createNs', 'wakeNs', 'rssBytes', 'heapBytes'].map((k) => [k, m(impl, k)]))
    ;(results.waiters ||= []).push({ N, threadlock: per('threadlock'), atomics: per('atomics') })
    rows.push([N.toLocaleString('en-US'),
      fmt(m('threadlock', 'createNs')), fmt(m('atomics', 'createNs')),
      fmt(m('threadlock', 'createNs') / m('atomics', 'createNs')),
      fmt(m('threadlock', 'wakeNs')), fmt(m('atomics', 'wakeNs')),
      fmt(m('threadlock', 'wakeNs') / m('atomics', 'wakeNs')),
      fmt(m('threadlock', 'rssBytes')), fmt(m('atomics', 'rssBytes')),
      fmt(m('threadlock', 'heapBytes')), fmt(m('atomics', 'heapBytes'))])
  }
  progressDone()
  process.stdout.write('\n## Scaling: N pending waitAsync on one address (medians; per waiter)\n\n')
  process.stdout.write(table(['N', 'create ns tl', 'create ns Atomics', 'ratio',
    'wake ns tl', 'wake ns Atomics', 'ratio', 'rss B tl', 'rss B Atomics',
    'heap+ext B tl', 'heap+ext B Atomics'], rows))
  process.stdout.write('\n(below 100,000 waiters the bytes mostly show the V8 heap growing in steps of megabytes)\n')
}

// Threads on the contended lock: threadlock's lock under the run's policy
// (the default unless --lock-options), the same lock with { fifo: true }
// (contended.POLICIES.fifo) and the blog lock, in one session per thread
// count so that the three alternate within every round.

const SHAPES = {
  A: 'every thread awaits lock.executeLocked(f) in a loop',
  C: 'the main thread awaits executeLocked(f), the workers block in lock() / f() / unlock()'
}

async function runThreadScaling () {
  const contended = require('./contended')
  const lockOptions = opts.lockOptions === null ? contended.POLICIES.default : opts.lockOptions
  const counts = quick ? [2, 4, 8] : [2, 3, 4, 6, 8, 16]
  const durationMs = quick ? 150 : 300
  const rounds = quick ? 2 : 3
  const impls = ['threadlock', 'fifo', 'blog']
  const points = []
  const rows = []
  for (const shape of Object.keys(SHAPES)) {
    for (const threads of counts) {
      const session = await contended.open({
        kind: 'lock', threads, durationMs, workers: shape === 'A' ? 'async' : 'sync', lockOptions, fifo: true
      })
      let s
      try {
        s = await measure(`threads ${threads} shape ${shape}`, session, impls, [], rounds, 1)
      } finally {
        await session.close()
      }
      const m = (impl, k) => median(s[impl][k])
      const values = {}
      for (const impl of impls) {
        values[impl] = {}
        for (const k of ['throughput', 'share', 'longestMs', 'p99Us']) values[impl][k] = m(impl, k)
      }
      points.push({ shape, threads, values })
      const ratio = (k) => fmtRatio(m('threadlock', k) / m('blog', k))
      const each = (k) => impls.map((impl) => fmt(m(impl, k)))
      rows.push([threads, shape, ...each('throughput'), ratio('throughput'), ...each('share'),
        ...each('longestMs'), ratio('longestMs'), ...each('p99Us')])
    }
  }
  progressDone()
  const policy = lockOptions === undefined ? 'default policy' : JSON.stringify(lockOptions)
  results.threads = {
    durationMs,
    rounds,
    shapes: SHAPES,
    series: {
      threadlock: `threadlock, ${policy}`,
      fifo: `threadlock, ${JSON.stringify(contended.POLICIES.fifo)}`,
      blog: 'the V8 blog\'s lock (bench/blog-lock.js)'
    },
    points
  }
  process.stdout.write(`\n## Scaling: threads on the contended lock (medians of ${rounds} × ${durationMs} ms)\n\n`)
  process.stdout.write(`tl: threadlock, ${policy}; fifo: threadlock, ${JSON.stringify(contended.POLICIES.fifo)}; ` +
    'blog: the blog lock. Shape A: every thread uses executeLocked; C: the main thread uses executeLocked, ' +
    'the workers lock()/unlock(). Targets as for rows 5a-5c: ops/s ratio tl/blog ≥ 1.0, share tl ≤ 1.5, ' +
    'longest wait ratio ≤ 0.5.\n\n')
  const cols = (what) => impls.map((impl) => `${what} ${impl === 'threadlock' ? 'tl' : impl}`)
  process.stdout.write(table(['threads', 'shape', ...cols('ops/s'), 'ratio', ...cols('share'),
    ...cols('longest ms'), 'ratio', ...cols('p99 µs')], rows))
}

// Spin sweep: threadlock under several spin settings against the anchor,
// with 2, 4 and 8 threads. Settings are rotated between rounds.

const SPINS = [0, 200, 1000, 4000]
const SWEEP_ROUNDS = 5

async function sweep (title, unit, higher, configs, anchorName) {
  const rows = []
  const rel = SPINS.map(() => [])
  for (const c of configs) {
    const session = await c.open()
    const tl = SPINS.map(() => [])
    const an = []
    const rounds = SWEEP_ROUNDS
    for (let r = -1; r < rounds; r++) {
      const order = SPINS.map((_, k) => (k + Math.max(r, 0)) % SPINS.length)
      for (const k of order) {
        setSpin(SPINS[k])
        progress(`spin sweep ${title} ${c.label}: spin ${SPINS[k]}, round ${r + 1}`)
        const v = await c.sample(session, 'threadlock')
        if (r >= 0) tl[k].push(v)
      }
      const v = await c.sample(session, anchorName)
      if (r >= 0) an.push(v)
    }
    await session.close()
    const meds = tl.map(median)
    const best = meds.reduce((b, v, k) => ((higher ? v > meds[b] : v < meds[b]) ? k : b), 0)
    meds.forEach((v, k) => rel[k].push(v / meds[0]))
    rows.push([c.label, ...meds.map((v, k) => (k === best ? `**${fmt(v)}**` : fmt(v))),
      fmt(median(an)), SPINS[best]])
  }
  // Back to the run's setting; 0 is what the binding starts with.
  setSpin(opts.spin === null ? 0 : opts.spin)
  progressDone()
  process.stdout.write(`\n### ${title} (${unit}, medians of ${SWEEP_ROUNDS})\n\n`)
  process.stdout.write(table(['threads', ...SPINS.map((s) => `spin ${s}`), anchorName, 'best'], rows))
  return rel
}

async function runSpinSweep () {
  const roundtrip = require('./roundtrip')
  const waitasync = require('./waitasync')
  const contended = require('./contended')
  process.stdout.write('\n## Spin sweep (threadlock with binding.setSpin(n); the anchors do not spin)\n')
  const rels = []
  if (selected('1')) {
    rels.push(['row 1', false, await sweep('row 1: wait/notify round trip', 'µs', false,
      [1, 2, 4].map((pairs) => ({
        label: `${2 * pairs} (${pairs} pair${pairs > 1 ? 's' : ''})`,
        open: () => roundtrip.open({ pairs }),
        sample: (s, impl) => s.sample(impl, 2000)
      })), 'atomics')])
  }
  if (selected('2')) {
    rels.push(['row 2w', false, await sweep('row 2w: main awaits waitAsync, workers sleep in wait()', 'µs per iteration', false,
      [1, 3, 7].map((workers) => ({
        label: `${workers + 1} (main + ${workers})`,
        open: () => waitasync.open({ workers, mode: 'wait' }),
        sample: (s, impl) => s.sample(impl, 1000)
      })), 'atomics')])
  }
  if (selected('5')) {
    const lockOptions = opts.lockOptions === null ? contended.POLICIES.default : opts.lockOptions
    for (const [shape, workers] of [['C', 'sync'], ['A', 'async']]) {
      rels.push([`row 5 shape ${shape}`, true, await sweep(`rows 5a/5c, shape ${shape}: contended lock throughput`, 'ops/s', true,
        [2, 4, 8].map((threads) => ({
          label: String(threads),
          open: () => contended.open({ kind: 'lock', threads, durationMs: 200, workers, lockOptions }),
          sample: async (s, impl) => (await s.sample(impl)).throughput
        })), 'blog')])
    }
  }
  // One number per setting: the geometric mean, over every row and thread
  // count above, of the time relative to spin 0 (throughput inverted).
  const score = SPINS.map((_, k) => {
    let logSum = 0
    let count = 0
    for (const [, higher, rel] of rels) {
      for (const x of rel[k]) {
        logSum += Math.log(higher ? 1 / x : x)
        count++
      }
    }
    return count ? Math.exp(logSum / count) : NaN
  })
  const best = score.reduce((b, v, k) => (v < score[b] ? k : b), 0)
  results.sweep = { spins: SPINS, score, best: SPINS[best] }
  process.stdout.write('\n### Spin setting, all of the above (geometric mean of time relative to spin 0; lower is better)\n\n')
  process.stdout.write(table(SPINS.map((s) => `spin ${s}`), [score.map(fmt)]))
  process.stdout.write(`\nbest: spin ${SPINS[best]}\n`)
}

// Other processes on the machine change every number here; the load average
// at the start and end of the run says whether there were any.
function loadavg () {
  return os.loadavg().map((x) => x.toFixed(2)).join(' ')
}

async function main () {
  // The built-in waitAsync does not keep the event loop alive on its own.
  const keepAlive = setInterval(() => {}, 1 << 30)
  if (opts.spin !== null) setSpin(opts.spin)
  const cpus = os.cpus()
  process.stdout.write(`# threadlock benchmarks\n\nnode ${process.version}, ${os.platform()} ${os.arch()}, ` +
    `${cpus.length} × ${cpus[0] ? cpus[0].model.trim() : 'unknown cpu'}, ` +
    `${Math.round(os.totalmem() / 2 ** 30)} GiB; spin: ${opts.spin === null ? 'binding default' : opts.spin}` +
    `${opts.lockOptions === null ? '' : `; lock options ${JSON.stringify(opts.lockOptions)}`}` +
    `${quick ? '; --quick' : ''}; load average at start ${loadavg()}\n`)
  const t0 = Date.now()
  const loadStart = os.loadavg().map((x) => Number(x.toFixed(2)))
  if (opts.table) await runTable()
  if (opts.waiters && selected('3')) await runWaiterScaling()
  if (opts.threads && selected('5')) await runThreadScaling()
  if (opts.sweep && (selected('1') || selected('2') || selected('5'))) await runSpinSweep()
  const seconds = Math.round((Date.now() - t0) / 1000)
  process.stdout.write(`\n(${seconds} s; load average at end ${loadavg()})\n`)
  clearInterval(keepAlive)
  results.meta = {
    date: new Date(t0).toISOString(),
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    cores: cpus.length,
    cpu: cpus[0] ? cpus[0].model.trim() : 'unknown cpu',
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    commit: gitCommit(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick,
    spin: opts.spin,
    lockOptions: opts.lockOptions,
    loadStart,
    loadEnd: os.loadavg().map((x) => Number(x.toFixed(2))),
    seconds
  }
  const dir = opts.out !== null
    ? opts.out
    : opts.full ? charts.DOCS : path.join(__dirname, '..', 'build', 'bench')
  const written = charts.writeAll(results, dir)
  process.stdout.write(`\nresults and charts: ${written.map((f) => path.relative(process.cwd(), f)).join(', ')}\n`)
}

// The commit measured, with '+' when the work tree differs from it; null
// outside a git checkout.
function gitCommit () {
  const git = (...args) => spawnSync('git', args, { cwd: __dirname, encoding: 'utf8' })
  const head = git('rev-parse', '--short', 'HEAD')
  if (head.status !== 0) return null
  const dirty = git('status', '--porcelain', '--untracked-files=no')
  return head.stdout.trim() + (dirty.status === 0 && dirty.stdout.trim() !== '' ? '+' : '')
}

main().catch((err) => {
  progressDone()
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`)
  process.exitCode = 1
})
