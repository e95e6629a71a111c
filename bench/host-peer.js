'use strict'

// A participant of bench/host.js: a child process (or, for the in-process
// anchor, a worker thread) that takes the benchmark lock on command.
// Commands: acquire (reply 'acquired' with the monotonic time), release
// (reply 'released' with the time just before the release), contend (take
// and release in a loop for `ms`, reply with the count), exit. Both clocks
// are CLOCK_MONOTONIC, comparable across processes.

const { isMainThread, parentPort, workerData } = require('worker_threads')
const { impls } = require('./host-impls')

const [implName, dir] = isMainThread ? process.argv.slice(2) : [workerData.impl, workerData.dir]
// In-process rows whose peers share one SharedArrayBuffer (bench/host.js).
const buffer = isMainThread ? undefined : workerData.buffer
const send = isMainThread ? (m) => process.send(m) : (m) => parentPort.postMessage(m)
const port = isMainThread ? process : parentPort

let impl = null
let release = null

function now () {
  return String(process.hrtime.bigint())
}

const ops = {
  async acquire () {
    release = await impl.acquire()
    send({ ev: 'acquired', t: now() })
  },
  async release () {
    const t = now()
    await release()
    release = null
    send({ ev: 'released', t })
  },
  async contend ({ ms }) {
    const end = Date.now() + ms
    let n = 0
    while (Date.now() < end) {
      const r = await impl.acquire()
      n++
      await r()
      // Let the event loop breathe (IPC, grants) between rounds.
      if (impl.sync && n % 64 === 0) await new Promise(setImmediate)
    }
    send({ ev: 'contended', n })
  },
  async exit () {
    await impl.close()
    if (isMainThread) process.exit(0)
    else process.exit(0)
  }
}

// open() may be asynchronous (threadlock/postgres connects): ready only
// once it is open, and no command comes before ready.
Promise.resolve(impls[implName].open(dir, buffer)).then((opened) => {
  impl = opened
  port.on('message', (m) => { ops[m.op](m) })
  send({ ev: 'ready', pid: process.pid })
}, (err) => {
  console.error(err)
  process.exit(1)
})
