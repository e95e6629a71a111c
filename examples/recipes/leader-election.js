// Leader election among processes: three processes ask for the named lock
// "leader" of threadlock/host; the one granted leads for as long as it
// lives, the others wait in line. When the leader dies, even by SIGKILL,
// the lock passes at once to the next, which is told (ownerDied) that its
// predecessor did not step down cleanly.
const { fork } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createLockManager } = require('threadlock/host')

// CommonJS has no top-level await: the program runs in an async function.
;(async () => {
  const [dir] = process.argv.slice(2)

  if (dir === undefined) {
    const shared = fs.mkdtempSync(path.join(os.tmpdir(), 'recipe-leader-'))
    const procs = [0, 1, 2].map(() => fork(__filename, [shared]))
    const terms = []
    let attached = 0
    for (const p of procs) {
      p.on('message', (m) => {
        // Once all three are attached to the directory, they ask.
        if (m === 'attached') {
          if (++attached === 3) for (const q of procs) q.send('ask')
          return
        }
        terms.push(m)
        // The first leader is killed; the second steps down; the third stays.
        if (terms.length === 1) p.kill('SIGKILL')
        else if (terms.length === 2) p.send('step down')
        else {
          console.log(terms.map((t, i) => `term ${i + 1}: a leader${t.ownerDied ? ', after a leader that died' : ''}`).join('\n'))
          p.send('step down')
        }
      })
    }
    await Promise.all(procs.map((p) => new Promise((resolve) => p.on('exit', resolve))))
    fs.rmSync(shared, { recursive: true })
  } else {
    const locks = createLockManager({ path: path.join(dir, '.locks') })
    process.send('attached')
    await new Promise((resolve) => process.once('message', resolve))
    await locks.request('leader', async (lock) => {
      process.send({ ownerDied: lock.ownerDied })
      // Lead until told to step down (the lock is held until this settles).
      await new Promise((resolve) => process.once('message', resolve))
    })
    await locks.close()
    process.disconnect()
  }
})()
