'use strict'

// Two installed copies of threadlock in one process (src/singleton.c): the
// first to load serves the process, any other refuses to load with an error
// that names both files. Each scenario runs in a process of its own
// (test/fixtures/two-copies.js) over two copies of this package in two
// temporary directories.

const assert = require('assert')
const { execFileSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const FIXTURE = path.join(__dirname, 'fixtures', 'two-copies.js')

// The refusal, word for word; `core` is the file of the copy that serves the
// process, `self` the file of the copy that refuses.
function refusal (core, self) {
  return {
    code: 'ERR_THREADLOCK_DUPLICATE',
    message: `threadlock: another copy of threadlock is already loaded in this process, from ${core}. ` +
      `This copy, ${self}, refuses to load: two copies keep separate tables of waiters, so a wait ` +
      'or a lock request made through one would never be woken through the other. Make every ' +
      'dependency use one copy: `npm ls threadlock` lists them; `npm dedupe`, or one version ' +
      'pinned with "overrides" in package.json, leaves one.'
  }
}

describe('two copies of threadlock in one process', function () {
  this.timeout(60000)
  let tmp, A, B, fileA, fileB

  // Installs a copy of this package (its JavaScript and the compiled addon,
  // copied, so that the two copies are two files) under `dir`.
  function install (dir) {
    const pkg = path.join(dir, 'node_modules', 'threadlock')
    for (const file of ['package.json', 'index.js', 'index.mjs', 'lib']) {
      fs.cpSync(path.join(root, file), path.join(pkg, file), { recursive: true })
    }
    const addon = require('node-gyp-build').resolve(root)
    const file = path.join(pkg, 'build', 'Release', 'threadlock.node')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.copyFileSync(addon, file)
    fs.symlinkSync(path.dirname(require.resolve('node-gyp-build/package.json')),
      path.join(dir, 'node_modules', 'node-gyp-build'), 'dir')
    return { pkg, file }
  }

  function run (scenario) {
    const out = execFileSync(process.execPath, [FIXTURE, scenario, A, B], {
      cwd: tmp, encoding: 'utf8', timeout: 30000, stdio: ['ignore', 'pipe', 'pipe']
    })
    return JSON.parse(out)
  }

  before(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-copies-')));
    ({ pkg: A, file: fileA } = install(path.join(tmp, 'a')));
    ({ pkg: B, file: fileB } = install(path.join(tmp, 'b')))
    // Two files, not two names of one: the loader would map one file once.
    assert.notStrictEqual(fs.statSync(fileA).ino, fs.statSync(fileB).ino)
  })

  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('main thread: the second copy refuses to load, naming both files; the first keeps working', () => {
    assert.deepStrictEqual(run('main'), {
      a: true,
      b: refusal(fileA, fileB),
      again: refusal(fileA, fileB)
    })
  })

  it('a worker: the copy the main thread loaded works there, the other copy is refused', () => {
    assert.deepStrictEqual(run('worker'), { a: true, b: refusal(fileA, fileB) })
  })

  it('the first copy loaded by a worker serves the process, also after that worker ended', () => {
    assert.deepStrictEqual(run('first_in_worker'), {
      a: true,
      b: refusal(fileA, fileB),
      after: refusal(fileA, fileB)
    })
  })

  it('two workers loading two copies at the same moment: exactly one loads', () => {
    for (let i = 0; i < 6; i++) {
      const { a, b } = run('race')
      if (a === true) {
        assert.deepStrictEqual(b, refusal(fileA, fileB))
      } else {
        assert.strictEqual(b, true)
        assert.deepStrictEqual(a, refusal(fileB, fileA))
      }
    }
  })

  it('one copy in the main thread and four workers works as before', () => {
    assert.deepStrictEqual(run('many'), { a: true, workers: 4 })
  })
})
