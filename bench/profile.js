'use strict'

// Runs one contended row (bench/contended.js) for one implementation only,
// so that a profiler sees that implementation alone:
//
//   node bench/profile.js <row> <impl> [seconds]
//   perf record -F 1999 -g node --perf-basic-prof bench/profile.js 5c threadlock 4
//
// <row> is 5a, 5b, 5c, 5sem or 5rw (the shapes of bench/run.js), <impl>
// 'threadlock' or 'blog'. It samples back to back for about `seconds` (3 by
// default) and prints each sample's figures as JSON lines, so that a
// profile can be read next to what the run measured. bench/README.md
// ("Profiles of the misses") says what the profiles of the last run showed.

const contended = require('./contended')

const ROWS = {
  '5a': { kind: 'lock', threads: 4 },
  '5b': { kind: 'lock', threads: 8 },
  '5c': { kind: 'lock', threads: 4, workers: 'sync' },
  '5sem': { kind: 'semaphore', threads: 4, permits: 2 },
  '5rw': { kind: 'rwlock', threads: 4, workers: 'sync' }
}

async function main () {
  const [rowId, impl, secondsArg] = process.argv.slice(2)
  const shape = ROWS[rowId]
  if (shape === undefined) throw new Error(`bench/profile.js: row must be one of ${Object.keys(ROWS).join(', ')}; got ${rowId}`)
  if (impl !== 'threadlock' && impl !== 'blog') throw new Error(`bench/profile.js: impl must be threadlock or blog; got ${impl}`)
  const seconds = secondsArg === undefined ? 3 : Number(secondsArg)
  if (!(seconds > 0 && seconds <= 600)) throw new Error(`bench/profile.js: seconds must be in (0, 600]; got ${secondsArg}`)
  const session = await contended.open({ durationMs: 500, ...shape })
  try {
    const end = Date.now() + seconds * 1000
    while (Date.now() < end) console.log(JSON.stringify({ row: rowId, impl, ...await session.sample(impl) }))
  } finally {
    await session.close()
  }
}

main().catch((err) => {
  console.error(err.message)
  process.exitCode = 1
})
