'use strict'

// The documentation tells the truth by construction:
// - every ```js block of README.md and docs/api.md runs as a script of its
//   own, with require('threadlock') / import 'threadlock' resolving to this
//   checkout; a block followed by a ```text block must print exactly that
//   text; the scripts in examples/ run as well;
// - the README stays at most 500 lines;
// - the numbers the README quotes that the code defines (the lock policy,
//   the count of bad-input rows, the stress sizes, a binary size if it
//   quotes one) are read from the code and compared;
// - every export has its place in docs/api.md, and every relative link of
//   both files reaches a file and a heading that exist.
// The harness is tested too: a failing snippet and a wrong output must be
// reported.

const assert = require('assert')
const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const README = path.join(root, 'README.md')
const API = path.join(root, 'docs', 'api.md')
const { needServer } = require('./fixtures/pg-env')

const MAX_README_LINES = 500

// The fenced blocks of a Markdown text: { lang, code, line, output }, where
// `output` is the text of a ```text block that follows directly.
function codeBlocks (markdown) {
  const lines = markdown.split('\n')
  const blocks = []
  for (let i = 0; i < lines.length; i++) {
    // Fences may be indented (a block inside a list item).
    const open = /^( *)```(\S*)/.exec(lines[i])
    if (!open) continue
    const [, indent, lang] = open
    const start = i
    const body = []
    for (i++; i < lines.length && !/^ *```\s*$/.test(lines[i]); i++) {
      body.push(lines[i].startsWith(indent) ? lines[i].slice(indent.length) : lines[i])
    }
    blocks.push({ lang, code: body.join('\n') + '\n', line: start + 1, end: i })
  }
  return blocks.filter((b, k) => {
    if (b.lang !== 'js') return false
    const next = blocks[k + 1]
    if (next && next.lang === 'text' &&
        lines.slice(b.end + 1, next.line - 1).every((l) => l.trim() === '')) {
      b.output = next.code
    }
    return true
  })
}

// A directory in which 'threadlock' resolves to this checkout, the way it
// would in a project that installed it.
function sandbox () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-readme-'))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'threadlock'), 'dir')
  // pg as well, as a project using threadlock/postgres installs it.
  fs.symlinkSync(path.join(root, 'node_modules', 'pg'), path.join(dir, 'node_modules', 'pg'), 'dir')
  return dir
}

// Runs one block; returns null when it passed, otherwise why it failed.
function runBlock (dir, block, name) {
  const esm = /^\s*(import|export)\s/m.test(block.code)
  const file = path.join(dir, `${name}${esm ? '.mjs' : '.js'}`)
  fs.writeFileSync(file, block.code)
  // The temporary directories an example makes land in the sandbox, which
  // is removed after the document's blocks ran.
  const tmp = path.join(dir, 'tmp')
  fs.mkdirSync(tmp, { recursive: true })
  const env = { ...process.env, TMPDIR: tmp }
  const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 20000 })
  if (r.error) return `could not run: ${r.error.message}`
  if (r.status !== 0 || r.signal) {
    return `exited with ${r.signal || r.status}\n--- stderr ---\n${r.stderr}--- stdout ---\n${r.stdout}`
  }
  if (block.output !== undefined && r.stdout.trimEnd() !== block.output.trimEnd()) {
    return `printed\n${r.stdout}\ninstead of\n${block.output}`
  }
  return null
}

// Features the documents describe that another branch adds. A block that
// uses one runs only where the feature exists (and shows as pending where
// it does not); once every branch is merged, every block runs.
const HAS_HOST = fs.existsSync(path.join(root, 'host.js'))
const HAS_OPTIONS_OBJECT = (() => {
  try {
    return new (require('..').AsyncLock)({ fifo: true }).fifo === true
  } catch {
    return false
  }
})()

function missingFeature (block) {
  if (block.code.includes("'threadlock/host'")) {
    if (!HAS_HOST) return 'threadlock/host is not in this checkout (host.js)'
    if (process.platform !== 'linux') return 'threadlock/host runs on Linux only'
    if (block.code.includes('openSharedMemory') && Number(process.versions.node.split('.')[0]) < 22) {
      return 'openSharedMemory needs Node.js 22 or later'
    }
  }
  if (/new (?:AsyncLock|Semaphore|RWLock|ConditionVariable|Barrier|CountDownLatch)\((?:[^,()]+, )?\{/.test(block.code) && !HAS_OPTIONS_OBJECT) {
    return 'constructors that take one options object are not in this checkout'
  }
  return null
}

// The blocks of one document as mocha tests.
function runsBlocks (file, minBlocks) {
  const name = path.relative(root, file)
  const markdown = fs.readFileSync(file, 'utf8')
  const blocks = codeBlocks(markdown)
  let dir
  before(() => { dir = sandbox() })
  after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

  it(`has at least ${minBlocks} runnable examples`, () => {
    assert.ok(blocks.length >= minBlocks, `only ${blocks.length} js blocks found in ${name}`)
  })

  for (const block of blocks) {
    const first = block.code.split('\n').find((l) => l.trim() && !l.startsWith('//')) || ''
    // The examples of threadlock/postgres need its test server, and skip
    // without one as its tests do (test/fixtures/pg-env.js).
    const server = block.code.includes("'threadlock/postgres'")
    it(`line ${block.line}: ${first.slice(0, 60)}`, async function () {
      const missing = missingFeature(block)
      if (missing !== null) {
        process.stderr.write(`    (${name} line ${block.line} not run: ${missing})\n`)
        this.skip()
      }
      if (server) await needServer().call(this)
      const failure = runBlock(dir, block, `${path.basename(file, '.md')}-line-${block.line}`)
      assert.strictEqual(failure, null, `${name} line ${block.line}: ${failure}`)
    })
  }
}

// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to
// hyphens; a repeated heading gets -1, -2...
function anchors (markdown) {
  const seen = new Map()
  const out = new Set()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^ *```/.test(line)) fenced = !fenced
    const m = !fenced && /^#{1,6} +(.*?)\s*$/.exec(line)
    if (!m) continue
    const base = m[1].replace(/`/g, '').toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const n = seen.get(base) || 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

// The relative links of a Markdown file: [{ target, file, anchor }].
function relativeLinks (file) {
  const markdown = fs.readFileSync(file, 'utf8').replace(/^ *```[\s\S]*?^ *```/gm, '')
  const links = []
  for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]
    if (/^[a-z]+:/i.test(target)) continue
    const [where, anchor] = target.split('#')
    links.push({ target, file: where === '' ? file : path.resolve(path.dirname(file), where), anchor })
  }
  return links
}

// How many mocha tests a file defines, without running them.
function testCount (file) {
  const r = spawnSync(process.execPath, [require.resolve('mocha/bin/mocha.js'), '--no-config', '--dry-run', '--reporter', 'json', file],
    { cwd: root, encoding: 'utf8', timeout: 60000 })
  assert.strictEqual(r.status, 0, `mocha --dry-run ${file} failed:\n${r.stderr}`)
  return JSON.parse(r.stdout).stats.tests
}

// Every number that `pattern` (one capture group) finds in `text`, as a
// number ("2,048" -> 2048).
function quoted (text, pattern) {
  return [...text.matchAll(pattern)].map((m) => Number(m[1].replace(/,/g, '')))
}

describe('README.md', function () {
  this.timeout(30000)
  const markdown = fs.readFileSync(README, 'utf8')

  it(`is at most ${MAX_README_LINES} lines`, () => {
    const lines = markdown.split('\n').length - (markdown.endsWith('\n') ? 1 : 0)
    assert.ok(lines <= MAX_README_LINES, `README.md has ${lines} lines; move detail to docs/api.md`)
  })

  describe('the numbers it quotes are the code\'s', function () {
    const { lockPolicy } = require('..')
    const docs = { 'README.md': markdown, 'docs/api.md': fs.readFileSync(API, 'utf8') }

    // Each quote must be found at least once in the README (a rewording
    // must update this test instead of escaping it) and must be right
    // wherever it appears. The slice's numbers live in docs/api.md only
    // (the README points there), so they are looked for there.
    const quotes = [
      ['lockPolicy.sliceGrants', /(\d[\d,]*) grants/g, () => lockPolicy.sliceGrants, 'docs/api.md'],
      ['lockPolicy.sliceMs', /grants or (\d[\d.]*) ms/g, () => lockPolicy.sliceMs, 'docs/api.md'],
      ['lockPolicy.starvationMs', /waited (\d[\d.]*) ms/g, () => lockPolicy.starvationMs],
      ['lockPolicy.starvationMs', /critical section plus (\d[\d.]*) ms/g, () => lockPolicy.starvationMs],
      ['bad-input rows', /bad-input\.test\.js`, (\d[\d,]*) rows/g, () => testCount('test/bad-input.test.js')],
      ['npm run stress increments', /(\d[\d,]*) contended\s+increments/g, () => {
        const scale = Number(/THREADLOCK_STRESS_SCALE \|\| '(\d+)'/.exec(fs.readFileSync(path.join(root, 'test/stress/run.js'), 'utf8'))[1])
        const per = Number(/INCREMENTS = (\d+) \* STRESS_SCALE/.exec(fs.readFileSync(path.join(root, 'test/lock-stress.test.js'), 'utf8'))[1])
        return per * scale
      }]
    ]
    for (const [what, pattern, actual, home = 'README.md'] of quotes) {
      it(`${what}: ${pattern.source}`, () => {
        const expected = actual()
        assert.ok(quoted(docs[home], pattern).length > 0, `${home} no longer quotes ${what} as ${pattern}`)
        if (home !== 'README.md') {
          assert.deepStrictEqual(quoted(markdown, pattern), [], `README.md quotes ${what}: the policy's numbers belong in ${home}`)
        }
        for (const [name, text] of Object.entries(docs)) {
          for (const value of quoted(text, pattern)) {
            assert.strictEqual(value, expected, `${name} quotes ${what} as ${value}; the code says ${expected}`)
          }
        }
      })
    }

    it('the policy section of docs/api.md states the slice and the courtesy wait in words', () => {
      const section = docs['docs/api.md'].slice(docs['docs/api.md'].indexOf('### lockPolicy'))
      assert.deepStrictEqual(quoted(section, /at most (\d[\d,]*) grants/g), [lockPolicy.sliceGrants])
      assert.deepStrictEqual(quoted(section, /previous holder (\d[\d.]*) µs/g).slice(0, 1), [lockPolicy.courtesyMicros])
    })

    it('lockPolicy.courtesyMicros in docs/api.md', () => {
      const values = quoted(docs['docs/api.md'], /previous holder (\d[\d.]*) µs/g)
      assert.ok(values.length > 0, 'docs/api.md no longer quotes the courtesy wait')
      for (const v of values) assert.strictEqual(v, lockPolicy.courtesyMicros)
    })

    it('quotes no binary size, or one within 10% of the binary', () => {
      const sizes = quoted(markdown, /(\d[\d.]*)\s*(?:KB|kB|KiB)\b/g)
      if (sizes.length === 0) return
      const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`)
      const file = fs.existsSync(dir)
        ? path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.node')))
        : path.join(root, 'build', 'Release', 'threadlock.node')
      const kb = fs.statSync(file).size / 1000
      for (const size of sizes) {
        assert.ok(Math.abs(size - kb) <= 0.1 * kb, `README.md quotes ${size} kB; ${path.relative(root, file)} is ${kb.toFixed(1)} kB`)
      }
    })
  })

  describe('code blocks', function () {
    runsBlocks(README, 8)
  })

  describe('the harness', () => {
    let dir
    before(() => { dir = sandbox() })
    after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

    it('reports a block that throws', () => {
      const failure = runBlock(dir, { code: "require('threadlock')\nthrow new Error('boom')\n" }, 'bad-throw')
      assert.match(failure, /exited with 1[\s\S]*boom/)
    })

    it('reports a block that prints something else than its output block', () => {
      const [block] = codeBlocks("```js\nconsole.log(require('threadlock').wait.name)\n```\n\n```text\nnotify\n```\n")
      assert.strictEqual(block.output, 'notify\n')
      assert.match(runBlock(dir, block, 'bad-output'), /printed\nwait/)
    })

    it('resolves threadlock to this checkout, for require and import', () => {
      const block = {
        code: "import { createRequire } from 'module'\nimport * as t from 'threadlock'\n" +
          "console.log(createRequire(import.meta.url)('threadlock').wait === t.wait)\n",
        output: 'true\n'
      }
      assert.strictEqual(runBlock(dir, block, 'resolve'), null)
    })

    it('finds quoted numbers and anchors as the checks above expect', () => {
      assert.deepStrictEqual(quoted('after 2,048 grants or 0.3 ms, waited 1 ms', /(\d[\d,]*) grants/g), [2048])
      assert.deepStrictEqual([...anchors('# A\n### wait(typedArray, index[, count])\n## `threadlock/host`\n## A\n```\n# not\n```\n')],
        ['a', 'waittypedarray-index-count', 'threadlockhost', 'a-1'])
    })
  })
})

describe('docs/api.md', function () {
  this.timeout(30000)
  const markdown = fs.readFileSync(API, 'utf8')
  const headings = markdown.split('\n').filter((l) => /^#{2,4} /.test(l)).join('\n')

  it('has a heading for every export of threadlock', () => {
    const missing = Object.keys(require('..')).filter((name) => !headings.includes(name))
    assert.deepStrictEqual(missing, [], 'exports without a heading in docs/api.md')
  })

  // The other entry points: every export named in its own section.
  const entries = [['threadlock/postgres', 'postgres.js'], ['threadlock/host', 'host.js'], ['threadlock/lockfile', 'lockfile.js']]
  for (const [entry, file] of entries) {
    it(`names every export of ${entry} in its section`, function () {
      if (!fs.existsSync(path.join(root, file))) {
        process.stderr.write(`    (${entry} is not in this checkout)\n`)
        this.skip()
      }
      const start = markdown.indexOf(`\n## ${entry}\n`)
      assert.ok(start >= 0, `docs/api.md has no section "## ${entry}"`)
      const next = markdown.indexOf('\n## ', start + 1)
      const section = markdown.slice(start, next < 0 ? undefined : next)
      const missing = Object.keys(require(path.join(root, file))).filter((name) => !section.includes(name))
      assert.deepStrictEqual(missing, [], `exports of ${entry} not named in its section of docs/api.md`)
    })
  }

  describe('code blocks', function () {
    runsBlocks(API, 15)
  })
})

describe('links of README.md and docs/api.md', function () {
  // Sections that another branch adds to a file; a link to one is checked
  // once the feature is in the checkout.
  const pending = HAS_HOST ? [] : ['bench/README.md#threadlockhost']
  for (const file of [README, API]) {
    it(`${path.relative(root, file)}: every relative link reaches a file and a heading`, () => {
      const broken = []
      for (const link of relativeLinks(file)) {
        const rel = path.relative(root, link.file)
        if (pending.includes(`${rel}#${link.anchor}`)) continue
        if (!fs.existsSync(link.file)) {
          broken.push(`${link.target}: no such file`)
        } else if (link.anchor !== undefined && link.file.endsWith('.md') &&
            !anchors(fs.readFileSync(link.file, 'utf8')).has(link.anchor)) {
          broken.push(`${link.target}: no such heading in ${rel}`)
        }
      }
      assert.deepStrictEqual(broken, [])
    })
  }
})

describe('examples/', function () {
  this.timeout(30000)
  const dir = path.join(root, 'examples')
  for (const name of fs.readdirSync(dir).filter((f) => /\.m?js$/.test(f)).sort()) {
    it(`${name} runs`, () => {
      const r = spawnSync(process.execPath, [path.join(dir, name)], { cwd: root, encoding: 'utf8', timeout: 20000 })
      assert.strictEqual(r.status, 0, `examples/${name} exited with ${r.signal || r.status}\n${r.stderr}`)
    })
  }
})
