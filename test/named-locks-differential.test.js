'use strict'

// threadlock.locks and Node's own worker_threads.locks (Node >= 24.5), run
// through one list of scenarios (test/fixtures/named-locks-scenarios.js),
// each in a process of its own, and held against the Web Locks
// specification. threadlock must behave as the specification says in every
// scenario. The built-in must too, except where the list records a
// departure for this major: then the built-in must show exactly that
// departure, so that a change in Node (a fix, or a new behaviour) fails here
// and the entry gets updated. A departure that only some runs show (a race
// in the built-in) accepts the specification's observation as well. On a Node without the built-in, threadlock's
// half still runs and the built-in's half is one skipped line.

const assert = require('assert')
const { execFile } = require('child_process')
const path = require('path')
const { isDeepStrictEqual } = require('util')
const { scenarios } = require('./fixtures/named-locks-scenarios')

const CHILD = path.join(__dirname, 'fixtures', 'named-locks-scenario-child.js')
const [MAJOR, MINOR] = process.versions.node.split('.').map(Number)
const HAS_BUILTIN = require('worker_threads').locks !== undefined && (MAJOR > 24 || (MAJOR === 24 && MINOR >= 5))

/**
 * Runs one scenario in a child process. Resolves with its observation, or
 * with { crashed: true, ... } when the process died or hung, so that a
 * crash is an observation like any other.
 */
function observe (impl, id) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CHILD, impl, id], { timeout: 30000 }, (error, stdout, stderr) => {
      const last = stdout.trim().split('\n').pop()
      if (!error && last) {
        const report = JSON.parse(last)
        if (report.failed) reject(new Error(`${impl} ${id}: the scenario failed: ${report.failed}`))
        else resolve(report.observed)
        return
      }
      resolve({
        crashed: true,
        code: error ? error.code : 0,
        signal: error ? error.signal : null,
        stderr: stderr.split('\n').slice(0, 8).join('\n')
      })
    })
  })
}

/** The recorded departure of the built-in for this major, if any. */
function departure (scenario) {
  const d = scenario.builtin
  return d !== undefined && d.majors.includes(MAJOR) ? d : undefined
}

describe('named locks: differential against the Web Locks specification', function () {
  this.timeout(60000)
  this.slow(10000)

  it('the scenario list is well formed: unique ids, and every departure differs from the specification', () => {
    const ids = scenarios.map((s) => s.id)
    assert.strictEqual(new Set(ids).size, ids.length, `duplicate ids in ${ids}`)
    for (const s of scenarios) {
      assert.strictEqual(typeof s.run, 'function', s.id)
      assert.ok(s.spec !== undefined, `${s.id}: no spec observation`)
      if (s.builtin === undefined) continue
      assert.ok(s.builtin.why, `${s.id}: the departure must say why it is one`)
      assert.ok(Array.isArray(s.builtin.majors) && s.builtin.majors.length > 0, `${s.id}: the departure names no major`)
      assert.ok((s.builtin.observed === undefined) !== (s.builtin.matches === undefined),
        `${s.id}: a departure gives either the observation or a predicate`)
      if (s.builtin.observed !== undefined) {
        assert.ok(!isDeepStrictEqual(s.builtin.observed, s.spec), `${s.id}: the departure equals the specification`)
      } else {
        assert.strictEqual(s.builtin.matches(s.spec), false, `${s.id}: the departure's predicate accepts the specification`)
      }
    }
  })

  describe('threadlock.locks', function () {
    for (const s of scenarios) {
      it(s.title, async () => {
        assert.deepStrictEqual(await observe('threadlock', s.id), s.spec)
      })
    }
  })

  describe('worker_threads.locks', function () {
    if (!HAS_BUILTIN) {
      it(`skipped: Node ${process.version} has no worker_threads.locks (it came in 24.5)`, function () {
        this.skip()
      })
      return
    }
    for (const s of scenarios) {
      const d = departure(s)
      const label = d && d.sometimes ? 'may depart' : 'departs'
      it(d ? `${s.title} -- ${label}: ${d.why}` : s.title, async () => {
        const observed = await observe('builtin', s.id)
        if (d === undefined) {
          assert.deepStrictEqual(observed, s.spec)
          return
        }
        const departs = d.matches ? d.matches(observed) : isDeepStrictEqual(observed, d.observed)
        if (d.sometimes && !departs) {
          assert.deepStrictEqual(observed, s.spec, 'neither the recorded departure nor the specification')
          return
        }
        const hint = isDeepStrictEqual(observed, s.spec)
          ? 'it now behaves as the specification says: remove the departure for this major'
          : 'update the recorded departure'
        assert.ok(departs, `Node ${process.version}'s built-in no longer shows the recorded departure ` +
          `(${d.why}); it observed ${JSON.stringify(observed)}: ${hint}`)
      })
    }
  })
})
