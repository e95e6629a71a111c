'use strict'

// Every ```js block of README.md runs as a script of its own, with
// require('threadlock') / import 'threadlock' resolving to this checkout.
// A block followed by a ```text block must print exactly that text. The
// scripts in examples/ must run as well. The harness is tested too: a
// failing snippet and a wrong output must be reported.

const assert = require('assert')
const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const README = path.join(root, 'README.md')
const { needServer } = require('./fixtures/pg-env')

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
  const r = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 20000 })
  if (r.error) return `could not run: ${r.error.message}`
  if (r.status !== 0 || r.signal) {
    return `exited with ${r.signal || r.status}\n--- stderr ---\n${r.stderr}--- stdout ---\n${r.stdout}`
  }
  if (block.output !== undefined && r.stdout.trimEnd() !== block.output.trimEnd()) {
    return `printed\n${r.stdout}\ninstead of\n${block.output}`
  }
  return null
}

describe('README.md', function () {
  this.timeout(30000)
  let dir
  before(() => { dir = sandbox() })
  after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

  const markdown = fs.readFileSync(README, 'utf8')
  const blocks = codeBlocks(markdown)

  it('has runnable examples', () => {
    assert.ok(blocks.length >= 10, `only ${blocks.length} js blocks found`)
  })

  for (const block of blocks) {
    const first = block.code.split('\n').find((l) => l.trim() && !l.startsWith('//')) || ''
    // The examples of threadlock/postgres need its test server, and skip
    // without one as its tests do (test/fixtures/pg-env.js).
    const server = block.code.includes("'threadlock/postgres'")
    it(`line ${block.line}: ${first.slice(0, 60)}`, async function () {
      if (server) await needServer().call(this)
      const failure = runBlock(dir, block, `line-${block.line}`)
      assert.strictEqual(failure, null, `README.md line ${block.line}: ${failure}`)
    })
  }

  it('has an API heading for every export', () => {
    const headings = markdown.split('\n').filter((l) => /^#{2,4} /.test(l)).join('\n')
    const missing = Object.keys(require('..')).filter((name) => !headings.includes(name))
    assert.deepStrictEqual(missing, [], 'exports without a heading in README.md')
  })

  describe('the harness', () => {
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
  })
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
