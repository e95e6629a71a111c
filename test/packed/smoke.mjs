// The installed package, loaded through import: its addon is the prebuild,
// and a lock passes from the main thread to a worker and back.

import assert from 'assert'
import { createRequire } from 'module'
import path from 'path'
import { fileURLToPath } from 'url'
import { Worker } from 'worker_threads'
import threadlock, { AsyncLock } from 'threadlock'

const here = path.dirname(fileURLToPath(import.meta.url))
const prebuilds = path.join(here, 'node_modules', 'threadlock', 'prebuilds',
  `${process.platform}-${process.arch}`)
const addons = Object.keys(createRequire(import.meta.url).cache).filter((file) => file.endsWith('.node'))
assert.strictEqual(addons.length, 1, `one addon loaded: ${addons}`)
assert.strictEqual(path.dirname(addons[0]), prebuilds)
assert.strictEqual(threadlock.AsyncLock, AsyncLock)

const lock = new AsyncLock()
lock.lock()
const worker = new Worker(path.join(here, 'smoke-worker.cjs'), { workerData: { handle: lock.handle } })
worker.once('error', (err) => { throw err })
const exited = new Promise((resolve) => worker.once('exit', resolve))
while (lock.waiting === 0) await new Promise((resolve) => setTimeout(resolve, 5))
lock.unlock()
assert.strictEqual(await exited, 0)
const release = await lock.acquire({ timeout: 1000 })
release()
console.log(`import: ${path.relative(here, addons[0])} works across threads`)
