'use strict'

// What a new user reads in the README (issue 27): the Install section says
// what npm 11's install-script policy asks of a project using threadlock.

const assert = require('assert')
const fs = require('fs')
const path = require('path')

const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8')
const section = (heading) => {
  const start = readme.indexOf(`\n## ${heading}\n`)
  assert.ok(start >= 0, `README.md has no "## ${heading}"`)
  const end = readme.indexOf('\n## ', start + 1)
  return readme.slice(start, end < 0 ? undefined : end)
}

describe('README for a new user', () => {
  it('Install says how to allow the install script under npm 11\'s allowScripts', () => {
    const install = section('Install')
    assert.match(install, /allowScripts/)
    assert.match(install, /npm approve-scripts threadlock/)
    assert.match(install, /"allowScripts": \{ "threadlock": true \}/)
    // threadlock has an install script for that line to be about.
    const pkg = require('../package.json')
    assert.ok(pkg.scripts.install)
  })
})

describe('README: Coming from proper-lockfile', () => {
  it('has the section, pointing at the full mapping in docs/api.md', () => {
    const start = readme.indexOf('\n### Coming from proper-lockfile\n')
    assert.ok(start >= 0, 'README.md has no "### Coming from proper-lockfile"')
    const text = readme.slice(start, readme.indexOf('\n#', start + 1))
    assert.match(text, /threadlock\/lockfile/)
    assert.match(text, /docs\/api\.md#threadlocklockfile/)
  })
})
