'use strict'

// npm run test:types: tsd over every entry point's declarations, two runs
// at a time (each run loads TypeScript and the libraries on its own, so on
// two cores two at once take about half as long as one after another).
// Each run's output is printed whole once it ends; the exit status is 1 if
// any run failed.

const { spawn } = require('child_process')
const path = require('path')

const tsd = path.join(path.dirname(require.resolve('tsd')), 'cli.js')
const runs = [
  [],
  ['--typings', 'postgres.d.ts', '--files', 'postgres.test-d.ts'],
  ['--typings', 'host.d.ts', '--files', 'host.test-d.ts'],
  ['--typings', 'lockfile.d.ts', '--files', 'lockfile.test-d.ts']
]
const AT_ONCE = 2

let failed = false
let next = 0

function start () {
  if (next === runs.length) return Promise.resolve()
  const args = runs[next++]
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [tsd, ...args], { cwd: path.join(__dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { out += d })
    p.on('close', (code) => {
      const label = `tsd ${args.join(' ')}`.trim()
      process.stdout.write(`${code === 0 ? 'ok' : 'FAILED'}: ${label}\n${out}`)
      if (code !== 0) failed = true
      resolve(start())
    })
  })
}

Promise.all(Array.from({ length: AT_ONCE }, start)).then(() => {
  process.exitCode = failed ? 1 : 0
})
