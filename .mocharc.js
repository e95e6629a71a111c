'use strict'

// mocha's settings for `npm test`: every test/*.test.js but the PostgreSQL
// files (`npm run test:postgres` runs those one at a time against one
// server), three files at a time on the two cores of CI: many files wait
// (for timers, processes, a deadline) as much as they compute, and with two
// at a time a core idled while both waited. Measured on this 2-core machine
// (issue 27): two at a time 97-106 s, three 85-98 s for the same 159-194 s
// of CPU.
//
// The files that take longest start first, so that the last minute of a
// run is not one long file on one core while the other idles: a parallel
// run hands the files out in the order of `spec`. The order is that of
// each file's wall time run alone (mocha --reporter json and
// /usr/bin/time -v, issue 27); a file not named here starts after these,
// in alphabetical order. The host files wait for processes more than they
// compute, so they start early, beside the ones that compute.

const fs = require('fs')
const path = require('path')

const LONGEST_FIRST = [
  'robustness',
  'lock-contract',
  'termination-stress',
  'host-processes',
  'types',
  'host-crash',
  'readme',
  'host-faults',
  'recipes',
  'host-helper',
  'atomics-threads',
  'host-trust',
  'named-locks-differential'
]

const all = fs.readdirSync(path.join(__dirname, 'test'))
  .filter((f) => f.endsWith('.test.js') && !f.startsWith('postgres-'))
  .sort()
const first = LONGEST_FIRST.map((name) => `${name}.test.js`).filter((f) => all.includes(f))
const spec = [...first, ...all.filter((f) => !first.includes(f))].map((f) => `test/${f}`)

module.exports = {
  spec,
  timeout: 30000,
  slow: 2000,
  parallel: true,
  jobs: 3
}
