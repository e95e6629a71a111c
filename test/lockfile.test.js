'use strict'

// threadlock/lockfile: proper-lockfile's API on threadlock/host (issue 27,
// item 11), tested with real processes: ELOCKED / ENOTACQUIRED / ENOENT /
// ERELEASED; `retries` waits as one request queued in the host table (not
// by polling) for at most the time its retries would take; a holder killed
// with SIGKILL frees the lock at once; mutual exclusion across processes.
// Every test uses a directory of its own made with mode 0700.

const assert = require('assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { fork } = require('child_process')
const lockfile = require('../lockfile')
const { createLockfile } = lockfile
const { retryBudget } = require('../lib/lockfile')
const { createLockManager } = require('../host')
const { hostSupported } = require('../lib/native')

const CHILD = path.join(__dirname, 'fixtures', 'lockfile-child.js')

function tempDir () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-lockfile-'))
  fs.chmodSync(dir, 0o700)
  return dir
}

// A child process; `ask(message)` resolves with its next reply.
function child (dir) {
  const proc = fork(CHILD, [dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const replies = []
  const waiting = []
  proc.on('message', (m) => {
    if (waiting.length > 0) waiting.shift()(m)
    else replies.push(m)
  })
  const next = () => replies.length > 0 ? Promise.resolve(replies.shift()) : new Promise((resolve) => waiting.push(resolve))
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  return {
    proc,
    exited,
    ready: next(),
    ask (m) {
      proc.send(m)
      return next()
    }
  }
}

describe('threadlock/lockfile', function () {
  this.timeout(30000)
  let dir, lf, file
  const kids = []
  before(function () {
    if (!hostSupported) this.skip()
  })
  beforeEach(() => {
    dir = tempDir()
    lf = createLockfile({ path: path.join(dir, 'host') })
    file = path.join(dir, 'data.json')
    fs.writeFileSync(file, '{}')
  })
  afterEach(async () => {
    for (const k of kids.splice(0)) {
      k.proc.kill('SIGKILL')
      await k.exited
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const spawnChild = async () => {
    const k = child(path.join(dir, 'host'))
    kids.push(k)
    await k.ready
    return k
  }

  it('has proper-lockfile\'s shape: the module is lock() and carries the six functions (CommonJS and ESM)', async () => {
    assert.strictEqual(typeof lockfile, 'function')
    for (const f of ['lock', 'unlock', 'check', 'lockSync', 'unlockSync', 'checkSync']) assert.strictEqual(typeof lockfile[f], 'function', f)
    const esm = await import('../lockfile.mjs')
    assert.strictEqual(esm.default, lockfile)
    assert.strictEqual(esm.lockSync, lockfile.lockSync)
    assert.strictEqual(esm.createLockfile, createLockfile)
  })

  it('lock() resolves with an async release; check() and checkSync() see the lock; release twice is ERELEASED', async () => {
    const release = await lf.lock(file)
    assert.strictEqual(await lf.check(file), true)
    assert.strictEqual(lf.checkSync(file), true)
    await release()
    assert.strictEqual(await lf.check(file), false)
    assert.strictEqual(lf.checkSync(file), false)
    await assert.rejects(release(), { code: 'ERELEASED' })
  })

  it('another process holding the file: ELOCKED at once (retries 0), check() true there; free again after its release', async () => {
    const k = await spawnChild()
    assert.deepStrictEqual(await k.ask({ op: 'lock', file }), { ok: true, op: 'lock' })
    await assert.rejects(lf.lock(file), { code: 'ELOCKED', file })
    assert.throws(() => lf.lockSync(file), { code: 'ELOCKED' })
    assert.strictEqual(await lf.check(file), true)
    assert.strictEqual(lf.checkSync(file), true)
    assert.deepStrictEqual(await k.ask({ op: 'release' }), { ok: true, op: 'release' })
    const release = lf.lockSync(file)
    const r = await k.ask({ op: 'lock', file })
    assert.strictEqual(r.code, 'ELOCKED')
    release()
  })

  it('a second lock of a file this process holds is ELOCKED, as in proper-lockfile', async () => {
    const release = await lf.lock(file)
    await assert.rejects(lf.lock(file), { code: 'ELOCKED' })
    assert.throws(() => lf.lockSync(file), { code: 'ELOCKED' })
    await release()
  })

  it('unlock() / unlockSync() release a lock this process holds; of any other lock: ENOTACQUIRED', async () => {
    await lf.lock(file)
    await lf.unlock(file)
    assert.strictEqual(await lf.check(file), false)
    lf.lockSync(file)
    lf.unlockSync(file)
    assert.strictEqual(lf.checkSync(file), false)
    await assert.rejects(lf.unlock(file), { code: 'ENOTACQUIRED' })
    assert.throws(() => lf.unlockSync(file), { code: 'ENOTACQUIRED' })
    const k = await spawnChild()
    await k.ask({ op: 'lock', file })
    await assert.rejects(lf.unlock(file), { code: 'ENOTACQUIRED' }) // held, but not by this process
  })

  it('a missing file is ENOENT with realpath (the default); realpath: false locks the path as given', async () => {
    const missing = path.join(dir, 'missing')
    await assert.rejects(lf.lock(missing), { code: 'ENOENT' })
    assert.throws(() => lf.lockSync(missing), { code: 'ENOENT' })
    await assert.rejects(lf.check(missing), { code: 'ENOENT' })
    const release = await lf.lock(missing, { realpath: false })
    assert.strictEqual(await lf.check(missing, { realpath: false }), true)
    await release()
  })

  it('names come from the resolved path: a symlink and a relative path lock the same file; lockfilePath names the lock', async () => {
    const link = path.join(dir, 'link.json')
    fs.symlinkSync(file, link)
    const release = await lf.lock(link)
    assert.strictEqual(await lf.check(file), true)
    await assert.rejects(lf.lock(path.relative(process.cwd(), file)), { code: 'ELOCKED' })
    await release()
    const shared = path.join(dir, 'dir.lock')
    const r2 = await lf.lock(file, { lockfilePath: shared })
    await assert.rejects(lf.lock(path.join(dir, 'other'), { lockfilePath: shared, realpath: false }), { code: 'ELOCKED' })
    assert.strictEqual(await lf.check(file), false) // the file's own name is free
    await r2()
  })

  it('retries: the total time the retries would take, as proper-lockfile\'s schedule (factor 2, 1 s first by default)', () => {
    assert.strictEqual(retryBudget(undefined), 0)
    assert.strictEqual(retryBudget(0), 0)
    assert.strictEqual(retryBudget(3), 1000 + 2000 + 4000)
    assert.strictEqual(retryBudget({ retries: 3, minTimeout: 10, maxTimeout: 15 }), 10 + 15 + 15)
    assert.strictEqual(retryBudget({ retries: 2, minTimeout: 10, factor: 3, randomize: true }), 2 * (10 + 30))
    assert.strictEqual(retryBudget({ retries: 1, forever: true }), Infinity)
    assert.throws(() => retryBudget({ retris: 3 }, 'lockfile.lock'), TypeError)
  })

  it('retries wait as one request queued in the host table, granted when the holder releases', async () => {
    const k = await spawnChild()
    await k.ask({ op: 'lock', file })
    const waiting = lf.lock(file, { retries: { retries: 10, minTimeout: 200 } })
    // The request is queued in the table (it is not polling): the host's
    // query shows it pending.
    const observer = createLockManager({ path: path.join(dir, 'host') })
    try {
      for (let i = 0; ; i++) {
        const { pending } = await observer.query()
        if (pending.some((p) => p.pid === process.pid && p.name.endsWith(fs.realpathSync(file)))) break
        assert.ok(i < 500, 'the waiting lock() never appeared as a pending request')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    } finally {
      await observer.close()
    }
    await k.ask({ op: 'release' })
    const release = await waiting
    assert.strictEqual(await lf.check(file), true)
    await release()
  })

  it('retries that run out end in ELOCKED, not before their time', async () => {
    const k = await spawnChild()
    await k.ask({ op: 'lock', file })
    const start = performance.now()
    await assert.rejects(lf.lock(file, { retries: { retries: 2, minTimeout: 50, factor: 1 } }), { code: 'ELOCKED' })
    assert.ok(performance.now() - start >= 95, 'gave up before the retries\' 100 ms')
    assert.throws(() => lf.lockSync(file, { retries: { retries: 1, minTimeout: 30 } }), { code: 'ELOCKED' })
  })

  it('lockSync with retries waits in the kernel too (proper-lockfile\'s sync API cannot)', async () => {
    const k = await spawnChild()
    await k.ask({ op: 'lock', file })
    // The child releases once it has answered: lockSync below waits for it.
    const released = k.ask({ op: 'release' })
    const release = lf.lockSync(file, { retries: { retries: 10, minTimeout: 500 } })
    assert.deepStrictEqual(await released, { ok: true, op: 'release' })
    release()
  })

  it('a holder killed with SIGKILL frees the lock at once for a waiting lock()', async () => {
    const k = await spawnChild()
    await k.ask({ op: 'lock', file })
    const waiting = lf.lock(file, { retries: 20 }) // would allow days
    await new Promise((resolve) => setTimeout(resolve, 50))
    const killed = performance.now()
    k.proc.kill('SIGKILL')
    const release = await waiting
    const ms = performance.now() - killed
    // proper-lockfile would wait for `stale` (10 s by default).
    assert.ok(ms < 5000, `granted ${ms.toFixed(1)} ms after the kill`)
    await release()
  })

  it('4 processes x 50 increments of a file under its lock lose none', async () => {
    const counter = path.join(dir, 'counter')
    fs.writeFileSync(counter, '0')
    const ks = await Promise.all([0, 1, 2, 3].map(spawnChild))
    const results = await Promise.all(ks.map((k) => k.ask({ op: 'count', file, counter, n: 50 })))
    for (const r of results) assert.deepStrictEqual(r, { ok: true, op: 'count' })
    assert.strictEqual(fs.readFileSync(counter, 'utf8'), '200')
  })

  it('accepts stale, update, onCompromised, fs and lockfilePath; refuses unknown options and bad values', async () => {
    const release = await lf.lock(file, { stale: 10000, update: 5000, onCompromised: () => {}, fs, retries: 0 })
    await release()
    await assert.rejects(lf.lock(file, { retry: 3 }), { name: 'TypeError', message: /^lockfile\.lock: unknown option 'retry'/ })
    await assert.rejects(lf.lock(file, { stale: '10' }), { name: 'TypeError', message: /^lockfile\.lock: options\.stale/ })
    await assert.rejects(lf.lock(42), { name: 'TypeError', message: /^lockfile\.lock: file must be/ })
    assert.throws(() => lf.unlockSync(file, { retries: 1 }), { name: 'TypeError', message: /^lockfile\.unlockSync: unknown option 'retries'/ })
  })
})

describe('threadlock/lockfile: a lock() still waiting', function () {
  this.timeout(30000)
  before(function () {
    if (!hostSupported) this.skip()
  })

  it('is not held: unlock() is ENOTACQUIRED and check() answers for the holder, not for the waiter', async () => {
    const dir = tempDir()
    try {
      const a = createLockfile({ path: path.join(dir, 'host') })
      const b = createLockfile({ path: path.join(dir, 'host') }) // another record of held locks, as another process has
      const file = path.join(dir, 'f')
      fs.writeFileSync(file, '')
      const release = b.lockSync(file)
      const waiting = a.lock(file, { retries: { retries: 5, minTimeout: 200 } })
      await new Promise((resolve) => setTimeout(resolve, 20))
      await assert.rejects(a.unlock(file), { code: 'ENOTACQUIRED' })
      assert.strictEqual(await a.check(file), true) // b holds it
      release()
      const r = await waiting
      assert.strictEqual(await a.check(file), true)
      await r()
      assert.strictEqual(await a.check(file), false)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
