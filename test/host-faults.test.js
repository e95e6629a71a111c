'use strict'

// Faults of the table under live processes (the same user's doing): a
// table file that shrinks gives every process an error, never SIGBUS.

const assert = require('assert')
const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')

// A token taken by a new process (`env` added), as a decimal string.
function tokenOf (dir, env = {}) {
  const script = `const m = require(${JSON.stringify(path.join(__dirname, '..', 'host'))}).createLockManager({ path: ${JSON.stringify(dir)} })
    const h = m.requestSync('x'); console.log(String(h.token)); h.release(); m.close()`
  return BigInt(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, ...env } }).toString().trim())
}

describe('threadlock/host: faults of the table file', function () {
  this.timeout(60000)
  afterEach(killAll)

  // Also with a helper thread per manager (THREADLOCK_HOST_TEST_NO_WAITV,
  // a kernel without futex_waitv), whose stop at close() rang the doorbell
  // in the shrunk table: SIGBUS at close, before the fix.
  for (const [size, env, how] of [[0, {}, ''], [4096, {}, ''],
    [0, { THREADLOCK_HOST_TEST_NO_WAITV: '1' }, ', a helper per manager (no futex_waitv)'],
    [4096, { THREADLOCK_HOST_TEST_NO_WAITV: '1' }, ', a helper per manager (no futex_waitv)']]) {
    it(`a table truncated to ${size} bytes under a holder, an async waiter and a blocked requestSync${how}: each gets ECORRUPT, none gets SIGBUS (finding 2)`, async () => {
      const dir = scopeDir()
      const [a, b, c] = await spawn(dir, 3, env)
      const held = a.send('request', { name: 'a' })
      await a.event(held, 'granted')
      const waiting = b.send('request', { name: 'a' })
      const blocked = c.send('sync', { name: 'a', options: { timeout: 3000 } })
      // Both are queued before the file shrinks.
      await waitFor(async () => (await a.call('query')).snapshot.pending.length === 2)
      fs.truncateSync(path.join(dir, 'threadlock-host.table'), size)
      // The holder releases: its request rejects with ECORRUPT.
      a.send('release', { id: held })
      const r = await alive(a, a.event(held, 'rejected'))
      assert.strictEqual(r.error.code, 'ECORRUPT', JSON.stringify(r))
      // The blocked requestSync wakes at its timeout and finds the file short.
      const e = await alive(c, c.event(blocked, 'error', 20000))
      assert.strictEqual(e.error.code, 'ECORRUPT', JSON.stringify(e))
      // New requests of every process reject with ECORRUPT.
      for (const child of [a, b, c]) {
        const id = child.send('request', { name: 'other' })
        const got = await alive(child, child.event(id, 'rejected'))
        assert.strictEqual(got.error.code, 'ECORRUPT')
        assert.match(got.error.message, /^LockManager.request: the table file in .* is corrupt/)
      }
      // The waiter is never granted (nobody can grant it): it rejects with
      // ECORRUPT once its process looks at the short table (its helper
      // woke: api.md, "waiting requests reject with it"), or with ECLOSED
      // at its close if nothing woke it before; which one depends on the
      // timing of the wake-ups, not on the contract.
      assert.ok(!b.events.some((m) => m.id === waiting && m.ev !== 'rejected'))
      for (const child of [a, b, c]) await child.call('close')
      const rejected = await b.event(waiting, 'rejected')
      assert.ok(['ECORRUPT', 'ECLOSED'].includes(rejected.error.code), JSON.stringify(rejected))
      assert.ok(!b.events.some((m) => m.id === waiting && m.ev !== 'rejected'))
      for (const child of [a, b, c]) {
        child.send('exit')
        assert.deepStrictEqual(await child.exited, { code: 0, signal: null })
      }
    })
  }
})

describe('threadlock/host: fencing tokens across rebuilds (finding 8)', function () {
  this.timeout(60000)
  let shim
  before(function () {
    // clock_gettime(CLOCK_REALTIME) an hour behind, through LD_PRELOAD:
    // the wall clock set back, for one process, without touching the
    // machine's.
    const d = scopeDir()
    fs.writeFileSync(path.join(d, 'shim.c'), `#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
int clock_gettime(clockid_t c, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int r = real(c, ts);
  if (r == 0 && c == CLOCK_REALTIME) ts->tv_sec -= 3600;
  return r;
}
`)
    shim = path.join(d, 'shim.so')
    execFileSync('cc', ['-shared', '-fPIC', '-o', shim, path.join(d, 'shim.c'), '-ldl'])
  })

  it('a header corrupted while nobody is attached, then a process whose clock is an hour behind: its token is still greater', () => {
    const dir = scopeDir()
    const before = tokenOf(dir)
    const fd = fs.openSync(path.join(dir, 'threadlock-host.table'), 'r+')
    fs.writeSync(fd, Buffer.from('garbage!'), 0, 8, 0)
    fs.closeSync(fd)
    const after = tokenOf(dir, { LD_PRELOAD: shim })
    assert.ok(after > before, `token ${after} after the rebuild, ${before} before`)
    // And once more, without the corruption, still behind.
    assert.ok(tokenOf(dir, { LD_PRELOAD: shim }) > after)
  })

  it('a table file removed while nobody is attached: the next table goes on above the last token', () => {
    const dir = scopeDir()
    const before = tokenOf(dir)
    fs.rmSync(path.join(dir, 'threadlock-host.table'))
    const after = tokenOf(dir, { LD_PRELOAD: shim })
    assert.ok(after > before, `token ${after} after the rebuild, ${before} before`)
  })
})

async function waitFor (check, ms = 10000) {
  const until = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

// `promise`, or a failure naming how the child ended if it ends first.
function alive (child, promise) {
  return Promise.race([promise, child.exited.then((how) => { throw new Error(`child ${child.pid} ended: ${JSON.stringify(how)}`) })])
}
