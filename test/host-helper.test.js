'use strict'

// threadlock/host's helper thread: one per process, whatever the number of
// managers, directories and worker threads, sleeping on all their doorbells
// at once (futex_waitv); joined when the last manager closes. Each scenario
// runs in a process of its own (test/fixtures/host-helper-child.js), which
// counts its tasks named 'tl-host-helper'. The same scenarios run with
// THREADLOCK_HOST_TEST_NO_WAITV=1, the fallback of kernels without
// futex_waitv: a helper thread per manager.

const assert = require('assert')
const path = require('path')
const { spawn } = require('child_process')
const { scopeDir } = require('./fixtures/host-harness')

const CHILD = path.join(__dirname, 'fixtures', 'host-helper-child.js')

function run (scenario, dirs, env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CHILD, scenario, ...dirs], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    let out = ''
    p.stdout.on('data', (d) => { out += d })
    p.once('error', reject)
    p.once('exit', (code, signal) => {
      let result
      try {
        result = JSON.parse(out.trim().split('\n').pop())
      } catch {
        reject(new Error(`the '${scenario}' process printed no result (code ${code}, signal ${signal}): ${out}`))
        return
      }
      if (result.error) reject(new Error(`the '${scenario}' process failed: ${result.error}`))
      else if (code !== 0) reject(new Error(`the '${scenario}' process exited with code ${code}`))
      else resolve(result)
    })
  })
}

const dirs = (n) => Array.from({ length: n }, () => scopeDir())

describe('threadlock/host helper thread', function () {
  this.timeout(60000)

  it('managers on three directories, in this thread and in two workers, get their grants from ONE helper thread', async () => {
    const r = await run('many', dirs(3))
    assert.strictEqual(r.managers, 10)
    assert.strictEqual(r.helpersWhileWaiting, 1, 'helper threads while 10 managers wait')
    assert.deepStrictEqual(r.grants, [0, 1, 2])
    assert.deepStrictEqual(r.workerGrants, [[0, 1], [0, 1]])
    assert.strictEqual(r.helpersAfterGrants, 1)
    assert.strictEqual(r.helpersWithWorkersOnly, 1, 'the workers\' managers keep the helper')
    assert.strictEqual(r.helpersAfterClose, 0, 'the helper is joined when the last manager closes')
  })

  it('a worker terminated while its manager waits and holds: the others keep their grants and the one helper', async () => {
    const r = await run('terminate', dirs(2))
    assert.strictEqual(r.helpersBefore, 1)
    assert.strictEqual(r.helpersAfterTerminate, 1)
    assert.strictEqual(r.pendingAfterTerminate, 1, 'only the request behind it is left')
    assert.strictEqual(r.heldYAfterTerminate, 0, 'its lock was released')
    assert.strictEqual(r.granted, 'granted after the terminated worker')
    assert.strictEqual(r.otherGranted, true)
    assert.strictEqual(r.helpersAfterClose, 0)
    assert.strictEqual(r.nodesLeft, 0)
  })

  it('beyond 127 managers in a process, the others get a helper thread each, and their grants arrive', async () => {
    const r = await run('overflow', dirs(2))
    assert.strictEqual(r.helpers, 1 + 3)
    assert.deepStrictEqual(r.grants, ['first', 'last'])
    assert.strictEqual(r.helpersAfterClose, 0)
  })

  describe('without futex_waitv (THREADLOCK_HOST_TEST_NO_WAITV=1): a helper thread per manager', function () {
    const env = { THREADLOCK_HOST_TEST_NO_WAITV: '1' }

    it('managers in this thread and in two workers get their grants', async () => {
      const r = await run('many', dirs(3), env)
      assert.strictEqual(r.helpersWhileWaiting, r.managers)
      assert.deepStrictEqual(r.grants, [0, 1, 2])
      assert.deepStrictEqual(r.workerGrants, [[0, 1], [0, 1]])
      assert.strictEqual(r.helpersWithWorkersOnly, 4)
      assert.strictEqual(r.helpersAfterClose, 0)
    })

    it('a worker terminated while its manager waits: the others keep their grants', async () => {
      const r = await run('terminate', dirs(2), env)
      assert.strictEqual(r.helpersBefore, 5)
      assert.strictEqual(r.helpersAfterTerminate, 4)
      assert.strictEqual(r.pendingAfterTerminate, 1)
      assert.strictEqual(r.granted, 'granted after the terminated worker')
      assert.strictEqual(r.otherGranted, true)
      assert.strictEqual(r.helpersAfterClose, 0)
      assert.strictEqual(r.nodesLeft, 0)
    })
  })
})
