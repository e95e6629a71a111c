'use strict'

// The installed package, loaded through require: its addon is the prebuild,
// and a lock passes from the main thread to a worker and back.

const assert = require('assert')
const path = require('path')
const { Worker } = require('worker_threads')
const { AsyncLock } = require('threadlock')

const prebuilds = path.join(__dirname, 'node_modules', 'threadlock', 'prebuilds',
  `${process.platform}-${process.arch}`)
const addons = Object.keys(require.cache).filter((file) => file.endsWith('.node'))
assert.strictEqual(addons.length, 1, `one addon loaded: ${addons}`)
assert.strictEqual(path.dirname(addons[0]), prebuilds)

// Without the optional peer `pg`, the PostgreSQL subpath names it.
assert.throws(() => require('threadlock/postgres'), (err) => /'pg'/.test(err.message))

// threadlock/host works from the tarball, on the same addon.
if (process.platform === 'linux') {
  const fs = require('fs')
  const os = require('os')
  const { createLockManager } = require('threadlock/host')
  const host = createLockManager({ path: fs.mkdtempSync(path.join(os.tmpdir(), 'packed-host-')) })
  const held = host.requestSync('packed')
  assert.strictEqual(typeof held.token, 'bigint')
  assert.strictEqual(held.release(), true)
  host.close()
  // threadlock/lockfile is in the tarball too (its entry files are in "files").
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'packed-lockfile-'))
  const lockfile = require('threadlock/lockfile').createLockfile({ path: path.join(dir, 'locks') })
  lockfile.lockSync(dir)()
  assert.strictEqual(lockfile.checkSync(dir), false)
  assert.strictEqual(Object.keys(require.cache).filter((file) => file.endsWith('.node')).length, 1)
} else {
  // Linux only for now: elsewhere it loads and says so.
  const { createLockManager } = require('threadlock/host')
  assert.throws(() => createLockManager(), (err) => err.code === 'ENOTSUP')
}

const lock = new AsyncLock()
lock.lock()
const worker = new Worker(path.join(__dirname, 'smoke-worker.cjs'), { workerData: { handle: lock.handle } })
worker.once('error', (err) => { throw err })
worker.once('exit', async (code) => {
  assert.strictEqual(code, 0)
  const release = await lock.acquire({ timeout: 1000 })
  release()
  console.log(`require: ${path.relative(__dirname, addons[0])} works across threads`)
})
// Release once the worker waits for the lock.
const poll = setInterval(() => {
  if (lock.waiting === 0) return
  clearInterval(poll)
  lock.unlock()
}, 5)
