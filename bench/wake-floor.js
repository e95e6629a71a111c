'use strict'

// How long it takes to run JavaScript in an event loop that has been idle,
// woken by another thread of the process or by another process: Node's own
// ways (postMessage, Atomics.waitAsync, a pipe, a UDP datagram) beside
// threadlock's (waitAsync on an in-process SharedArrayBuffer, on
// openSharedMemory's memory woken from another process, and a
// threadlock/host grant at another process's release). Each wake follows
// 20 ms of idleness, as in bench/host.js's hand-off; the time is from just
// before the waking call to the first statement of the woken handler, read
// on one clock (performance.timeOrigin + performance.now()).
//
// These are the floors under every async hand-off of threadlock/host and
// openSharedMemory (bench/README.md, "Waking an event loop: the floors").
//
//   node bench/wake-floor.js [--wakes=100] [--rounds=3]
//
// The rows of one round run one after the other; rounds repeat them, and
// the table gives the median over rounds of each round's median (with the
// range of those medians).

const fs = require('fs')
const os = require('os')
const path = require('path')
const dgram = require('dgram')
const { fork } = require('child_process')
const { Worker } = require('worker_threads')

const ROOT = path.join(__dirname, '..')
const threadlock = require(ROOT)
const host = require(path.join(ROOT, 'host'))
const { binding } = require(path.join(ROOT, 'lib', 'native'))
const { median, sleep } = require('./common')

const arg = (name, dflt) => {
  const a = process.argv.find((s) => s.startsWith(`--${name}=`))
  return a ? Number(a.slice(name.length + 3)) : dflt
}
const WAKES = arg('wakes', 100)
const ROUNDS = arg('rounds', 3)
const IDLE_MS = 20

const now = () => performance.timeOrigin + performance.now()

// The side that is woken, in a worker thread or in a child process: it
// answers 'ready' (or 'armed' once it waits), then the time at which its
// handler ran. Run by `node wake-floor.js --peer <kind> <dir>`.
function peerMain (kind, dir, send, onMessage) {
  const report = () => send(now())
  if (kind === 'postMessage') {
    onMessage(() => report())
    send('ready')
  } else if (kind === 'pipe') {
    process.stdin.on('data', () => process.stdout.write(`${now()}\n`))
    process.stdout.write('ready\n')
  } else if (kind === 'udp') {
    const s = dgram.createSocket('udp4')
    s.on('message', (m, from) => s.send(String(now()), from.port, '127.0.0.1'))
    s.bind(0, '127.0.0.1', () => send(s.address().port))
  } else if (kind === 'atomics' || kind === 'threadlock' || kind === 'shm') {
    const buffer = kind === 'shm'
      ? host.openSharedMemory('wake-floor', { path: dir, size: 64 })
      : dir // the SharedArrayBuffer itself, for threads
    const i = new Int32Array(buffer)
    onMessage(() => {
      const r = kind === 'atomics' ? Atomics.waitAsync(i, 0, 0) : threadlock.waitAsync(i, 0, 0)
      if (!r.async) throw new Error(`wake-floor: ${kind} did not wait (${r.value})`)
      r.value.then(report)
      send('armed')
    })
    send('ready')
  } else if (kind === 'host') {
    const locks = host.createLockManager({ path: dir })
    onMessage(() => {
      locks.request('wake-floor', () => report())
      // The request is in the table once request() returned (or on its
      // way from the worker; the 20 ms that follow cover that).
      send('armed')
    })
    send('ready')
  }
}

if (process.argv[2] === '--peer') {
  const [kind, dir] = process.argv.slice(3)
  peerMain(kind, dir, (m) => process.send(m), (f) => process.on('message', f))
  if (kind !== 'pipe') process.on('disconnect', () => process.exit(0))
  return
}

// One row: starts the woken side, then WAKES times: waits IDLE_MS, wakes
// it and records how long until its handler ran (µs).
async function measure (row) {
  const messages = []
  let waiting = null
  const deliver = (m) => {
    if (waiting) {
      const w = waiting
      waiting = null
      w(m)
    } else {
      messages.push(m)
    }
  }
  const next = () => messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise((resolve) => { waiting = resolve })
  const peer = row.start(deliver)
  try {
    await row.ready(next)
    const times = []
    for (let k = 0; k < WAKES; k++) {
      await row.arm(peer, next)
      await sleep(IDLE_MS)
      const t0 = now()
      row.wake(peer)
      times.push((Number(await next()) - t0) * 1000)
    }
    return median(times)
  } finally {
    await row.stop(peer)
  }
}

const dirs = []
process.on('exit', () => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})
function freshDir () {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-wake-floor-'))
  dirs.push(d)
  return d
}

const workerSource = `const { parentPort, workerData } = require('worker_threads')
  const { peer } = require(${JSON.stringify(__filename)})
  peer(workerData.kind, workerData.buffer, (m) => parentPort.postMessage(m), (f) => parentPort.on('message', f))`

function inThread (kind, wake) {
  const buffer = new SharedArrayBuffer(64)
  const i = new Int32Array(buffer)
  return {
    start: (deliver) => {
      const w = new Worker(workerSource, { eval: true, workerData: { kind, buffer } })
      w.on('message', deliver)
      w.on('error', (err) => deliver(`error ${err.message}`))
      return { w, i }
    },
    ready: (next) => next(),
    arm: async (p, next) => {
      if (kind === 'postMessage') return
      Atomics.store(i, 0, 0)
      p.w.postMessage('arm')
      await next()
    },
    wake,
    stop: (p) => p.w.terminate()
  }
}

function inProcess (kind, { dir = '', wake, arm }) {
  return {
    start: (deliver) => {
      const stdio = kind === 'pipe' ? ['pipe', 'pipe', 'inherit', 'ipc'] : ['ignore', 'inherit', 'inherit', 'ipc']
      const c = fork(__filename, ['--peer', kind, dir], { stdio })
      c.on('message', deliver)
      if (kind === 'pipe') {
        let out = ''
        c.stdout.on('data', (d) => {
          out += d
          let n
          while ((n = out.indexOf('\n')) >= 0) {
            deliver(out.slice(0, n))
            out = out.slice(n + 1)
          }
        })
      }
      return { c }
    },
    ready: (next) => next(),
    arm: arm || (async () => {}),
    wake,
    stop: async (p) => {
      p.c.kill()
      await new Promise((resolve) => p.c.exitCode !== null || p.c.signalCode !== null ? resolve() : p.c.once('exit', resolve))
    }
  }
}

function rows () {
  const list = []
  list.push(['Node: postMessage to a worker thread', 'thread', inThread('postMessage', (p) => p.w.postMessage('x'))])
  list.push(['Node: Atomics.notify to a worker\'s Atomics.waitAsync', 'thread', inThread('atomics', (p) => { Atomics.store(p.i, 0, 1); Atomics.notify(p.i, 0) })])
  list.push(['threadlock: notify to a worker\'s waitAsync', 'thread', inThread('threadlock', (p) => { Atomics.store(p.i, 0, 1); threadlock.notify(p.i, 0) })])
  list.push(['Node: a pipe (stdin \'data\' of another process)', 'process', inProcess('pipe', { wake: (p) => p.c.stdin.write('x') })])
  const udp = inProcess('udp', { wake: null })
  let socket = null
  let port = 0
  const udpRow = {
    ...udp,
    start: (deliver) => {
      const p = udp.start(deliver)
      socket = dgram.createSocket('udp4')
      socket.on('message', (m) => deliver(String(m)))
      return p
    },
    ready: async (next) => {
      port = await next()
      await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
    },
    wake: () => socket.send('x', port, '127.0.0.1'),
    stop: async (p) => {
      socket.close()
      await udp.stop(p)
    }
  }
  list.push(['Node: a UDP datagram to another process', 'process', udpRow])
  if (binding.shmSupported === true) {
    const dir = freshDir()
    const i = new Int32Array(host.openSharedMemory('wake-floor', { path: dir, size: 64 }))
    list.push(['threadlock: notify to another process\'s waitAsync (openSharedMemory)', 'process', inProcess('shm', {
      dir,
      arm: async (p, next) => {
        Atomics.store(i, 0, 0)
        p.c.send('arm')
        await next()
      },
      wake: () => { Atomics.store(i, 0, 1); threadlock.notify(i, 0) }
    })])
  }
  {
    const dir = freshDir()
    const locks = host.createLockManager({ path: dir })
    let held = null
    list.push(['threadlock/host: release to another process\'s request()', 'process', inProcess('host', {
      dir,
      arm: async (p, next) => {
        held = locks.requestSync('wake-floor')
        p.c.send('arm')
        await next()
      },
      wake: () => held.release()
    })])
  }
  return list
}

async function main () {
  const list = rows()
  const results = list.map(() => [])
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < list.length; k++) results[k].push(await measure(list[k][2]))
  }
  const fmt = (v) => v.toFixed(0)
  console.log(`\nwaking an event loop idle ${IDLE_MS} ms, Node ${process.version}, ${os.cpus().length} CPUs, ${WAKES} wakes x ${ROUNDS} rounds: µs from the waking call to the handler, median of the rounds' medians (range)\n`)
  console.log('| wake | of | µs |')
  console.log('|---|---|---|')
  const med = []
  for (let k = 0; k < list.length; k++) {
    med[k] = median(results[k])
    console.log(`| ${list[k][0]} | ${list[k][1]} | ${fmt(med[k])} (${fmt(Math.min(...results[k]))}–${fmt(Math.max(...results[k]))}) |`)
  }
  const by = (prefix) => list.findIndex((l) => l[0].startsWith(prefix))
  const ratio = (a, b) => (a >= 0 && b >= 0 ? (med[a] / med[b]).toFixed(2) + '×' : 'n/a')
  console.log(`\nanother process / a worker thread: Node (pipe / postMessage) ${ratio(by('Node: a pipe'), by('Node: postMessage'))}, ` +
    `Node (UDP / postMessage) ${ratio(by('Node: a UDP'), by('Node: postMessage'))}, ` +
    `threadlock waitAsync ${ratio(by('threadlock: notify to another'), by('threadlock: notify to a worker'))}`)
}

module.exports = { peer: peerMain }

if (require.main === module) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
