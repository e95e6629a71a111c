'use strict'

// docs/api.md lists the TypeScript types (issue 27, item 5): every type
// that index.d.ts exports is named in its "TypeScript types" section, and
// every primitive has a named handle type there and in index.d.ts.

const assert = require('assert')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const dts = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
const api = fs.readFileSync(path.join(root, 'docs', 'api.md'), 'utf8')

describe('TypeScript types in docs/api.md', () => {
  const start = api.indexOf('\n## TypeScript types\n')
  const section = start < 0 ? '' : api.slice(start, api.indexOf('\n## ', start + 1))

  it('has a "TypeScript types" section', () => {
    assert.ok(start >= 0, 'docs/api.md has no "## TypeScript types" section')
  })

  it('names every type that index.d.ts exports', () => {
    const types = [...dts.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1])
    assert.ok(types.length > 20)
    const missing = types.filter((t) => !section.includes(`\`${t}\``) && !section.includes(`\`${t}<`))
    assert.deepStrictEqual(missing, [])
  })

  it('has one named handle type per primitive', () => {
    for (const p of ['AsyncLock', 'Semaphore', 'RWLock', 'ConditionVariable', 'Barrier', 'CountDownLatch']) {
      assert.match(dts, new RegExp(`^export (interface|type) ${p}Handle\\b`, 'm'), p)
      assert.match(dts, new RegExp(`readonly handle: ${p}Handle\\n`), p)
    }
  })
})
