'use strict'

// threadlock/host's helper thread: one per process, whatever the number of
// managers, directories and worker threads, sleeping on all their doorbells
// at once (futex_waitv); joined when the last manager closes. Each scenario
// runs in a process of its own (test/fixtures/host-helper-child.js), which
// counts its tasks named 'tl-host-helper'. The same scenarios run with
// THREADLOCK_HOST_TEST_NO_WAITV=1, which stands in for a kernel without
// futex_waitv: the fallback, a helper thread per manager.

const assert = require('assert')
const os = require('os')
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

// futex_waitv is in Linux 5.16 and later, but not in qemu-user (.ci/cross.sh's
// arm64 suite, which scripts/cross.js marks with THREADLOCK_TEST_QEMU):
// there, and with THREADLOCK_HOST_TEST_NO_WAITV, each manager has a helper
// of its own.
function kernelHasWaitv () {
  const [major, minor] = os.release().split('.').map(Number)
  return (major > 5 || (major === 5 && minor >= 16)) && !process.env.THREADLOCK_TEST_QEMU
}

function modes () {
  return [
    { title: 'futex_waitv where the kernel has it', env: {}, waitv: kernelHasWaitv() ? 1 : 0 },
    { title: 'without futex_waitv (THREADLOCK_HOST_TEST_NO_WAITV=1)', env: { THREADLOCK_HOST_TEST_NO_WAITV: '1' }, waitv: 0 }
  ]
}

describe('threadlock/host helper thread', function () {
  // Generous: under qemu-user (.ci/cross.sh) a churn takes 30 s.
  this.timeout(120000)

  for (const mode of modes()) {
    describe(mode.title, function () {
      // One helper for the process, or one per manager without futex_waitv.
      const expected = (managers) => mode.waitv ? 1 : managers

      it(`managers on three directories, in this thread and in two workers, get their grants; ${mode.waitv ? 'ONE helper thread serves them' : 'a helper thread each'}`, async () => {
        const r = await run('many', dirs(3), mode.env)
        assert.strictEqual(r.waitv, mode.waitv, 'whether futex_waitv is used')
        assert.strictEqual(r.managers, 10)
        assert.strictEqual(r.helpersWhileWaiting, expected(10), 'helper threads while 10 managers wait')
        assert.deepStrictEqual(r.grants, [0, 1, 2])
        assert.deepStrictEqual(r.workerGrants, [[0, 1], [0, 1]])
        assert.strictEqual(r.helpersAfterGrants, expected(10))
        assert.strictEqual(r.helpersWithWorkersOnly, expected(4), 'the workers\' managers keep their helper')
        assert.strictEqual(r.helpersAfterClose, 0, 'the helper is joined when the last manager closes')
      })

      it('workers terminated at random moments while their grants ring: this thread\'s requests go on, nothing is left', async () => {
        const r = await run('churn', dirs(1), mode.env)
        assert.strictEqual(r.waitv, mode.waitv)
        assert.ok(r.workerGrants >= r.rounds, 'a worker of every round got a grant before it was terminated')
        assert.ok(r.mineAfter > 10)
        assert.strictEqual(r.stats.slots, 1, 'only this thread\'s manager is attached')
        assert.strictEqual(r.stats.nodes, 0, 'no request node left')
        // The process's one helper, or this thread's and up to 3 workers'.
        assert.ok(mode.waitv ? r.helpersDuring === 1 : r.helpersDuring >= 1 && r.helpersDuring <= 4,
          `${r.helpersDuring} helper threads`)
        assert.strictEqual(r.helpersAfterClose, 0)
      })

      it('a worker terminated while its manager waits and holds: the others keep their grants and their helper', async () => {
        const r = await run('terminate', dirs(2), mode.env)
        assert.strictEqual(r.waitv, mode.waitv)
        assert.strictEqual(r.helpersBefore, expected(5))
        assert.strictEqual(r.helpersAfterTerminate, expected(4))
        assert.strictEqual(r.pendingAfterTerminate, 1, 'only the request behind it is left')
        assert.strictEqual(r.heldYAfterTerminate, 0, 'its lock was released')
        assert.strictEqual(r.granted, 'granted after the terminated worker')
        assert.strictEqual(r.otherGranted, true)
        assert.strictEqual(r.helpersAfterClose, 0)
        assert.strictEqual(r.nodesLeft, 0)
      })
    })
  }

  it('beyond 127 managers in a process, the others get a helper thread each, and their grants arrive', async () => {
    const r = await run('overflow', dirs(2))
    assert.strictEqual(r.helpers, r.waitv ? 1 + 3 : 130)
    assert.deepStrictEqual(r.grants, ['first', 'last'])
    assert.strictEqual(r.helpersAfterClose, 0)
  })
})
