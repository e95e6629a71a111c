'use strict'

// A process of bench/lockfile.js: locks a file with one of the two
// libraries on command and reports when (in ms of the shared wall clock,
// performance.timeOrigin + performance.now(), comparable across processes).

const [impl, hostDir] = process.argv.slice(2)
const lib = impl === 'threadlock'
  ? require('../lockfile').createLockfile({ path: hostDir })
  : require('proper-lockfile')
const now = () => performance.timeOrigin + performance.now()
let release = null

process.on('message', async (m) => {
  if (m.op === 'lock') {
    release = await lib.lock(m.file, m.options)
    process.send({ op: 'locked', at: now() })
  } else if (m.op === 'release') {
    const at = now()
    await release()
    process.send({ op: 'released', at })
  } else if (m.op === 'exit') {
    process.exit(0)
  }
})
process.send({ op: 'ready' })
