// Command-line processes sharing a directory: four runs of a tool append
// to one journal and bump one counter file in a shared directory. Each run
// takes the directory's named lock with threadlock/host (requestSync: a CLI
// has nothing else to do meanwhile), so no update is lost and no two runs
// write at once. A run killed while holding the lock frees it at once.
const { fork } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createLockManager } = require('threadlock/host')

// CommonJS has no top-level await: the program runs in an async function.
;(async () => {
  const [dir] = process.argv.slice(2)

  if (dir === undefined) { // the launcher: four runs of this tool, at once
    const shared = fs.mkdtempSync(path.join(os.tmpdir(), 'recipe-cli-'))
    fs.writeFileSync(path.join(shared, 'counter'), '0')
    const runs = [0, 1, 2, 3].map(() => fork(__filename, [shared]))
    await Promise.all(runs.map((p) => new Promise((resolve) => p.on('exit', resolve))))
    const lines = fs.readFileSync(path.join(shared, 'journal'), 'utf8').trim().split('\n')
    console.log(`counter ${fs.readFileSync(path.join(shared, 'counter'), 'utf8')}, journal lines ${lines.length}`)
    fs.rmSync(shared, { recursive: true })
  } else { // one run of the tool
    // Locks live in a subdirectory that only this user may enter.
    const locks = createLockManager({ path: path.join(dir, '.locks') })
    for (let i = 0; i < 25; i++) {
      const held = locks.requestSync('shared-dir') // blocks this process only
      try {
        const file = path.join(dir, 'counter')
        const n = Number(fs.readFileSync(file, 'utf8')) + 1
        fs.appendFileSync(path.join(dir, 'journal'), `${process.pid} wrote ${n}\n`)
        fs.writeFileSync(file, String(n))
      } finally {
        held.release()
      }
    }
    await locks.close()
  }
})()
