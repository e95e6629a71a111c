'use strict'

// How the package finds its native addon (node-gyp-build: build/Release
// first, then prebuilds/<platform>-<arch>/), and that `import` and `require`
// share one instance of it.

const assert = require('assert')
const { execFileSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const tuple = `${os.platform()}-${os.arch()}`

// Runs a script in a fresh node process and returns its stdout.
function node (args, options = {}) {
  return execFileSync(process.execPath, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20000,
    ...options
  })
}

// The .node files in require.cache: every native module loaded so far.
function loadedAddons () {
  return Object.keys(require.cache).filter((file) => file.endsWith('.node'))
}

describe('loader', () => {
  it('loads the addon from the file node-gyp-build resolves, in build/Release or prebuilds/', () => {
    const { binding } = require('../lib/native')
    const resolved = require('node-gyp-build').resolve(root)
    const allowed = [path.join(root, 'build', 'Release'), path.join(root, 'prebuilds', tuple)]
    assert.ok(allowed.includes(path.dirname(resolved)),
      `resolved ${resolved}, expected a file in ${allowed.join(' or ')}`)
    assert.ok(require.cache[resolved], `${resolved} is not the module that was loaded`)
    assert.strictEqual(require.cache[resolved].exports, binding)
    assert.deepStrictEqual(loadedAddons(), [resolved], 'exactly one copy of the addon is loaded')
  })

  it('loads a prebuild from prebuilds/<platform>-<arch>/ when there is no build/ directory', function () {
    this.timeout(30000)
    // A package without build/: the JavaScript files, package.json and a
    // binary where prebuildify puts it. The binary is the real prebuild when
    // `npm run prebuild` made one, otherwise a copy of the compiled addon.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-loader-'))
    try {
      for (const file of ['package.json', 'index.js', 'index.mjs', 'lib']) {
        fs.cpSync(path.join(root, file), path.join(dir, file), { recursive: true })
      }
      fs.mkdirSync(path.join(dir, 'node_modules'))
      fs.symlinkSync(path.dirname(require.resolve('node-gyp-build/package.json')),
        path.join(dir, 'node_modules', 'node-gyp-build'), 'dir')
      const prebuilds = path.join(root, 'prebuilds', tuple)
      const real = fs.existsSync(prebuilds)
        ? fs.readdirSync(prebuilds).find((f) => f.endsWith('.node'))
        : undefined
      const source = real ? path.join(prebuilds, real) : require('node-gyp-build').resolve(root)
      const name = real || 'threadlock.node'
      fs.mkdirSync(path.join(dir, 'prebuilds', tuple), { recursive: true })
      fs.copyFileSync(source, path.join(dir, 'prebuilds', tuple, name))

      const script = `
        const assert = require('assert')
        const { Worker } = require('worker_threads')
        const dir = ${JSON.stringify(dir)}
        const threadlock = require(dir)
        const resolved = require('node-gyp-build').resolve(dir)
        assert.strictEqual(resolved, require('path').join(dir, 'prebuilds', ${JSON.stringify(tuple)}, ${JSON.stringify(name)}))
        assert.ok(require.cache[resolved], 'the prebuild is the module that was loaded')
        // The prebuild works, in this thread and in a worker.
        const ta = new Int32Array(new SharedArrayBuffer(4))
        const worker = new Worker(
          'const { workerData } = require("worker_threads");' +
          'const t = require(workerData.dir);' +
          'const r = t.wait(new Int32Array(workerData.buffer), 0, 0, 10000);' +
          'if (r !== "ok") throw new Error(r)',
          { eval: true, workerData: { dir, buffer: ta.buffer } })
        const poll = setInterval(() => {
          if (threadlock.waiterCount(ta, 0) === 0) return
          clearInterval(poll)
          assert.strictEqual(threadlock.notify(ta, 0), 1)
        }, 2)
        worker.on('error', (err) => { throw err })
        worker.on('exit', (code) => { if (code === 0) console.log('loaded ' + resolved) })
      `
      const out = node(['-e', script], { cwd: dir })
      assert.match(out, new RegExp(`^loaded .*${name.replace(/\./g, '\\.')}\\n$`))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('gives import and require one shared instance of the module', () => {
    // Inside the package, 'threadlock' resolves to the package itself
    // through its "exports" map.
    const script = `
      import assert from 'assert'
      import { createRequire } from 'module'
      import * as esm from 'threadlock'
      import threadlock, { AsyncLock, wait } from 'threadlock'
      const cjs = createRequire(import.meta.url)('threadlock')
      assert.strictEqual(threadlock, cjs)
      assert.strictEqual(AsyncLock, cjs.AsyncLock)
      assert.strictEqual(wait, cjs.wait)
      // Newer Node adds a 'module.exports' export to the namespace of every
      // CommonJS module, and 'export *' passes it on. What this Node adds is
      // read from a plain CommonJS file of the package, so that index.mjs
      // must re-export exactly the names of index.js plus those.
      const probe = await import('./lib/errors.js')
      const probed = createRequire(import.meta.url)('./lib/errors.js')
      const added = Object.keys(probe).filter((k) => k !== 'default' && !(k in probed))
      assert.ok(added.every((k) => k === 'module.exports'), 'unexpected names in a CommonJS namespace: ' + added)
      if (added.length > 0) assert.strictEqual(esm['module.exports'], cjs)
      const named = Object.keys(esm).filter((k) => k !== 'default').sort()
      assert.deepStrictEqual(named, [...Object.keys(cjs), ...added].sort(), 'index.mjs re-exports every export of index.js')
      const addons = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.endsWith('.node'))
      assert.strictEqual(addons.length, 1, 'one copy of the addon: ' + addons)
      console.log('ok')
    `
    assert.strictEqual(node(['--input-type=module', '-e', script], { cwd: root }), 'ok\n')
  })

  it('declares every export of index.js in index.d.ts', () => {
    const dts = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
    const declared = new Set([...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1]))
    const missing = Object.keys(require('..')).filter((name) => !declared.has(name))
    assert.deepStrictEqual(missing, [], 'exports without a declaration in index.d.ts')
  })

  it('maps require to index.js and import to index.mjs through "exports"', () => {
    const script = `
      import { createRequire } from 'module'
      console.log(createRequire(import.meta.url).resolve('threadlock'))
      console.log(new URL(import.meta.resolve('threadlock')).pathname)
    `
    const [required, imported] = node(['--input-type=module', '-e', script], { cwd: root }).trim().split('\n')
    assert.strictEqual(required, path.join(root, 'index.js'))
    assert.strictEqual(imported, path.join(root, 'index.mjs'))
  })
})
