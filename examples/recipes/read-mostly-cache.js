// A read-mostly cache: three workers read a table in shared memory many
// times under read locks, at the same time as each other; the main thread
// rewrites the whole table now and then under the write lock. No reader
// ever sees a table half rewritten.
const { Worker, isMainThread, workerData } = require('node:worker_threads')
const { RWLock } = require('threadlock')

// CommonJS has no top-level await: the program runs in an async function.
;(async () => {
  const ENTRIES = 16

  if (isMainThread) {
    const rw = new RWLock()
    const table = new Int32Array(new SharedArrayBuffer(4 * ENTRIES)) // every entry = the version
    const torn = new Int32Array(new SharedArrayBuffer(4))
    const workers = [0, 1, 2].map(() =>
      new Worker(__filename, { workerData: { rw: rw.handle, table, torn } }))
    const exited = workers.map((w) => new Promise((resolve) => w.on('exit', resolve)))
    for (let version = 1; version <= 20; version++) {
      await rw.runWrite(() => { table.fill(version) }) // readers wait while it writes
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    await Promise.all(exited)
    console.log(`version ${table[0]}, torn reads: ${torn[0]}`)
  } else {
    const rw = RWLock.from(workerData.rw)
    const { table, torn } = workerData
    for (let i = 0; i < 2000; i++) {
      rw.acquireReadSync()
      const first = table[0]
      for (let k = 1; k < ENTRIES; k++) if (table[k] !== first) Atomics.add(torn, 0, 1)
      rw.releaseRead()
    }
  }
})()
