'use strict'

// The recipes of examples/recipes/ (README, "Which primitive for which
// job") run and print what they should, in each of their three forms:
// CommonJS (.js), ES modules (.mjs, workers as new Worker(new URL(
// import.meta.url))) and TypeScript (.mts). The TypeScript forms are
// type-checked under `strict` against this checkout's declarations and
// @types/node, compiled by tsd's TypeScript and the output run (Node 20
// cannot strip types; Node 22.6+ could run the .mts directly).
// Each runs as a project that installed threadlock would run it: from a
// directory where 'threadlock' resolves to this checkout.

const assert = require('assert')
const { spawn, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const { hostSupported } = require('../lib/native')
// The recipes on threadlock/host, which is Linux-only for now.
const HOST = ['cli-shared-directory', 'leader-election']
const RECIPES = path.join(root, 'examples', 'recipes')
const tsc = path.join(path.dirname(require.resolve('@tsd/typescript/package.json', {
  paths: [path.dirname(require.resolve('tsd'))]
})), 'typescript', 'bin', 'tsc')

// What each recipe prints.
const EXPECTED = {
  'producer-consumer': 'consumed 100 jobs, sum 5050',
  'read-mostly-cache': 'version 20, torn reads: 0',
  'main-awaits-condition': 'all 4 jobs done',
  'cli-shared-directory': 'counter 100, journal lines 100',
  'leader-election': 'term 1: a leader\nterm 2: a leader, after a leader that died\nterm 3: a leader'
}

function run (file, cwd) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { err += d })
    const timer = setTimeout(() => p.kill('SIGKILL'), 30000)
    p.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, out, err })
    })
  })
}

describe('recipes (examples/recipes/)', function () {
  this.timeout(60000)
  let dir

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-recipes-'))
    fs.mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true })
    fs.symlinkSync(root, path.join(dir, 'node_modules', 'threadlock'), 'dir')
    fs.symlinkSync(path.join(root, 'node_modules', '@types', 'node'), path.join(dir, 'node_modules', '@types', 'node'), 'dir')
    for (const f of fs.readdirSync(RECIPES)) fs.copyFileSync(path.join(RECIPES, f), path.join(dir, f))
  })

  after(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('every recipe has its three forms, and nothing else is there', () => {
    const files = fs.readdirSync(RECIPES).sort()
    const expected = Object.keys(EXPECTED).flatMap((n) => [`${n}.js`, `${n}.mjs`, `${n}.mts`]).sort()
    assert.deepStrictEqual(files, expected)
  })

  it('the README links every form of every recipe', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
    for (const name of Object.keys(EXPECTED)) {
      for (const ext of ['js', 'mjs', 'mts']) {
        assert.ok(readme.includes(`](examples/recipes/${name}.${ext})`), `README.md does not link examples/recipes/${name}.${ext}`)
      }
    }
  })

  for (const [name, expected] of Object.entries(EXPECTED)) {
    for (const ext of ['js', 'mjs']) {
      it(`${name}.${ext} prints what it should`, async function () {
        if (!hostSupported && HOST.includes(name)) this.skip()
        const r = await run(`${name}.${ext}`, dir)
        assert.deepStrictEqual({ code: r.code, out: r.out.trimEnd() }, { code: 0, out: expected }, r.err)
      })
    }
  }

  describe('TypeScript', function () {
    let compiled
    before(function () {
      this.timeout(120000)
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'node16',
          moduleResolution: 'node16',
          target: 'es2022',
          lib: ['es2022'],
          types: ['node'],
          outDir: 'out',
          rootDir: '.'
        },
        include: ['*.mts']
      }))
      compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8', timeout: 120000 })
    })

    it('the .mts recipes type-check under strict against the declarations of threadlock and @types/node', () => {
      assert.deepStrictEqual({ status: compiled.status, output: (compiled.stdout + compiled.stderr).trim() }, { status: 0, output: '' })
    })

    for (const [name, expected] of Object.entries(EXPECTED)) {
      it(`${name}.mts, compiled, prints what it should`, async function () {
        if (!hostSupported && HOST.includes(name)) this.skip()
        const r = await run(path.join('out', `${name}.mjs`), dir)
        assert.deepStrictEqual({ code: r.code, out: r.out.trimEnd() }, { code: 0, out: expected }, r.err)
      })
    }
  })
})
