'use strict'

// openSharedMemory (threadlock/host): a SharedArrayBuffer over a file in a
// host directory, with real processes (4 at once, kill -9, SIGSTOP) and
// worker threads. On Node.js 20, which has no
// node_api_create_external_sharedarraybuffer, only the refusal (ENOTSUP)
// and the input checks run; the rest is skipped with that reason.

const assert = require('assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn: spawnProcess, spawnSync } = require('child_process')
const { Worker } = require('worker_threads')
const threadlock = require('..')
const { openSharedMemory, HostError } = require('../host')
const { binding } = require('../lib/native')

const ROOT = path.join(__dirname, '..')
const HOST = JSON.stringify(path.join(ROOT, 'host'))
const INDEX = JSON.stringify(ROOT)
const supported = binding.shmSupported === true
// The owner field of a lock word and the slot of an owner id (src/host/shm.h).
const SHM = binding.shmConstants || {}
const slotOf = (id) => (id >> 21) & 0x7f
const major = Number(process.versions.node.split('.')[0])
const HEADER = 65536

const made = []
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

// Every process a test starts, killed after the test if it is still there:
// a test that fails while its children wait (for stdin's end, a lock, a
// notify) must not leave them keeping the run alive.
const living = new Set()
function spawn (...args) {
  const c = spawnProcess(...args)
  living.add(c)
  c.once('exit', () => living.delete(c))
  return c
}
afterEach(async () => {
  const left = [...living]
  for (const c of left) c.kill('SIGKILL')
  await Promise.all(left.map(exited))
})

/** A new directory of this user's, removed when the test process exits. */
function tmpdir () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-shm-'))
  fs.chmodSync(dir, 0o700)
  made.push(dir)
  return dir
}

// Runs `body` (statements using `host`, `threadlock`, `dir`; the value of
// `out` is printed as JSON) in a new node process; returns { value } or
// { error: { name, code, message } }.
function run (body, dir, { args = [] } = {}) {
  const script = `const host = require(${HOST}); const threadlock = require(${INDEX});
    const dir = ${JSON.stringify(dir)}
    let out
    try { out = { value: (() => { ${body} })() } } catch (e) { out = { error: { name: e.name, code: e.code, message: e.message } } }
    console.log(JSON.stringify(out))`
  const r = spawnSync(process.execPath, [...args, '-e', script], { encoding: 'utf8', timeout: 60000 })
  if (r.status !== 0) throw new Error(`child failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

// A child that runs `body` (with `host`, `dir`, `say(line)`) and then stays
// until killed or its stdin ends. Resolves with the child once it said its
// first line.
function child (body, dir) {
  const script = `const host = require(${HOST}); const dir = ${JSON.stringify(dir)}
    const say = (s) => process.stdout.write(s + '\\n')
    ${body}
    process.stdin.on('end', () => process.exit(0)); process.stdin.resume()`
  const c = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let out = ''
    const onExit = (code, signal) => reject(new Error(`child exited (${code}, ${signal}): ${out}`))
    c.once('exit', onExit)
    c.stdout.on('data', (d) => {
      out += d
      if (out.includes('\n')) {
        c.removeListener('exit', onExit)
        resolve({ child: c, line: out.trim() })
      }
    })
  })
}

// The next line a child says after its first.
function next (c) {
  return new Promise((resolve, reject) => {
    let out = ''
    const onExit = (code, signal) => reject(new Error(`exited ${code} ${signal}`))
    const on = (d) => {
      out += d
      if (out.includes('\n')) {
        c.stdout.removeListener('data', on)
        c.removeListener('exit', onExit)
        resolve(out.trim())
      }
    }
    c.stdout.on('data', on)
    c.once('exit', onExit)
  })
}

// What the file `<dir>/<name>.shm` holds, for a failure's message: the
// first words of the data and every waiter node that is not free (state,
// owner id, offset, ticket, kind), and the children's threads' states.
function fileState (dir, name, kids = []) {
  const f = fs.readFileSync(path.join(dir, `${name}.shm`))
  const words = Math.min(24, Math.floor((f.length - HEADER) / 4))
  const out = [`data: ${Array.from({ length: words }, (_, k) => (f.readUInt32LE(HEADER + 4 * k)).toString(16)).join(' ')}`]
  for (let k = 0; (4096 + 32 * (k + 1)) <= HEADER - 512 * 16; k++) {
    const at = 4096 + 32 * k
    const st = f.readUInt32LE(at)
    if ((st & 3) === 0) continue
    out.push(`node ${k}: ${['free', 'busy', 'waiting', 'notified'][st & 3]} owner ${f.readUInt32LE(at + 4).toString(16)} offset ${f.readBigUInt64LE(at + 8)} ticket ${f.readBigUInt64LE(at + 16)} kind ${f.readUInt32LE(at + 24)}`)
  }
  for (const k of kids) {
    const pid = k.child.pid
    let tasks = []
    try { tasks = fs.readdirSync(`/proc/${pid}/task`) } catch { continue }
    const states = tasks.map((t) => {
      try {
        const comm = fs.readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim()
        return `${comm}:${fs.readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8')}`
      } catch { return '?' }
    })
    out.push(`pid ${pid} (id ${Number(k.line).toString(16)}): ${states.filter((x) => !/^(V8|node|libuv|DelayedTask|threadlock-h)/.test(x) || /^node:/.test(x)).join(' ')}`)
  }
  return out.join('\n')
}

// Awaits `p`, or fails after ms with what `describe()` returns.
async function orState (p, ms, describe) {
  let timer
  const late = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`not settled after ${ms} ms:\n${describe()}`)), ms) })
  try { return await Promise.race([p, late]) } finally { clearTimeout(timer) }
}

// Eight rounds of: 50 to 150 ms, then a child of `kids` picked at random
// stopped (SIGSTOP), `stopped(victim)` while it is, kill -9 and
// `respawn(victim)` in its place. Returns the children then running.
async function killAtRandom (kids, stopped, respawn) {
  for (let round = 0; round < 8; round++) {
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100))
    const victim = kids[Math.floor(Math.random() * kids.length)]
    victim.child.kill('SIGSTOP')
    await new Promise((resolve) => setTimeout(resolve, 20))
    stopped(victim)
    victim.child.kill('SIGKILL')
    await exited(victim.child)
    kids = kids.filter((k) => k !== victim)
    kids.push(await respawn(victim))
  }
  return kids
}

// After killAtRandom: the survivors run for `pause` ms, and the count at
// i[progress] has grown by then or grows within 30 s (the survivors go
// on), then i[stop] set, every child says 'done' within 30 s (else the
// failure shows the file `name`'s nodes and the children).
async function survivorsFinish (i, progress, stop, pause, kids, dir, name) {
  const before = Atomics.load(i, progress)
  await new Promise((resolve) => setTimeout(resolve, pause))
  // Not within `pause` only: on a loaded machine a holder preempted inside
  // its 2 ms hold, or a grantee that is runnable but not yet run, keeps
  // the other survivors waiting meanwhile (gaps of up to 0.7 s between two
  // grants, the holder or grantee runnable, nobody asleep in vain, with two
  // copies of this file and four busy processes on 2 cores; a fixed 300 ms
  // window saw no grant in 1 of 10 such runs). A lost wake-up still fails:
  // no grant in 30 s.
  for (let k = 0; Atomics.load(i, progress) === before; k++) {
    if (k === 3000) assert.fail(`the survivors go on: no grant in 30 s\n${fileState(dir, name, kids)}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const done = kids.map((k) => next(k.child))
  Atomics.store(i, stop, 1)
  assert.deepStrictEqual(await orState(Promise.all(done), 30000, () => fileState(dir, name, kids)), kids.map(() => 'done'))
}

// Polls `f` every 10 ms for up to 30 s.
async function until (f, what) {
  for (let k = 0; k < 3000; k++) {
    if (f()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}

// This thread holds the word of `i` (a lock's, or an RWLock's write lock)
// 2 ms at a time and takes it again at once after each `release()`
// (`retake()`), for up to 3 s, until a release has handed the word to the
// owner id `id`: right after it the word names that id with HANDED. A
// waiter that only competed would be woken at each release and find the
// word taken again, or win a race now and then, but never be handed it;
// one handed it may also take it up before this thread looks (then a later
// release hands it again). Returns whether one did, and the holds made.
function holdUntilHanded (i, id, release, retake) {
  const t0 = performance.now()
  let handed = false
  let rounds = 0
  while (!handed && performance.now() - t0 < 3000) {
    const end = performance.now() + 2
    while (performance.now() < end);
    release()
    const v = Atomics.load(i, 0)
    handed = (v & SHM.LOCK_HANDED) !== 0 && (v & SHM.LOCK_ID) === id
    if (!handed) retake()
    rounds++
  }
  return { handed, rounds }
}

// The shape of the tests "a busy event loop holds up nobody" for a lock
// across processes in directory `dir`, made in each process by the source `make` (the object
// `x`, in memory `b`), taken blocking by `take` and given back by `give`:
// a looper takes it `hold` ms at a time, again at once, until i[5]; this
// thread's promise request (`request(x)`, on `open(b)`) sleeps at once,
// older than a blocking waiter's, which asks once i[6] is set; then this
// event loop is busy for 400 ms (2 s under qemu-user, where a process wakes
// slowly), so the request, woken by some release, does not run (a release
// that handed it the lock, asleep since it queued, would hold up everyone
// until this loop runs). The blocking waiter must be granted meanwhile (i[1]),
// having waited less than 3/4 of it (i[12], ms). Returns this thread's
// object, its request granted and released.
async function busyHoldsUpNobody (dir, name, { make, take, give, hold }, open, request) {
  const mem = JSON.stringify(name)
  const b = openSharedMemory(name, { path: dir, size: 64 })
  const i = new Int32Array(b)
  const x = open(b)
  const looper = await child(`const threadlock = require(${INDEX})
    const b = host.openSharedMemory(${mem}, { path: dir, size: 64 })
    const i = new Int32Array(b)
    const x = ${make}
    const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
    ${take}
    say('holding')
    setTimeout(() => { for (;;) { spin(${hold}); if (Atomics.load(i, 5) !== 0) break; ${give}; ${take} } ${give} }, 0)`, dir)
  const w = await child(`const threadlock = require(${INDEX})
    const b = host.openSharedMemory(${mem}, { path: dir, size: 64 })
    const i = new Int32Array(b)
    const x = ${make}
    say('ready')
    setTimeout(() => {
      threadlock.wait(i, 6, 0)
      const t0 = performance.now()
      ${take}
      Atomics.store(i, 12, Math.round(performance.now() - t0))
      Atomics.store(i, 1, 1)
      ${give}
    }, 0)`, dir)
  const BUSY = process.env.THREADLOCK_TEST_QEMU ? 2000 : 400
  let granted = false
  const p = request(x).then((release) => { granted = true; release() })
  Atomics.store(i, 6, 1)
  threadlock.notify(i, 6)
  const t0 = performance.now()
  while (performance.now() - t0 < BUSY);
  const during = Atomics.load(i, 1)
  const waited = Atomics.load(i, 12)
  const word = Atomics.load(i, 0)
  Atomics.store(i, 5, 1)
  await p
  assert.strictEqual(granted, true)
  await until(() => Atomics.load(i, 1) !== 0, 'the blocking waiter')
  assert.strictEqual(during, 1, `the blocking waiter was not granted while this event loop was busy (the word then: ${(word >>> 0).toString(16)}, this thread's owner id ${binding.shmOwnerId(i).toString(16)}; it waited ${Atomics.load(i, 12)} ms)`)
  assert.ok(waited < BUSY * 0.75, `it waited ${waited} ms`)
  for (const k of [looper, w]) k.child.stdin.end()
  await Promise.all([looper, w].map((k) => exited(k.child)))
  return x
}

function exited (c) {
  return new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) resolve()
    else c.once('exit', () => resolve())
  })
}

describe('openSharedMemory: input and refusal on every Node.js', () => {
  let dir
  beforeEach(() => { dir = tmpdir() })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('refuses bad input with TypeError or RangeError before anything is created', () => {
    const sub = path.join(dir, 'sub')
    const type = [
      [1, { path: sub, size: 8 }],
      [undefined, { path: sub, size: 8 }],
      [Symbol('x'), { path: sub, size: 8 }],
      ['a'],
      ['a', null],
      ['a', 'size'],
      ['a', { path: sub }],
      ['a', { path: sub, size: '64' }],
      ['a', { path: sub, size: 8n }],
      ['a', { path: 1, size: 8 }],
      ['a', { path: sub, size: 8, mode: 1 }]
    ]
    for (const args of type) {
      assert.throws(() => openSharedMemory(...args), (e) => e instanceof TypeError && e.message.startsWith('openSharedMemory:'), String(args[0]))
    }
    const range = [
      ['', { path: sub, size: 8 }],
      ['.hidden', { path: sub, size: 8 }],
      ['a/b', { path: sub, size: 8 }],
      ['../a', { path: sub, size: 8 }],
      ['a\0', { path: sub, size: 8 }],
      ['x'.repeat(201), { path: sub, size: 8 }],
      ['a', { path: sub, size: 0 }],
      ['a', { path: sub, size: -8 }],
      ['a', { path: sub, size: 12 }],
      ['a', { path: sub, size: 8.5 }],
      ['a', { path: sub, size: NaN }],
      ['a', { path: sub, size: Infinity }],
      ['a', { path: sub, size: 2 ** 53 }],
      ['a', { path: '', size: 8 }]
    ]
    for (const args of range) {
      assert.throws(() => openSharedMemory(...args), (e) => e instanceof RangeError && e.message.startsWith('openSharedMemory:'), `${String(args[0])} ${args[1].size}`)
    }
    assert.strictEqual(fs.existsSync(sub), false)
  })

  it('Node.js 20 refuses with HostError ENOTSUP; 22 and later have the runtime call', function () {
    if (major >= 22) {
      assert.strictEqual(supported, true, 'Node.js >= 22 exports node_api_create_external_sharedarraybuffer')
      return
    }
    assert.strictEqual(supported, false)
    assert.throws(() => openSharedMemory('a', { path: dir, size: 8 }), (e) =>
      e instanceof HostError && e.code === 'ENOTSUP' && /Node\.js 22/.test(e.message))
    assert.deepStrictEqual(fs.readdirSync(dir), [])
  })
})

describe('openSharedMemory (Node.js >= 22)', function () {
  this.timeout(60000)
  let dir
  before(function () {
    if (!supported) {
      console.log(`      (skipped: Node.js ${process.version} has no node_api_create_external_sharedarraybuffer; .ci/node-majors.sh runs these on 22, 24 and 26)`)
      this.skip()
    }
  })
  beforeEach(() => { dir = tmpdir() })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('gives a zero-filled SharedArrayBuffer of the size over <name>.shm, mode 0600, every block allocated', () => {
    const b = openSharedMemory('counters', { path: dir, size: 4096 + 64 })
    assert.ok(b instanceof SharedArrayBuffer)
    assert.strictEqual(b.byteLength, 4096 + 64)
    assert.ok(new Uint8Array(b).every((x) => x === 0))
    const st = fs.statSync(path.join(dir, 'counters.shm'))
    assert.strictEqual(st.size, HEADER + 4096 + 64)
    assert.strictEqual(st.mode & 0o777, 0o600)
    assert.ok(st.blocks * 512 >= st.size, 'allocated, not sparse')
  })

  it('is the same memory for 4 processes opening the same name at once (exact counts)', async () => {
    const N = 20000
    const body = `const b = host.openSharedMemory('c', { path: dir, size: 64 })
      const i = new Int32Array(b)
      Atomics.add(i, 1, 1)
      while (Atomics.load(i, 1) < 4) {}
      for (let k = 0; k < ${N}; k++) Atomics.add(i, 0, 1)
      Atomics.add(i, 2, 1)
      say('done')`
    const kids = await Promise.all([0, 1, 2, 3].map(() => child(body, dir)))
    const i = new Int32Array(openSharedMemory('c', { path: dir, size: 64 }))
    assert.strictEqual(Atomics.load(i, 2), 4)
    assert.strictEqual(Atomics.load(i, 0), 4 * N)
    for (const k of kids) k.child.stdin.end()
    await Promise.all(kids.map((k) => exited(k.child)))
  })

  it('outlives a process killed with kill -9, and a SIGSTOPped process does not delay another opener', async () => {
    const { child: c } = await child(`const i = new Int32Array(host.openSharedMemory('m', { path: dir, size: 16 }))
      Atomics.store(i, 0, 1234); say('ready')`, dir)
    const i = new Int32Array(openSharedMemory('m', { path: dir, size: 16 }))
    c.kill('SIGSTOP')
    const r = run("return Atomics.load(new Int32Array(host.openSharedMemory('m', { path: dir, size: 16 })), 0)", dir)
    assert.deepStrictEqual(r, { value: 1234 })
    c.kill('SIGKILL')
    await exited(c)
    assert.strictEqual(Atomics.load(i, 0), 1234)
    const after = run("const i = new Int32Array(host.openSharedMemory('m', { path: dir, size: 16 })); Atomics.add(i, 0, 1); return Atomics.load(i, 0)", dir)
    assert.deepStrictEqual(after, { value: 1235 })
    assert.strictEqual(Atomics.load(i, 0), 1235)
  })

  it('is the same memory again in the same process and in a worker that opens the name', async () => {
    const a = new Int32Array(openSharedMemory('w', { path: dir, size: 8 }))
    const b = new Int32Array(openSharedMemory('w', { path: dir, size: 8 }))
    Atomics.store(a, 0, 7)
    assert.strictEqual(Atomics.load(b, 0), 7)
    const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
      const host = require(${HOST})
      const i = new Int32Array(host.openSharedMemory('w', { path: workerData, size: 8 }))
      Atomics.add(i, 0, 1)
      parentPort.postMessage(Atomics.load(i, 0))`, { eval: true, workerData: dir })
    const [v] = await Promise.all([new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) }), new Promise((resolve) => w.once('exit', resolve))])
    assert.strictEqual(v, 8)
    assert.strictEqual(Atomics.load(a, 0), 8)
  })

  it('refuses another size with a RangeError that names the size the file has', () => {
    openSharedMemory('s', { path: dir, size: 64 })
    assert.throws(() => openSharedMemory('s', { path: dir, size: 128 }), (e) => e instanceof RangeError && /size 64, not 128/.test(e.message))
    const r = run("return host.openSharedMemory('s', { path: dir, size: 8 })", dir)
    assert.strictEqual(r.error.name, 'RangeError')
  })

  it('a name belongs to its directory', () => {
    const other = tmpdir()
    try {
      const a = new Int32Array(openSharedMemory('n', { path: dir, size: 8 }))
      const b = new Int32Array(openSharedMemory('n', { path: other, size: 8 }))
      Atomics.store(a, 0, 1)
      assert.strictEqual(Atomics.load(b, 0), 0)
    } finally {
      fs.rmSync(other, { recursive: true, force: true })
    }
  })

  it('refuses what another user could change (the host trust checks): directory mode, symbolic links, hard link, FIFO, mode, owner', () => {
    const open = (d, name = 'x') => { try { openSharedMemory(name, { path: d, size: 8 }); return 'opened' } catch (e) { return `${e.name} ${e.code}` } }
    const wide = path.join(dir, 'wide')
    fs.mkdirSync(wide, { mode: 0o777 })
    fs.chmodSync(wide, 0o777)
    assert.strictEqual(open(wide), 'HostError EUNSAFE')
    const real = path.join(dir, 'real')
    fs.mkdirSync(real, { mode: 0o700 })
    fs.symlinkSync(real, path.join(dir, 'link'))
    assert.strictEqual(open(path.join(dir, 'link')), 'HostError EUNSAFE')
    fs.writeFileSync(path.join(dir, 'target'), '')
    fs.symlinkSync(path.join(dir, 'target'), path.join(real, 'sym.shm'))
    assert.strictEqual(open(real, 'sym'), 'HostError EUNSAFE')
    openSharedMemory('hard', { path: real, size: 8 })
    fs.linkSync(path.join(real, 'hard.shm'), path.join(dir, 'elsewhere'))
    assert.strictEqual(open(real, 'hard'), 'HostError EUNSAFE')
    spawnSync('mkfifo', [path.join(real, 'fifo.shm')])
    assert.strictEqual(open(real, 'fifo'), 'HostError EUNSAFE')
    fs.writeFileSync(path.join(real, 'mode.shm'), '', { mode: 0o644 })
    fs.chmodSync(path.join(real, 'mode.shm'), 0o644)
    assert.strictEqual(open(real, 'mode'), 'HostError EUNSAFE')
    if (process.geteuid() === 0) {
      fs.writeFileSync(path.join(real, 'owner.shm'), '', { mode: 0o600 })
      fs.chownSync(path.join(real, 'owner.shm'), 65534, 65534)
      assert.strictEqual(open(real, 'owner'), 'HostError EUNSAFE')
    }
  })

  it('refuses a file that was truncated or extended (ECORRUPT), or is not shared memory, instead of mapping it', () => {
    openSharedMemory('t', { path: dir, size: 8192 })
    const file = path.join(dir, 't.shm')
    fs.truncateSync(file, HEADER + 4096)
    assert.throws(() => openSharedMemory('t', { path: dir, size: 8192 }), (e) => e instanceof HostError && e.code === 'ECORRUPT')
    fs.truncateSync(file, HEADER + 16384)
    assert.throws(() => openSharedMemory('t', { path: dir, size: 8192 }), (e) => e instanceof HostError && e.code === 'ECORRUPT')
    fs.writeFileSync(path.join(dir, 'junk.shm'), 'not a header at all, just text', { mode: 0o600 })
    assert.throws(() => openSharedMemory('junk', { path: dir, size: 8 }), (e) => e instanceof HostError && e.code === 'ECORRUPT')
  })

  it('the promise methods of every primitive on it reject a wrong receiver, never throw (also where a free word runs the callback at once)', async () => {
    const b = openSharedMemory('recv', { path: dir, size: 64 })
    const objects = [new threadlock.AsyncLock(b, 0), new threadlock.Semaphore(2, b, 8), new threadlock.RWLock(b, 16)]
    const calls = [
      ['runExclusive', [() => {}]], ['executeLocked', [() => {}]], ['acquire', []], ['runWrite', [() => {}]], ['acquireWrite', []]
    ]
    let tried = 0
    for (const x of objects) {
      const proto = Object.getPrototypeOf(x)
      for (const [method, args] of calls) {
        if (typeof proto[method] !== 'function') continue
        let p
        assert.doesNotThrow(() => { p = proto[method].call({}, ...args) }, `${proto.constructor.name}.${method}`)
        await assert.rejects(p, TypeError, `${proto.constructor.name}.${method}`)
        tried++
      }
      // And on the real object the fast paths grant and release.
      if (typeof x.runExclusive === 'function') assert.strictEqual(await x.runExclusive(() => 7), 7)
      if (typeof x.runWrite === 'function') assert.strictEqual(await x.runWrite(() => 8), 8)
    }
    assert.strictEqual(tried, 7)
    assert.strictEqual(objects[0].locked, false)
    assert.strictEqual(objects[1].value, 2)
    assert.strictEqual(objects[2].writer, null)
  })

  it('refuses a file of another layout version (EVERSION, both versions named) and leaves it as it was', () => {
    openSharedMemory('v', { path: dir, size: 64 })
    const file = path.join(dir, 'v.shm')
    const fd = fs.openSync(file, 'r+')
    const version = Buffer.alloc(4)
    fs.readSync(fd, version, 0, 4, 8)
    const ours = version.readUInt32LE(0)
    version.writeUInt32LE(ours - 1, 0)
    fs.writeSync(fd, version, 0, 4, 8)
    fs.closeSync(fd)
    const before = fs.readFileSync(file)
    assert.throws(() => openSharedMemory('v', { path: dir, size: 64 }), (e) => e instanceof HostError && e.code === 'EVERSION' &&
      e.message.includes(`(${ours - 1}, this is ${ours})`))
    assert.ok(fs.readFileSync(file).equals(before), 'the file was changed')
  })

  it('wait, notify and waiterCount on a file truncated under the process: an ECORRUPT error, never SIGBUS', function () {
    if (!supported) this.skip()
    const r = run(`const threadlock = require(${INDEX})
      const i = new Int32Array(host.openSharedMemory('cut', { path: dir, size: 1 << 20 }))
      require('fs').truncateSync(require('path').join(dir, 'cut.shm'), 65536 + 4096)
      const out = []
      for (const f of [() => threadlock.notify(i, 100000), () => threadlock.wait(i, 100000, 0, 10), () => threadlock.waiterCount(i, 100000), () => threadlock.notify(i, 0)]) {
        try { out.push(String(f())) } catch (e) { out.push(e.code) }
      }
      return out`, dir)
    assert.deepStrictEqual(r.value, ['ECORRUPT', 'ECORRUPT', 'ECORRUPT', 'ECORRUPT'])
  })

  it('a wait blocked when the file is truncated ends with ECORRUPT, never SIGBUS', async function () {
    const c = await child(`const { Worker } = require('worker_threads')
      const threadlock = require(${INDEX})
      const i = new Int32Array(host.openSharedMemory('cut2', { path: dir, size: 1 << 20 }))
      const w = new Worker('const { parentPort, workerData } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); try { parentPort.postMessage(t.wait(new Int32Array(workerData), 0, 0)) } catch (e) { parentPort.postMessage(e.code) }', { eval: true, workerData: i.buffer })
      w.on('message', (m) => say(String(m)))
      const tick = () => { if (threadlock.waiterCount(i, 0) === 1) say('waiting'); else setTimeout(tick, 10) }
      tick()`, dir)
    assert.strictEqual(c.line, 'waiting')
    const got = new Promise((resolve) => {
      let out = ''
      c.child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(out.trim()) })
    })
    fs.truncateSync(path.join(dir, 'cut2.shm'), 65536 + 4096)
    assert.strictEqual(await got, 'ECORRUPT')
    c.child.stdin.end()
    await exited(c.child)
    assert.strictEqual(c.child.signalCode, null)
  })

  it('initialises again a file whose creator died before the header (empty or header never written)', () => {
    fs.writeFileSync(path.join(dir, 'e.shm'), '', { mode: 0o600 })
    const a = new Uint8Array(openSharedMemory('e', { path: dir, size: 64 }))
    assert.strictEqual(a.length, 64)
    fs.writeFileSync(path.join(dir, 'z.shm'), Buffer.alloc(100), { mode: 0o600 })
    const z = new Uint8Array(openSharedMemory('z', { path: dir, size: 8 }))
    assert.ok(z.every((x) => x === 0))
  })

  it('leaves no file when the OS cannot allocate the size', () => {
    assert.throws(() => openSharedMemory('huge', { path: dir, size: 2 ** 52 }), (e) => e instanceof HostError && typeof e.code === 'string' && e.message.startsWith('openSharedMemory:'))
    assert.deepStrictEqual(fs.readdirSync(dir), [])
  })

  it('unmaps the file when the last SharedArrayBuffer over it is collected', () => {
    const r = run(`const native = require(${JSON.stringify(path.join(ROOT, 'lib', 'native'))})
      const maps = () => require('fs').readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.includes(dir)).length
      let keep = []
      for (let k = 0; k < 50; k++) keep.push(host.openSharedMemory('g', { path: dir, size: 1 << 20 }))
      const during = [native.shmCount(), maps()]
      keep = null
      for (let k = 0; k < 10 && native.shmCount() > 0; k++) globalThis.gc()
      return { during, after: [native.shmCount(), maps()] }`, dir, { args: ['--expose-gc'] })
    // 50 mappings of the file, and the process's one mapping of its header
    // page (its slot: shm_owners.c), left with the last of them.
    assert.deepStrictEqual(r.value.during, [50, 51])
    assert.deepStrictEqual(r.value.after, [0, 0])
  })

  it('an RWLock\'s view of the header page keeps the mapping until both are collected, then it goes with them', () => {
    const r = run(`const native = require(${JSON.stringify(path.join(ROOT, 'lib', 'native'))})
      const threadlock = require(${INDEX})
      const maps = () => require('fs').readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.includes(dir)).length
      // Made in a function of its own, so that no stale register of this
      // frame keeps the last one.
      const make = () => {
        const l = new threadlock.RWLock(host.openSharedMemory('h', { path: dir, size: 64 }), 8)
        l.acquireWriteSync()
        l.releaseWrite()
        return l
      }
      let locks = []
      for (let k = 0; k < 20; k++) locks.push(make())
      const during = [native.shmCount(), maps()]
      // The buffers alone, without their locks (which hold them), are not
      // enough: drop the locks, and both go.
      locks = null
      for (let k = 0; k < 10 && native.shmCount() > 0; k++) globalThis.gc()
      return { during, after: [native.shmCount(), maps()] }`, dir, { args: ['--expose-gc'] })
    assert.deepStrictEqual(r.value.during, [20, 21])
    // Every mapping of the file went, the views' references with them; the
    // page left is the join's own (src/host/shm_owners.c), which the
    // thread's owner id keeps until the thread ends.
    assert.deepStrictEqual(r.value.after, [0, 1])
  })

  it('removing the file: open mappings keep their memory, the next open makes a new zero-filled file', () => {
    const a = new Int32Array(openSharedMemory('r', { path: dir, size: 8 }))
    Atomics.store(a, 0, 5)
    fs.rmSync(path.join(dir, 'r.shm'))
    assert.strictEqual(Atomics.load(a, 0), 5)
    const b = new Int32Array(openSharedMemory('r', { path: dir, size: 8 }))
    assert.strictEqual(Atomics.load(b, 0), 0)
  })

  describe('owner ids unique across processes, alive by OFD byte locks (binding.shmOwnerId / shmOwnerAlive)', () => {
    const NATIVE = JSON.stringify(path.join(ROOT, 'lib', 'native'))
    const idChild = (name) => child(`const { binding } = require(${NATIVE})
      const i = new Int32Array(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 8 }))
      say(String(binding.shmOwnerId(i)))`, dir)

    it('a live process stays alive while other processes open the file and look for a slot (up to 120 opens in 4 s, its liveness read all along by a worker)', async function () {
      // Under qemu-user (.ci/cross.sh) a node process takes seconds to
      // start: fewer opens there.
      const OPENS = process.env.THREADLOCK_TEST_QEMU ? 6 : 40
      this.timeout(60000)
      const i = new Int32Array(openSharedMemory('scan', { path: dir, size: 8 }))
      const holder = await idChild('scan')
      const id = Number(holder.line)
      // A worker reads the holder's liveness as fast as it can until the
      // stop word is set, and counts the readings that said dead.
      const stopWord = new Int32Array(new SharedArrayBuffer(4))
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const { binding } = require(${NATIVE})
        const i = new Int32Array(workerData.buffer)
        let dead = 0
        let reads = 0
        parentPort.postMessage('started')
        while (Atomics.load(workerData.stop, 0) === 0) { reads++; if (binding.shmOwnerAlive(i, workerData.id) !== true) dead++ }
        parentPort.postMessage({ dead, reads })`, { eval: true, workerData: { buffer: i.buffer, stop: stopWord, id } })
      // Listened for before anything can make the worker end: it exits
      // right after its last message, and its 'exit' may come before the
      // code after that message's await runs (a listener attached there
      // waited for ever, 1 run in 10 under load).
      const ended = new Promise((resolve) => w.once('exit', resolve))
      const messages = []
      let waiting = null
      w.on('message', (m) => { if (waiting) { const f = waiting; waiting = null; f(m) } else messages.push(m) })
      const nextMessage = () => messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise((resolve) => { waiting = resolve })
      assert.strictEqual(await nextMessage(), 'started')
      // Three processes open the file OPENS times each, one new process
      // per open: each looks for a free slot, past the holder's.
      const opener = `const host = require(${HOST}); host.openSharedMemory('scan', { path: ${JSON.stringify(dir)}, size: 8 })`
      // At most 4 s of opening: the worker spins a core meanwhile, and a
      // loaded machine (npm test runs three files at once) starts node
      // processes slowly.
      const loop = `const { spawnSync } = require('child_process'); const end = Date.now() + 4000; for (let n = 0; n < ${OPENS} && Date.now() < end; n++) { const r = spawnSync(process.execPath, ['-e', ${JSON.stringify(opener)}], { timeout: 30000 }); if (r.status !== 0) { console.error('an opener ended with ' + r.status + ' ' + r.signal + ': ' + r.stderr); process.exit(1) } }`
      await Promise.all([0, 1, 2].map(() => new Promise((resolve, reject) => {
        const c = spawn(process.execPath, ['-e', loop], { stdio: ['ignore', 'ignore', 'inherit'] })
        c.once('exit', (code) => code === 0 ? resolve() : reject(new Error(`opener exited ${code}`)))
      })))
      Atomics.store(stopWord, 0, 1)
      const { dead, reads } = await nextMessage()
      await ended
      assert.ok(reads > 1000, `the worker read the liveness ${reads} times`)
      assert.strictEqual(dead, 0, `the live holder read as dead ${dead} times of ${reads} while other processes looked for a slot`)
      holder.child.stdin.end()
      await exited(holder.child)
    })

    it('4 processes, their main threads and a worker get 4 + 2 different ids, each alive; kill -9 makes one dead, SIGSTOP does not; its slot reused gets a new id', async () => {
      const i = new Int32Array(openSharedMemory('o', { path: dir, size: 8 }))
      const mine = binding.shmOwnerId(i)
      assert.strictEqual(binding.shmOwnerId(i), mine, 'one id per thread')
      const kids = await Promise.all([0, 1, 2, 3].map(() => idChild('o')))
      const ids = kids.map((k) => Number(k.line))
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const { binding } = require(${NATIVE})
        parentPort.postMessage(binding.shmOwnerId(new Int32Array(workerData)))
        parentPort.once('message', () => process.exit(0))`, { eval: true, workerData: i.buffer })
      const wid = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      const all = [mine, wid, ...ids]
      assert.strictEqual(new Set(all).size, 6, `distinct: ${all}`)
      for (const id of all) {
        assert.ok(id > 0 && id < 2 ** 29, `fits the owner field: ${id}`)
        assert.strictEqual(binding.shmOwnerAlive(i, id), true, `alive: ${id}`)
      }
      // A worker that ends is dead as an owner, for this process and others.
      const ended = new Promise((resolve) => w.once('exit', resolve))
      w.postMessage('end')
      await ended
      assert.strictEqual(binding.shmOwnerAlive(i, wid), false)
      assert.deepStrictEqual(run(`const { binding } = require(${NATIVE})
        const i = new Int32Array(host.openSharedMemory('o', { path: dir, size: 8 }))
        return [binding.shmOwnerAlive(i, ${wid}), binding.shmOwnerAlive(i, ${mine}), binding.shmOwnerAlive(i, ${ids[1]})]`, dir), { value: [false, true, true] })
      // SIGSTOP: still alive. kill -9: dead, and only that one.
      kids[0].child.kill('SIGSTOP')
      assert.strictEqual(binding.shmOwnerAlive(i, ids[0]), true)
      kids[0].child.kill('SIGKILL')
      await exited(kids[0].child)
      assert.strictEqual(binding.shmOwnerAlive(i, ids[0]), false)
      for (const id of ids.slice(1)) assert.strictEqual(binding.shmOwnerAlive(i, id), true)
      // The freed slot is claimed again (the first free one) with a new
      // generation: a new id, and the dead one stays dead.
      const again = await idChild('o')
      const nid = Number(again.line)
      assert.strictEqual(slotOf(nid), slotOf(ids[0]), 'the same slot')
      assert.notStrictEqual(nid, ids[0])
      assert.strictEqual(binding.shmOwnerAlive(i, nid), true)
      assert.strictEqual(binding.shmOwnerAlive(i, ids[0]), false)
      for (const k of [...kids.slice(1), again]) k.child.stdin.end()
      await Promise.all([...kids.slice(1), again].map((k) => exited(k.child)))
      for (const id of [...ids, nid]) assert.strictEqual(binding.shmOwnerAlive(i, id), false, `exited: ${id}`)
    })

    it('97th process: HostError EFULL (every slot\'s liveness byte held, here by POSIX locks of another process); byte 0 held: EATTACH after 5 s', async function () {
      if (spawnSync('python3', ['-c', '1']).status !== 0) this.skip()
      // Made by a process that is gone: this one holds no slot of it.
      assert.strictEqual(run("return host.openSharedMemory('full', { path: dir, size: 8 }).byteLength", dir).value, 8)
      const file = path.join(dir, 'full.shm')
      const py = spawn('python3', ['-c', `import fcntl, os, sys
fd = os.open(${JSON.stringify(file)}, os.O_RDWR)
for b in sys.argv[1:]:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(b))
print('held', flush=True)
sys.stdin.read()`, ...Array.from({ length: 96 }, (_, k) => String(128 + k)), '0'], { stdio: ['pipe', 'pipe', 'inherit'] })
      await new Promise((resolve, reject) => { py.stdout.once('data', resolve); py.once('exit', reject) })
      try {
        const t0 = Date.now()
        const r = run("return host.openSharedMemory('full', { path: dir, size: 8 })", dir)
        assert.strictEqual(r.error.code, 'EATTACH', JSON.stringify(r))
        assert.ok(Date.now() - t0 >= 4900)
      } finally {
        py.stdin.end()
        await exited(py)
      }
      const py2 = spawn('python3', ['-c', `import fcntl, os, sys
fd = os.open(${JSON.stringify(file)}, os.O_RDWR)
for b in sys.argv[1:]:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(b))
print('held', flush=True)
sys.stdin.read()`, ...Array.from({ length: 96 }, (_, k) => String(128 + k))], { stdio: ['pipe', 'pipe', 'inherit'] })
      await new Promise((resolve, reject) => { py2.stdout.once('data', resolve); py2.once('exit', reject) })
      try {
        const r = run("return host.openSharedMemory('full', { path: dir, size: 8 })", dir)
        assert.strictEqual(r.error.code, 'EFULL', JSON.stringify(r))
        assert.strictEqual(r.error.name, 'HostError')
      } finally {
        py2.stdin.end()
        await exited(py2)
      }
      assert.strictEqual(run("return host.openSharedMemory('full', { path: dir, size: 8 }).byteLength", dir).value, 8)
    })

    it('a process that exited is no longer an owner there; memory of no file has no owner ids', () => {
      const r = run(`const { binding } = require(${NATIVE})
        let b = host.openSharedMemory('g2', { path: dir, size: 8 })
        const id = binding.shmOwnerId(new Int32Array(b))
        return id`, dir)
      const i = new Int32Array(openSharedMemory('g2', { path: dir, size: 8 }))
      assert.strictEqual(binding.shmOwnerAlive(i, r.value), false)
      assert.throws(() => binding.shmOwnerId(new Int32Array(8)), TypeError)
    })
  })

  describe('wait / notify across processes (the waiter list in the file)', () => {
    // A child that opens `name` and blocks in threadlock.wait(i, index, 0,
    // timeout); it says 'waiting' first and then the result and the time.
    const waiter = (name, { index = 0, timeout = 'Infinity' } = {}) => child(`const threadlock = require(${INDEX})
      const i = new Int32Array(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }))
      say('waiting')
      const t0 = Date.now()
      const r = threadlock.wait(i, ${index}, 0, ${timeout})
      say(r + ' ' + (Date.now() - t0))`, dir)

    it('notify counts the waiters it woke in every process (4 processes + a worker), oldest first', async () => {
      const i = new Int32Array(openSharedMemory('wn', { path: dir, size: 64 }))
      const kids = []
      for (let k = 0; k < 4; k++) {
        const w = await waiter('wn')
        kids.push(w)
        await until(() => threadlock.waiterCount(i, 0) === k + 1, `waiter ${k}`)
      }
      const worker = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        parentPort.postMessage(threadlock.wait(new Int32Array(workerData), 0, 0))`, { eval: true, workerData: i.buffer })
      const wr = new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject) })
      await until(() => threadlock.waiterCount(i, 0) === 5, 'the worker')
      // Oldest first: one notify wakes the first process, not the others.
      const first = next(kids[0].child)
      assert.strictEqual(threadlock.notify(i, 0, 1), 1)
      assert.match(await first, /^ok /)
      assert.strictEqual(threadlock.waiterCount(i, 0), 4)
      const rest = kids.slice(1).map((k) => next(k.child))
      assert.strictEqual(threadlock.notify(i, 0), 4)
      for (const r of await Promise.all(rest)) assert.match(r, /^ok /)
      assert.strictEqual(await wr, 'ok')
      assert.strictEqual(threadlock.notify(i, 0), 0)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('oldest first also when a newer waiter took an older waiter\'s place in the list', async () => {
      const i = new Int32Array(openSharedMemory('wf', { path: dir, size: 64 }))
      // a is a worker of this process, which leaves when it is terminated,
      // whenever b's process has come (a timeout would have to outlast
      // b's start, which takes seconds under emulation).
      const a = new Worker(`const { workerData } = require('worker_threads')
        require(${INDEX}).wait(new Int32Array(workerData), 0, 0)`, { eval: true, workerData: i.buffer })
      const aExited = new Promise((resolve) => a.once('exit', resolve))
      await until(() => threadlock.waiterCount(i, 0) === 1, 'a')
      const b = await waiter('wf')
      await until(() => threadlock.waiterCount(i, 0) === 2, 'b')
      await a.terminate()
      await aExited
      await until(() => threadlock.waiterCount(i, 0) === 1, 'a to leave')
      // c takes the node a left, before b's in the list, with a later ticket.
      const c = await waiter('wf')
      await until(() => threadlock.waiterCount(i, 0) === 2, 'c')
      const rb = next(b.child)
      assert.strictEqual(threadlock.notify(i, 0, 1), 1)
      assert.match(await rb, /^ok /)
      assert.strictEqual(threadlock.waiterCount(i, 0), 1)
      const rc = next(c.child)
      assert.strictEqual(threadlock.notify(i, 0, 1), 1)
      assert.match(await rc, /^ok /)
      for (const k of [b, c]) k.child.stdin.end()
      await Promise.all([b, c].map((k) => exited(k.child)))
    })

    it('another word, not-equal, and a timeout that is never early', async () => {
      const i = new Int32Array(openSharedMemory('wt', { path: dir, size: 64 }))
      Atomics.store(i, 2, 5)
      assert.strictEqual(threadlock.wait(i, 2, 0, 1000), 'not-equal')
      const w = await waiter('wt', { index: 1, timeout: 300 })
      const r = await next(w.child)
      const [res, ms] = r.split(' ')
      assert.strictEqual(res, 'timed-out')
      assert.ok(Number(ms) >= 300, `waited ${ms} ms`)
      assert.strictEqual(threadlock.wait(i, 1, 0, 50), 'timed-out')
      w.child.stdin.end()
      await exited(w.child)
    })

    it('a waiting process uses no CPU; a SIGSTOPped waiter is still counted and returns ok after SIGCONT; a kill -9ed one is not counted and its node is reclaimed', async () => {
      const i = new Int32Array(openSharedMemory('wk', { path: dir, size: 64 }))
      const a = await waiter('wk')
      await until(() => threadlock.waiterCount(i, 0) === 1, 'a')
      const b = await waiter('wk')
      await until(() => threadlock.waiterCount(i, 0) === 2, 'b')
      const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }
      // A process that polled would use CPU in every second; one that
      // sleeps may still finish its start-up work in the first (under
      // emulation, start-up takes seconds): the least of three seconds.
      const used = []
      for (let k = 0; k < 3 && !(used.length > 0 && Math.min(...used) <= 10); k++) {
        const before = ticks(b.child.pid)
        await new Promise((resolve) => setTimeout(resolve, 1000))
        used.push(ticks(b.child.pid) - before)
      }
      assert.ok(Math.min(...used) <= 10, `the waiting process used ${used.join(', ')} ticks of CPU in each second`)
      a.child.kill('SIGKILL')
      await exited(a.child)
      b.child.kill('SIGSTOP')
      assert.strictEqual(threadlock.waiterCount(i, 0), 1)
      const rb = next(b.child)
      assert.strictEqual(threadlock.notify(i, 0), 1, 'only the live waiter is counted')
      b.child.kill('SIGCONT')
      assert.match(await rb, /^ok /)
      b.child.stdin.end()
      await exited(b.child)
      assert.strictEqual(threadlock.waiterCount(i, 0), 0)
    })

    it('a worker terminated in wait() ends, and its node leaves the list', async () => {
      const i = new Int32Array(openSharedMemory('wx', { path: dir, size: 64 }))
      const worker = new Worker(`const { workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        threadlock.wait(new Int32Array(workerData), 0, 0)`, { eval: true, workerData: i.buffer })
      await until(() => threadlock.waiterCount(i, 0) === 1, 'the worker')
      const t0 = Date.now()
      await worker.terminate()
      assert.ok(Date.now() - t0 < 10000)
      await until(() => threadlock.waiterCount(i, 0) === 0, 'the node to leave')
      assert.strictEqual(threadlock.notify(i, 0), 0)
    })

    it('the nodes of a process killed with 8 workers waiting are not counted, and a notify reclaims them', async function () {
      const i = new Int32Array(openSharedMemory('wr', { path: dir, size: 64 }))
      for (let round = 0; round < 2; round++) {
        const c = await child(`const { Worker } = require('worker_threads')
          const i = new Int32Array(host.openSharedMemory('wr', { path: dir, size: 64 }))
          const threadlock = require(${INDEX})
          for (let k = 0; k < 8; k++) new Worker('const { workerData } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); t.wait(new Int32Array(workerData), 0, 0)', { eval: true, workerData: i.buffer })
          const tick = () => { if (threadlock.waiterCount(i, 0) >= 8) say('all'); else setTimeout(tick, 10) }
          tick()`, dir)
        assert.strictEqual(c.line, 'all')
        assert.strictEqual(binding.shmNodesUsed(i), 8)
        c.child.kill('SIGKILL')
        await exited(c.child)
        assert.strictEqual(threadlock.waiterCount(i, 0), 0)
        assert.strictEqual(binding.shmNodesUsed(i), 8, 'still taken until someone meets them')
        assert.strictEqual(threadlock.notify(i, 0), 0, 'dead waiters are not counted')
        assert.strictEqual(binding.shmNodesUsed(i), 0, 'and the notify freed them')
      }
    })
  })

  describe('waitAsync across processes (promise waiters in the file, woken through the doorbell)', () => {
    // A child whose main thread waits with waitAsync(i, index, 0, timeout);
    // it says 'waiting' (with whether it waits) and then the result and
    // the milliseconds it took.
    const asyncWaiter = (name, { index = 0, timeout = 'Infinity', ref = true } = {}) => child(`const threadlock = require(${INDEX})
      const i = new Int32Array(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }))
      const t0 = performance.now()
      const r = threadlock.waitAsync(i, ${index}, 0, ${timeout}, { ref: ${ref} })
      say('waiting ' + r.async)
      Promise.resolve(r.value).then((v) => say(v + ' ' + Math.round(performance.now() - t0)))`, dir)
    const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }

    it('resolves waitAsync in one process by notify in another (4 processes, counted exactly, oldest first), and this process\'s by a child\'s notify', async () => {
      const i = new Int32Array(openSharedMemory('wa', { path: dir, size: 64 }))
      const kids = []
      for (let k = 0; k < 4; k++) {
        const w = await asyncWaiter('wa')
        assert.strictEqual(w.line, 'waiting true')
        kids.push(w)
        await until(() => threadlock.waiterCount(i, 0) === k + 1, `waiter ${k}`)
      }
      const first = next(kids[0].child)
      assert.strictEqual(threadlock.notify(i, 0, 1), 1)
      assert.match(await first, /^ok /)
      assert.strictEqual(threadlock.waiterCount(i, 0), 3)
      const rest = kids.slice(1).map((k) => next(k.child))
      assert.strictEqual(threadlock.notify(i, 0), 3)
      for (const r of await Promise.all(rest)) assert.match(r, /^ok /)
      assert.strictEqual(threadlock.notify(i, 0), 0)
      // This process waits; a child notifies.
      const mine = threadlock.waitAsync(i, 1, 0)
      assert.strictEqual(mine.async, true)
      assert.strictEqual(threadlock.waiterCount(i, 1), 1)
      assert.deepStrictEqual(run(`const threadlock = require(${INDEX})
        return threadlock.notify(new Int32Array(host.openSharedMemory('wa', { path: dir, size: 64 })), 1)`, dir), { value: 1 })
      assert.strictEqual(await mine.value, 'ok')
      // BigInt64Array, and not-equal at once.
      const b = new BigInt64Array(i.buffer)
      const big = threadlock.waitAsync(b, 3, 0n)
      assert.strictEqual(threadlock.notify(b, 3), 1)
      assert.strictEqual(await big.value, 'ok')
      Atomics.store(i, 4, 1)
      assert.deepStrictEqual(threadlock.waitAsync(i, 4, 0, 1000), { async: false, value: 'not-equal' })
      assert.deepStrictEqual(threadlock.waitAsync(i, 4, 1, 0), { async: false, value: 'timed-out' })
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    // For a child's script: the ids of its threads named tl-host-helper.
    const HELPERS = `const helpers = () => require('fs').readdirSync('/proc/self/task')
      .filter((t) => { try { return require('fs').readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim() === 'tl-host-helper' } catch { return false } })`

    it('one helper thread serves a thread\'s promise waits from its first to its end: not started and joined again for every wait (10 rounds, same thread id); a worker that waited gives it back when it ends', async () => {
      const i = new Int32Array(openSharedMemory('wh', { path: dir, size: 64 }))
      const w = await child(`const threadlock = require(${INDEX})
        const i = new Int32Array(host.openSharedMemory('wh', { path: dir, size: 64 }))
        ${HELPERS}
        process.stdin.on('data', async (d) => {
          for (const cmd of String(d).trim().split('\\n')) {
            if (cmd === 'wait') {
              const r = threadlock.waitAsync(i, 0, 0)
              say('waiting ' + r.async)
              await r.value
              say(JSON.stringify(helpers()))
            }
          }
        })
        say(JSON.stringify(helpers()))`, dir)
      assert.strictEqual(w.line, '[]', 'no helper before any wait')
      const seen = []
      for (let round = 0; round < 10; round++) {
        let said = next(w.child)
        w.child.stdin.write('wait\n')
        assert.strictEqual(await said, 'waiting true')
        await until(() => threadlock.waiterCount(i, 0) === 1, 'the waiter')
        said = next(w.child)
        assert.strictEqual(threadlock.notify(i, 0), 1)
        seen.push(JSON.parse(await said))
      }
      assert.strictEqual(seen[0].length, 1, `one helper thread: ${JSON.stringify(seen)}`)
      assert.deepStrictEqual(seen, Array(10).fill(seen[0]), 'the same helper thread every round')
      w.child.stdin.end()
      await exited(w.child)
      // A worker's waits: its helper use ends with it.
      const v = await child(`const threadlock = require(${INDEX})
        const { Worker } = require('worker_threads')
        const b = host.openSharedMemory('wh', { path: dir, size: 64 })
        ${HELPERS}
        const wk = new Worker('const { workerData, parentPort } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); const r = t.waitAsync(new Int32Array(workerData), 1, 0); parentPort.postMessage(r.async); r.value.then(() => process.exit(0))', { eval: true, workerData: b })
        wk.once('message', (waiting) => say('waiting ' + waiting + ' ' + helpers().length))
        wk.once('exit', () => setTimeout(() => say('ended ' + helpers().length), 50))`, dir)
      assert.strictEqual(v.line, 'waiting true 1')
      await until(() => threadlock.waiterCount(i, 1) === 1, 'the worker\'s waiter')
      const said = next(v.child)
      assert.strictEqual(threadlock.notify(i, 1), 1)
      assert.strictEqual(await said, 'ended 0', 'the helper is joined once the worker that waited ended')
      v.child.stdin.end()
      await exited(v.child)
    })

    it('times out never early, leaves the list, and a notify then counts nothing; a waiting process uses no CPU', async () => {
      const i = new Int32Array(openSharedMemory('wb', { path: dir, size: 64 }))
      const w = await asyncWaiter('wb', { timeout: 300 })
      const r = await next(w.child)
      const [res, ms] = r.split(' ')
      assert.strictEqual(res, 'timed-out')
      assert.ok(Number(ms) >= 300, `waited ${ms} ms`)
      assert.strictEqual(threadlock.waiterCount(i, 0), 0)
      assert.strictEqual(threadlock.notify(i, 0), 0)
      assert.strictEqual(binding.shmNodesUsed(i), 0)
      const v = await asyncWaiter('wb')
      await until(() => threadlock.waiterCount(i, 0) === 1, 'the waiter')
      const before = ticks(v.child.pid)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const used = ticks(v.child.pid) - before
      assert.ok(used <= 5, `the waiting process used ${used} ticks of CPU in 1 s`)
      const got = next(v.child)
      assert.strictEqual(threadlock.notify(i, 0), 1)
      assert.match(await got, /^ok /)
      for (const k of [w, v]) k.child.stdin.end()
      await Promise.all([w, v].map((k) => exited(k.child)))
    })

    it('ref: true keeps the process alive until notified; ref: false lets it exit and its node leaves', async () => {
      const i = new Int32Array(openSharedMemory('wc', { path: dir, size: 64 }))
      const script = (ref) => `const host = require(${HOST}); const threadlock = require(${INDEX})
        const i = new Int32Array(host.openSharedMemory('wc', { path: ${JSON.stringify(dir)}, size: 64 }))
        threadlock.waitAsync(i, 0, 0, Infinity, { ref: ${ref} }).value.then((v) => console.log(v))
        console.log('waiting')`
      const kept = spawn(process.execPath, ['-e', script(true)], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      kept.stdout.on('data', (d) => { out += d })
      const keptExit = exited(kept)
      await until(() => threadlock.waiterCount(i, 0) === 1, 'the ref waiter')
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.strictEqual(kept.exitCode, null, 'still running')
      assert.strictEqual(threadlock.notify(i, 0), 1)
      await keptExit
      assert.strictEqual(out, 'waiting\nok\n')
      const loose = spawnSync(process.execPath, ['-e', script(false)], { encoding: 'utf8', timeout: 20000 })
      assert.strictEqual(loose.status, 0)
      assert.strictEqual(loose.stdout, 'waiting\n')
      assert.strictEqual(threadlock.waiterCount(i, 0), 0)
      assert.strictEqual(threadlock.notify(i, 0), 0)
    })

    it('a terminated worker\'s promise waiters leave the list (notify counts exactly the others); a kill -9ed process\'s are never counted', async () => {
      const i = new Int32Array(openSharedMemory('wd', { path: dir, size: 64 }))
      const worker = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const i = new Int32Array(workerData)
        for (let k = 0; k < 3; k++) threadlock.waitAsync(i, 0, 0)
        parentPort.postMessage('waiting')`, { eval: true, workerData: i.buffer })
      await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject) })
      const other = threadlock.waitAsync(i, 0, 0)
      assert.strictEqual(threadlock.waiterCount(i, 0), 4)
      await worker.terminate()
      assert.strictEqual(threadlock.waiterCount(i, 0), 1)
      assert.strictEqual(binding.shmNodesUsed(i), 1, 'the worker\'s nodes are free')
      assert.strictEqual(threadlock.notify(i, 0), 1, 'only this thread\'s waiter is counted')
      assert.strictEqual(await other.value, 'ok')
      // kill -9 of a process with promise waiters.
      const c = await child(`const threadlock = require(${INDEX})
        const i = new Int32Array(host.openSharedMemory('wd', { path: dir, size: 64 }))
        for (let k = 0; k < 5; k++) threadlock.waitAsync(i, 2, 0)
        say('waiting')`, dir)
      assert.strictEqual(threadlock.waiterCount(i, 2), 5)
      c.child.kill('SIGKILL')
      await exited(c.child)
      assert.strictEqual(threadlock.waiterCount(i, 2), 0)
      const mine = threadlock.waitAsync(i, 2, 0)
      assert.strictEqual(threadlock.notify(i, 2), 1, 'the dead waiters are not counted')
      assert.strictEqual(await mine.value, 'ok')
      assert.strictEqual(binding.shmNodesUsed(i), 0, 'and their nodes were reclaimed')
    })

    it('a SIGSTOPped process\'s promise waiter is counted, and resolves after SIGCONT', async () => {
      const i = new Int32Array(openSharedMemory('we', { path: dir, size: 64 }))
      const w = await asyncWaiter('we')
      await until(() => threadlock.waiterCount(i, 0) === 1, 'the waiter')
      w.child.kill('SIGSTOP')
      const got = next(w.child)
      assert.strictEqual(threadlock.notify(i, 0), 1)
      w.child.kill('SIGCONT')
      assert.match(await got, /^ok /)
      w.child.stdin.end()
      await exited(w.child)
    })
  })

  describe('AsyncLock across processes', () => {
    const NATIVE = JSON.stringify(path.join(ROOT, 'lib', 'native'))
    const ID = SHM.LOCK_ID
    const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }
    // A child that takes the lock at byte 0 of `name` and says its owner id
    // once it holds it; it releases it when a line comes on its stdin
    // (holder.release), and exits (holding it, if it still does) when its
    // stdin ends.
    const holder = (name) => child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
      const b = host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      lock.lock()
      process.stdin.on('data', () => { lock.unlock(); say('released') })
      say(String(binding.shmOwnerId(new Int32Array(b))))`, dir)
    const letGo = (h) => { h.child.stdin.write('u\n') }

    it('excludes exactly: 4 processes (and a worker) x every API on a non-atomic read-modify-write in the shared buffer', async function () {
      const N = 1500
      const body = (k) => `const threadlock = require(${INDEX})
        const { Worker } = require('worker_threads')
        const b = host.openSharedMemory('ex', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const lock = new threadlock.AsyncLock(b, 0)
        const other = threadlock.AsyncLock.from(lock.handle)
        const bump = () => { const v = i[1]; for (let s = 0; s < 200; s++); i[1] = v + 1 }
        async function main () {
          ${k === 0
            ? `const w = new Worker('const { workerData } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); const i = new Int32Array(workerData); const l = new t.AsyncLock(workerData, 0); for (let n = 0; n < ${N}; n++) { l.lock(); const v = i[1]; i[1] = v + 1; l.unlock() }', { eval: true, workerData: b })
               const wdone = new Promise((resolve) => w.once('exit', resolve))`
            : 'const wdone = null'}
          for (let n = 0; n < ${N}; n++) {
            switch (n % 6) {
              case 0: lock.lock(); bump(); lock.unlock(); break
              case 1: { const r = await lock.acquire(); const v = i[1]; await new Promise((resolve) => setImmediate(resolve)); i[1] = v + 1; r(); break }
              case 2: await lock.runExclusive(async () => { const v = i[1]; await null; i[1] = v + 1 }); break
              case 3: while (!lock.tryLock()) await new Promise((resolve) => setImmediate(resolve)); bump(); other.unlock(); break
              case 4: await other.executeLocked(() => bump()); break
              case 5: { const r = await lock.acquire({ timeout: 60000 }); bump(); r(); break }
            }
          }
          await wdone
          say('done')
        }
        main()`
      const kids = await Promise.all([0, 1, 2, 3].map((k) => child(body(k), dir)))
      for (const k of kids) assert.strictEqual(k.line, 'done')
      const i = new Int32Array(openSharedMemory('ex', { path: dir, size: 64 }))
      assert.strictEqual(i[1], 4 * N + N)
      assert.strictEqual(Atomics.load(i, 0), 0, 'free, no waiter bits left')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('owner checks: another process\'s main thread and a worker of the holding process are not the holder (ENOTOWNER); lock() by the holder is EDEADLK', async () => {
      const b = openSharedMemory('own', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      assert.ok(lock instanceof threadlock.AsyncLock)
      lock.lock()
      assert.strictEqual(lock.locked, true)
      assert.strictEqual(lock.owner, binding.shmOwnerId(new Int32Array(b)))
      assert.throws(() => lock.lock(), (e) => e.code === 'EDEADLK')
      assert.strictEqual(lock.tryLock(), false)
      const r = run(`const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('own', { path: dir, size: 64 }), 0)
        const out = [lock.locked, lock.tryLock(), lock.ownerDied]
        try { lock.unlock(); out.push('unlocked') } catch (e) { out.push(e.code, e.message.startsWith('AsyncLock.unlock:')) }
        return out`, dir)
      assert.deepStrictEqual(r.value, [true, false, false, 'ENOTOWNER', true])
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const lock = threadlock.AsyncLock.from(workerData)
        const out = [lock.tryLock()]
        try { lock.unlock(); out.push('unlocked') } catch (e) { out.push(e.code) }
        parentPort.postMessage(out)`, { eval: true, workerData: lock.handle })
      const wexit = new Promise((resolve) => w.once('exit', resolve))
      const out = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      await wexit
      assert.deepStrictEqual(out, [false, 'ENOTOWNER'])
      lock.unlock()
      assert.throws(() => lock.unlock(), (e) => e.code === 'ENOTOWNER')
      assert.strictEqual(lock.locked, false)
    })

    it('timeouts, aborts, blocking: false and ref across processes; the waiter that stays gets the lock when the holder releases', async () => {
      const h = await holder('to')
      const b = openSharedMemory('to', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      assert.strictEqual(lock.locked, true)
      let t0 = performance.now()
      assert.throws(() => lock.lock({ timeout: 200 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 199)
      t0 = performance.now()
      await assert.rejects(lock.acquire({ timeout: 200 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 199)
      await assert.rejects(lock.acquire({ blocking: false }), (e) => e.code === 'EBUSY')
      const ac = new AbortController()
      const aborted = lock.acquire({ signal: ac.signal })
      await until(() => lock.waiting === 1, 'the aborted request to wait')
      ac.abort()
      await assert.rejects(aborted, (e) => e.name === 'AbortError')
      assert.strictEqual(lock.waiting, 0)
      const got = lock.acquire()
      await until(() => lock.waiting === 1, 'the request to wait')
      letGo(h)
      const release = await got
      assert.strictEqual(release.ownerDied, false)
      assert.strictEqual(lock.owner, binding.shmOwnerId(new Int32Array(b)))
      release()
      assert.strictEqual(lock.locked, false)
      h.child.stdin.end()
      await exited(h.child)
    })

    it('an abort that comes after a release woke a promise request but before the request ran (the lock taken again meanwhile, the event loop busy) rejects it', async () => {
      const b = openSharedMemory('ab', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      // A worker holds the lock; on 'go' it releases it (which wakes this
      // thread's request) and takes it again at once, then says so in the
      // flag word, while this thread's event loop is kept busy.
      const flag = new Int32Array(new SharedArrayBuffer(4))
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(workerData.b, 0)
        lock.lock()
        parentPort.postMessage('held')
        parentPort.on('message', (m) => {
          if (m === 'go') { lock.unlock(); lock.lock(); Atomics.store(workerData.flag, 0, 1); Atomics.notify(workerData.flag, 0) }
          else { lock.unlock(); parentPort.close() }
        })`, { eval: true, workerData: { b, flag } })
      const ended = new Promise((resolve) => w.once('exit', resolve))
      await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      const ac = new AbortController()
      let settled = null
      lock.acquire({ signal: ac.signal }).then((r) => { settled = 'granted'; r() }, (e) => { settled = e.name })
      await until(() => lock.waiting === 1, 'the request to wait')
      // Woken (its node notified), not yet run: the lock is taken again and
      // the request aborted before this thread's loop runs again.
      w.postMessage('go')
      assert.strictEqual(Atomics.wait(flag, 0, 0, 10000), 'ok', 'the worker took the lock again')
      ac.abort()
      await until(() => settled !== null, 'the aborted request to settle')
      assert.strictEqual(settled, 'AbortError')
      assert.strictEqual(lock.waiting, 0)
      w.postMessage('end')
      await ended
      assert.strictEqual(lock.locked, false)
    })

    it("a thread's promise requests are granted in the order it made them, across its objects on the word, while another process holds and competes", async () => {
      const h = await holder('ord')
      const b = openSharedMemory('ord', { path: dir, size: 64 })
      const a1 = new threadlock.AsyncLock(b, 0)
      const a2 = threadlock.AsyncLock.from(a1.handle)
      const got = []
      // Each holds the lock over a few turns of the event loop, so that a
      // later request that competed would take a free word meanwhile.
      const take = (lock, name) => lock.acquire().then(async (release) => {
        got.push(name)
        for (let k = 0; k < 3; k++) await new Promise((resolve) => setImmediate(resolve))
        release()
      })
      const all = Promise.all([take(a2, 'b1'), take(a1, 'a1'), take(a2, 'b2'), take(a1, 'a2')])
      // One competes (sleeping in the file's list), three wait in this
      // thread's queue: waiting counts them all.
      await until(() => a1.waiting === 4, 'the four requests to wait')
      assert.strictEqual(binding.waiterCount(new Int32Array(b), 0), 1)
      // While they wait, this thread's blocking and trying forms give way.
      assert.strictEqual(a1.tryLock(), false)
      assert.throws(() => a2.lock({ timeout: 10 }), { code: 'EDEADLK' })
      await assert.rejects(a1.acquire({ blocking: false }), { code: 'EBUSY' })
      letGo(h)
      await all
      assert.deepStrictEqual(got, ['b1', 'a1', 'b2', 'a2'])
      assert.strictEqual(a1.waiting, 0)
      assert.strictEqual(a1.locked, false)
      // A release by another object of the thread passes the lock on to the
      // thread's next request too: a.lock(); p = a.acquire(); b.unlock().
      a1.lock()
      let granted = false
      const p = a1.acquire().then((release) => { granted = true; release() })
      await new Promise((resolve) => setTimeout(resolve, 20))
      assert.strictEqual(granted, false, 'the request waits for the hold of its thread')
      a2.unlock()
      await p
      assert.strictEqual(a1.locked, false)
      h.child.stdin.end()
      await exited(h.child)
    })

    it("a thread's request that waits behind its older ones times out (never early) and aborts there, and the others keep their order; ref: false lets the process exit", async () => {
      const h = await holder('ordt')
      const b = openSharedMemory('ordt', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      const got = []
      const ac = new AbortController()
      const first = lock.acquire().then((release) => { got.push('first'); release() })
      const t0 = performance.now()
      const timed = lock.acquire({ timeout: 150 }).then(() => 'granted', (e) => [e.code, performance.now() - t0])
      const aborted = lock.acquire({ signal: ac.signal }).then(() => 'granted', (e) => e.name)
      const last = lock.runExclusive(() => { got.push('last') })
      ac.abort()
      assert.strictEqual(await aborted, 'AbortError')
      const [code, after] = await timed
      assert.strictEqual(code, 'ETIMEDOUT')
      assert.ok(after >= 150, `timed out after ${after} ms`)
      // The first competes in the file's list; the last waits behind it.
      assert.strictEqual(lock.waiting, 2)
      assert.strictEqual(binding.waiterCount(new Int32Array(b), 0), 1)
      letGo(h)
      await Promise.all([first, last])
      assert.deepStrictEqual(got, ['first', 'last'])
      h.child.stdin.end()
      await exited(h.child)
      // A process whose only requests wait behind its first one with
      // ref: false exits while the lock is held elsewhere.
      const h2 = await holder('ordt')
      const r = spawnSync(process.execPath, ['-e', `const host = require(${HOST}); const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('ordt', { path: ${JSON.stringify(dir)}, size: 64 }), 0)
        lock.acquire({ ref: false }).then(() => console.log('got'))
        lock.acquire({ ref: false }).then(() => console.log('got'))
        console.log('waiting')`], { encoding: 'utf8', timeout: 20000 })
      assert.strictEqual(r.status, 0)
      assert.strictEqual(r.stdout, 'waiting\n')
      h2.child.stdin.end()
      await exited(h2.child)
    })

    it('a promise request with ref: false lets its process exit while it waits (and leaves no waiter); with ref: true the process waits for the grant', async () => {
      const h = await holder('rf')
      const b = openSharedMemory('rf', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      const script = (ref) => `const host = require(${HOST}); const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('rf', { path: ${JSON.stringify(dir)}, size: 64 }), 0)
        lock.acquire({ ref: ${ref} }).then((r) => { console.log('got'); r() })
        console.log('waiting')`
      const loose = spawnSync(process.execPath, ['-e', script(false)], { encoding: 'utf8', timeout: 20000 })
      assert.strictEqual(loose.status, 0)
      assert.strictEqual(loose.stdout, 'waiting\n')
      assert.strictEqual(lock.waiting, 0)
      const kept = spawn(process.execPath, ['-e', script(true)], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      kept.stdout.on('data', (d) => { out += d })
      const keptExit = exited(kept)
      await until(() => lock.waiting === 1, 'the ref request')
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.strictEqual(kept.exitCode, null, 'still running')
      letGo(h)
      await keptExit
      assert.strictEqual(out, 'waiting\ngot\n')
      h.child.stdin.end()
      await exited(h.child)
    })

    it('kill -9 of the holder hands the lock to a waiter of another process with ownerDied (blocking and promise waiters), then to the next without', async () => {
      const h = await holder('kd')
      const b = openSharedMemory('kd', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0)
      // A blocking waiter in another process, and a promise waiter here.
      const w = await child(`const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('kd', { path: dir, size: 64 }), 0)
        say('waiting')
        lock.lock()
        say('got ' + lock.ownerDied)
        lock.unlock()`, dir)
      await until(() => lock.waiting === 1, 'the blocking waiter')
      const mine = lock.acquire()
      await until(() => lock.waiting === 2, 'the promise waiter')
      assert.strictEqual(lock.ownerDied, false)
      const said = next(w.child)
      h.child.kill('SIGKILL')
      await exited(h.child)
      // One of the two takes it over from the dead holder; the other gets
      // it from that one's release.
      const release = await mine
      const died = release.ownerDied
      release()
      const other = await said
      assert.deepStrictEqual([died, other], died ? [true, 'got false'] : [false, 'got true'])
      w.child.stdin.end()
      await exited(w.child)
      assert.strictEqual(Atomics.load(i, 0) & ID, 0)
    })

    it('a holder killed between a waiter\'s look at it and the start of its watch: the waiter sees the death and takes the lock over (THREADLOCK_SHM_TEST_LOOK_DELAY_MS)', async () => {
      const h = await holder('kw')
      const { proc: c, out } = blockingWaiter('kw', { THREADLOCK_SHM_TEST_LOOK_DELAY_MS: '1500' })
      await until(() => out.text === 'waiting\n', 'the waiter')
      // Inside its pause: it looked at the holder (alive) and has not
      // started its watch yet.
      await new Promise((resolve) => setTimeout(resolve, 500))
      h.child.kill('SIGKILL')
      await exited(h.child)
      await exited(c)
      assert.strictEqual(out.text, 'waiting\ngot true\n')
    })

    // Collects what a process prints.
    const lines = (c) => { const got = { text: '' }; c.stdout.on('data', (d) => { got.text += d }); return got }
    // A process that waits for the lock of the file `name` in a blocking
    // lock(), with the test hooks `env`: it prints 'waiting' before and
    // 'got <ownerDied>' once it has the lock (out.text).
    const blockingWaiter = (name, env) => {
      const proc = spawn(process.execPath, ['-e', `const host = require(${HOST}); const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory(${JSON.stringify(name)}, { path: ${JSON.stringify(dir)}, size: 64 }), 0)
        console.log('waiting')
        lock.lock()
        console.log('got ' + lock.ownerDied)
        lock.unlock()`], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } })
      return { proc, out: lines(proc) }
    }
    // Resolves with the promise's value, or 'still pending' after ms.
    const within = (p, ms) => Promise.race([p, new Promise((resolve) => setTimeout(() => resolve('still pending'), ms))])

    it('a woken promise request whose process is killed before it ran: a waiter that published after it without seeing it still gets the lock (THREADLOCK_SHM_TEST_PUBLISH_DELAY_MS)', async () => {
      const procs = []
      try {
        const b = openSharedMemory('kq', { path: dir, size: 64 })
        const lock = new threadlock.AsyncLock(b, 0)
        lock.lock()
        // N, started first: on its first line it queues a promise request,
        // on its second its main thread stays busy for ever.
        const n = await child(`const threadlock = require(${INDEX})
          const lock = new threadlock.AsyncLock(host.openSharedMemory('kq', { path: dir, size: 64 }), 0)
          let k = 0
          process.stdin.on('data', () => {
            if (k++ === 0) { lock.acquire().then(() => say('N ran')); say('queued') } else { say('busy'); for (;;); }
          })
          say('ready')`, dir)
        procs.push(n.child)
        // T looks at the word's waiters (none yet), then pauses before it
        // publishes its node.
        const { proc: t, out: tOut } = blockingWaiter('kq', { THREADLOCK_SHM_TEST_PUBLISH_DELAY_MS: '4000' })
        procs.push(t)
        await until(() => tOut.text === 'waiting\n', 'T')
        await new Promise((resolve) => setTimeout(resolve, 300))
        // N publishes inside T's pause: the older node, unseen by T.
        const queued = next(n.child)
        n.child.stdin.write('q\n')
        assert.strictEqual(await queued, 'queued')
        assert.strictEqual(lock.waiting, 1, 'T published before N (its pause was too short for this machine)')
        const busy = next(n.child)
        n.child.stdin.write('b\n')
        assert.strictEqual(await busy, 'busy')
        await until(() => lock.waiting === 2, 'T\'s node')
        assert.strictEqual(tOut.text, 'waiting\n')
        lock.unlock() // wakes N, the oldest, whose request does not run
        await new Promise((resolve) => setTimeout(resolve, 100))
        n.child.kill('SIGKILL')
        await exited(n.child)
        assert.strictEqual(await within(exited(t).then(() => tOut.text), 10000), 'waiting\ngot false\n')
        assert.strictEqual(lock.locked, false)
        assert.strictEqual(lock.waiting, 0)
      } finally {
        for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      }
    })

    it('a releasing process killed between a promise request\'s wake and its doorbell: the request is still granted (THREADLOCK_SHM_TEST_RING_DELAY_MS)', async () => {
      const procs = []
      try {
        const r = spawn(process.execPath, ['-e', `const host = require(${HOST}); const threadlock = require(${INDEX})
          const lock = new threadlock.AsyncLock(host.openSharedMemory('kr', { path: ${JSON.stringify(dir)}, size: 64 }), 0)
          lock.lock()
          process.stdin.on('data', () => { console.log('releasing'); lock.unlock(); console.log('released') })
          console.log('holding')`], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, THREADLOCK_SHM_TEST_RING_DELAY_MS: '5000' } })
        procs.push(r)
        const rOut = lines(r)
        await until(() => rOut.text === 'holding\n', 'the holder')
        const b = openSharedMemory('kr', { path: dir, size: 64 })
        const lock = new threadlock.AsyncLock(b, 0)
        const p = lock.acquire()
        await until(() => lock.waiting === 1, 'this process\'s node')
        r.stdin.write('u\n')
        // The node is NOTIFIED (no longer waiting); the ring is 5 s away.
        await until(() => rOut.text === 'holding\nreleasing\n' && lock.waiting === 0, 'the state change')
        await new Promise((resolve) => setTimeout(resolve, 200))
        r.kill('SIGKILL')
        await exited(r)
        const release = await within(p, 10000)
        assert.strictEqual(typeof release, 'function', 'the request was not granted')
        assert.strictEqual(release.ownerDied, false)
        release()
        assert.strictEqual(lock.locked, false)
        assert.strictEqual(rOut.text, 'holding\nreleasing\n')
      } finally {
        for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      }
    })

    it('a holder killed and its slot claimed by a new process before a waiter\'s watcher started: the waiter still takes the lock over (THREADLOCK_SHM_TEST_WATCH_DELAY_MS)', async () => {
      const procs = []
      try {
        // Y, started first (a new process is slow to start under
        // emulation): it opens the file when told, after the kill.
        const y = await child(`const { binding } = require(${NATIVE})
          process.stdin.once('data', () => say(String(binding.shmOwnerId(new Int32Array(host.openSharedMemory('ks', { path: dir, size: 64 }))))))
          say('ready')`, dir)
        procs.push(y.child)
        const b = openSharedMemory('ks', { path: dir, size: 64 })
        const lock = new threadlock.AsyncLock(b, 0)
        const h = await holder('ks')
        procs.push(h.child)
        const { proc: w, out: wOut } = blockingWaiter('ks', { THREADLOCK_SHM_TEST_WATCH_DELAY_MS: '3000' })
        procs.push(w)
        await until(() => lock.waiting === 1, 'the waiter\'s node')
        const published = Date.now()
        h.child.kill('SIGKILL')
        await exited(h.child)
        // Y claims the dead holder's slot (the lowest free one) while the
        // waiter's watcher has not started.
        const claimed = next(y.child)
        y.child.stdin.write('o\n')
        const id = Number(await claimed)
        assert.ok(Date.now() - published < 3000, 'the slot was claimed inside the watcher\'s delay (too slow a machine)')
        assert.strictEqual(slotOf(id), slotOf(Number(h.line)), 'the slot was claimed again')
        assert.strictEqual(await within(exited(w).then(() => wOut.text), 10000), 'waiting\ngot true\n')
        assert.strictEqual(lock.locked, false)
      } finally {
        for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      }
    })

    it('kill -9 of the holder while nobody waits: the next acquirer (of any process) gets it with ownerDied', async () => {
      const h = await holder('kn')
      const b = openSharedMemory('kn', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      h.child.kill('SIGKILL')
      await exited(h.child)
      assert.strictEqual(lock.locked, true)
      assert.strictEqual(lock.ownerDied, true)
      const r = run(`const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('kn', { path: dir, size: 64 }), 0)
        lock.lock(); const out = [lock.ownerDied]; lock.unlock(); out.push(lock.locked, lock.ownerDied); return out`, dir)
      assert.deepStrictEqual(r.value, [true, false, false])
      const h2 = await holder('kn')
      h2.child.kill('SIGKILL')
      await exited(h2.child)
      const release = await lock.acquire()
      assert.strictEqual(release.ownerDied, true)
      release()
      const again = await lock.acquire()
      assert.strictEqual(again.ownerDied, false)
      again()
    })

    it('a worker terminated while holding: a waiter of another process gets the lock with ownerDied; workers terminated while waiting leave no waiter', async () => {
      const b = openSharedMemory('wt', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        threadlock.AsyncLock.from(workerData).lock()
        parentPort.postMessage('held')
        setInterval(() => {}, 1000)`, { eval: true, workerData: lock.handle })
      await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      const c = await child(`const threadlock = require(${INDEX})
        const lock = new threadlock.AsyncLock(host.openSharedMemory('wt', { path: dir, size: 64 }), 0)
        say('waiting')
        lock.acquire().then((r) => { say('got ' + r.ownerDied); r() })`, dir)
      await until(() => lock.waiting === 1, 'the other process\'s waiter')
      const said = next(c.child)
      await w.terminate()
      assert.strictEqual(await said, 'got true')
      // Workers waiting (blocking and promise) and terminated.
      lock.lock()
      const waiters = [0, 1].map((k) => new Worker(`const { workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const lock = threadlock.AsyncLock.from(workerData)
        if (${k} === 0) lock.lock(); else lock.acquire()`, { eval: true, workerData: lock.handle }))
      await until(() => lock.waiting === 2, 'the workers to wait')
      await Promise.all(waiters.map((x) => x.terminate()))
      assert.strictEqual(lock.waiting, 0)
      lock.unlock()
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(binding.shmNodesUsed(new Int32Array(b)), 0)
      c.child.stdin.end()
      await exited(c.child)
    })

    it('a SIGSTOPped holder: waiters of 3 processes wait without CPU; after SIGCONT each gets the lock', async () => {
      const h = await holder('st')
      const b = openSharedMemory('st', { path: dir, size: 64 })
      const lock = new threadlock.AsyncLock(b, 0)
      h.child.kill('SIGSTOP')
      const kids = []
      for (let k = 0; k < 3; k++) {
        kids.push(await child(`const threadlock = require(${INDEX})
          const lock = new threadlock.AsyncLock(host.openSharedMemory('st', { path: dir, size: 64 }), 0)
          say('waiting')
          if (${k} === 0) { lock.lock(); say('got'); lock.unlock() } else lock.acquire().then((r) => { say('got'); r() })`, dir))
      }
      await until(() => lock.waiting === 3, 'three waiters')
      const before = kids.map((k) => ticks(k.child.pid))
      await new Promise((resolve) => setTimeout(resolve, 1000))
      kids.forEach((k, n) => {
        const used = ticks(k.child.pid) - before[n]
        assert.ok(used <= 10, `waiter ${n} used ${used} ticks of CPU in 1 s`)
      })
      const said = kids.map((k) => next(k.child))
      h.child.kill('SIGCONT')
      letGo(h)
      assert.deepStrictEqual(await Promise.all(said), ['got', 'got', 'got'])
      h.child.stdin.end()
      await exited(h.child)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
      assert.strictEqual(lock.locked, false)
    })

    for (const fifo of [false, true]) {
    it(`kill -9 at random moments among 4 processes${fifo ? ', { fifo: true }' : ''}: survivors go on, and ownerDied is seen exactly once for each process killed holding`, async function () {
      const name = fifo ? 'rkf' : 'rk'
      const body = `const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
        const b = host.openSharedMemory('${name}', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const lock = new threadlock.AsyncLock(b, 0, { fifo: ${fifo} })
        say(String(binding.shmOwnerId(i)))
        const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
        async function main () {
          for (let n = 0; Atomics.load(i, 4) === 0; n++) {
            const r = n % 2 ? await lock.acquire() : (lock.lock(), { ownerDied: lock.ownerDied })
            if (r.ownerDied) Atomics.add(i, 3, 1)
            Atomics.add(i, 2, 1)
            spin(2)
            if (n % 2) r(); else lock.unlock()
            await new Promise((resolve) => setTimeout(resolve, 1))
          }
          say('done')
        }
        main()`
      const b = openSharedMemory(name, { path: dir, size: 64 })
      const i = new Int32Array(b)
      let killedHolding = 0
      const kids = await killAtRandom(await Promise.all([0, 1, 2, 3].map(() => child(body, dir))), (victim) => {
        // Stopped: a release may have handed it the lock (HANDED) while it
        // waited; killed before it took it up, it never held.
        const v = Atomics.load(i, 0)
        if ((v & ID) === Number(victim.line) && (v & SHM.LOCK_HANDED) === 0) killedHolding++
      }, () => child(body, dir))
      await survivorsFinish(i, 2, 4, 300, kids, dir, name)
      assert.strictEqual(Atomics.load(i, 3), killedHolding, `ownerDied seen ${Atomics.load(i, 3)} times, ${killedHolding} killed holding`)
      assert.strictEqual(Atomics.load(i, 0) & ID, 0)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })
    }
  })

  describe('Semaphore across processes', () => {
    const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }

    it('never more than n permits out: 4 processes (and a worker) x every API, opened with from(); the count ends exact', async () => {
      const b = openSharedMemory('sx', { path: dir, size: 64 })
      const sem = new threadlock.Semaphore(3, b, 0)
      assert.ok(sem instanceof threadlock.Semaphore)
      assert.strictEqual(sem.value, 3)
      const N = 600
      const body = (k) => `const threadlock = require(${INDEX})
        const { Worker } = require('worker_threads')
        const b = host.openSharedMemory('sx', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: b, byteOffset: 0 })
        const inside = (n) => { const now = Atomics.add(i, 1, n) + n; if (now > 3) Atomics.store(i, 3, 1); for (let s = 0; s < 300; s++); Atomics.sub(i, 1, n); Atomics.add(i, 2, 1) }
        async function main () {
          ${k === 0
            ? `const w = new Worker('const { workerData } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); const i = new Int32Array(workerData); const s = t.Semaphore.from({ type: "Semaphore", buffer: workerData, byteOffset: 0 }); for (let n = 0; n < ${N}; n++) { s.acquireSync(); const now = Atomics.add(i, 1, 1) + 1; if (now > 3) Atomics.store(i, 3, 1); Atomics.sub(i, 1, 1); Atomics.add(i, 2, 1); s.release() }', { eval: true, workerData: b })
               const wdone = new Promise((resolve) => w.once('exit', resolve))`
            : 'const wdone = null'}
          for (let n = 0; n < ${N}; n++) {
            switch (n % 5) {
              case 0: sem.acquireSync(); inside(1); sem.release(); break
              case 1: { const r = await sem.acquire(); await new Promise((resolve) => setImmediate(resolve)); inside(1); r(); break }
              case 2: await sem.runExclusive(() => inside(2), { permits: 2 }); break
              case 3: while (!sem.tryAcquire()) await new Promise((resolve) => setImmediate(resolve)); inside(1); sem.release(1); break
              case 4: { const r = await sem.acquire(3, { timeout: 60000 }); inside(3); r(); break }
            }
          }
          await wdone
          say('done')
        }
        main()`
      const kids = await Promise.all([0, 1, 2, 3].map((k) => child(body(k), dir)))
      for (const k of kids) assert.strictEqual(k.line, 'done')
      const i = new Int32Array(b)
      assert.strictEqual(Atomics.load(i, 3), 0, 'more than 3 permits were out at once')
      assert.strictEqual(Atomics.load(i, 2), 5 * N)
      assert.strictEqual(sem.value, 3)
      assert.strictEqual(Atomics.load(i, 0), 3, 'no waiter bit left')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('waits without CPU for a release by another process (blocking and promise); timeouts, aborts, blocking: false; dead and terminated waiters are not woken in place of live ones', async () => {
      const b = openSharedMemory('sw', { path: dir, size: 64 })
      const sem = new threadlock.Semaphore(0, b, 0)
      let t0 = performance.now()
      assert.throws(() => sem.acquireSync({ timeout: 150 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 149)
      t0 = performance.now()
      await assert.rejects(sem.acquire({ timeout: 150 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 149)
      await assert.rejects(sem.acquire({ blocking: false }), (e) => e.code === 'EBUSY')
      assert.strictEqual(sem.tryAcquire(), false)
      const ac = new AbortController()
      const aborted = sem.acquire({ signal: ac.signal })
      assert.strictEqual(sem.waiting, 1)
      ac.abort()
      await assert.rejects(aborted, (e) => e.name === 'AbortError')
      assert.strictEqual(sem.waiting, 0)
      // A process killed while waiting, and a worker terminated while waiting.
      const dead = await child(`const threadlock = require(${INDEX})
        const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: host.openSharedMemory('sw', { path: dir, size: 64 }), byteOffset: 0 })
        say('waiting'); sem.acquireSync()`, dir)
      await until(() => sem.waiting === 1, 'the doomed waiter')
      dead.child.kill('SIGKILL')
      await exited(dead.child)
      const w = new Worker(`const { workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        threadlock.Semaphore.from(workerData).acquire()`, { eval: true, workerData: sem.handle })
      await until(() => sem.waiting === 1, 'the worker')
      await w.terminate()
      assert.strictEqual(sem.waiting, 0)
      // Live waiters: a blocking one and a promise one in other processes.
      const kids = [
        await child(`const threadlock = require(${INDEX})
          const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: host.openSharedMemory('sw', { path: dir, size: 64 }), byteOffset: 0 })
          say('waiting'); sem.acquireSync(); say('got')`, dir),
        await child(`const threadlock = require(${INDEX})
          const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: host.openSharedMemory('sw', { path: dir, size: 64 }), byteOffset: 0 })
          say('waiting'); sem.acquire(2).then(() => say('got'))`, dir)
      ]
      await until(() => sem.waiting === 2, 'two waiters')
      const before = kids.map((k) => ticks(k.child.pid))
      await new Promise((resolve) => setTimeout(resolve, 1000))
      kids.forEach((k, n) => {
        const used = ticks(k.child.pid) - before[n]
        assert.ok(used <= 10, `waiter ${n} used ${used} ticks of CPU in 1 s`)
      })
      const said = kids.map((k) => next(k.child))
      sem.release(3)
      assert.deepStrictEqual(await Promise.all(said), ['got', 'got'])
      assert.strictEqual(sem.value, 0)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('kill -9 at random moments among 4 processes (holders, sleepers, releasers): never more than n permits out, survivors go on', async function () {
      // Permits have no owner: those a killed process held are lost, as a
      // terminated worker's are. The test gives back what the victim's own
      // count says it held (read while it is stopped); a kill between a
      // grant and that count loses up to 2 permits of the 6, which the
      // survivors can spare.
      const PERMITS = 6
      const b = openSharedMemory('sk', { path: dir, size: 128 })
      const sem = new threadlock.Semaphore(PERMITS, b, 0)
      const i = new Int32Array(b)
      const body = (cell) => `const threadlock = require(${INDEX})
        const i = new Int32Array(host.openSharedMemory('sk', { path: dir, size: 128 }))
        const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: i.buffer, byteOffset: 0 })
        const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
        // Each process counts what it is inside with in its own cell; the
        // cells' sum is never above what is out (a cell is set after the
        // grant and cleared before the release).
        const inside = (p) => {
          Atomics.add(i, ${cell}, p)
          let sum = 0
          for (let c = 8; c < 20; c++) sum += Atomics.load(i, c)
          if (sum > ${PERMITS}) Atomics.store(i, 3, 1)
          spin(1)
          Atomics.sub(i, ${cell}, p)
          Atomics.add(i, 2, 1)
        }
        async function main () {
          for (let n = 0; Atomics.load(i, 4) === 0; n++) {
            const p = 1 + (n % 2)
            switch (n % 3) {
              case 0: sem.acquireSync(p); inside(p); sem.release(p); break
              case 1: { const r = await sem.acquire(p); inside(p); r(); break }
              case 2: await sem.runExclusive(() => inside(p), { permits: p, timeout: 60000 }); break
            }
            await new Promise((resolve) => setTimeout(resolve, Math.random() < 0.5 ? 0 : 1))
          }
          say('done')
        }
        say('ready')
        main()`
      let cell = 8
      const spawnKid = async () => ({ cell, ...await child(body(cell++), dir) })
      let kids = await Promise.all([0, 1, 2, 3].map(spawnKid))
      try {
        let lost = 0
        kids = await killAtRandom(kids, (victim) => {
          // What it is inside with is given back (it is stopped, and dies
          // next), and its cell cleared.
          const held = Atomics.load(i, victim.cell)
          Atomics.store(i, victim.cell, 0)
          if (held > 0) sem.release(held)
          lost++
        }, spawnKid)
        await survivorsFinish(i, 2, 4, 300, kids, dir, 'sk')
        assert.strictEqual(Atomics.load(i, 3), 0, `more than ${PERMITS} permits were out at once`)
        assert.strictEqual(sem.waiting, 0)
        assert.ok(sem.value <= PERMITS && sem.value >= PERMITS - 2 * lost, `value ${sem.value} after ${lost} kills`)
      } finally {
        for (const k of kids) k.child.stdin.end()
        await Promise.all(kids.map((k) => exited(k.child)))
      }
    })
  })

  describe('Semaphore across processes: a releaser killed inside its release', () => {
    // The releasing process gives the permit back (its compare-exchange)
    // and is killed before its notify (THREADLOCK_SHM_TEST_RELEASE_DELAY_MS):
    // the sleepers of every process still get the permit, whether the
    // releaser had the file open before they slept or opened it after.
    for (const when of ['before', 'after']) {
      it(`opened ${when} the waiters slept: a blocking waiter of another process and a promise waiter here get the permit`, async () => {
        const name = `sd-${when}`
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const sem = new threadlock.Semaphore(0, b, 0)
        const kids = []
        const releaser = () => new Promise((resolve, reject) => {
          const c = spawn(process.execPath, ['-e', `const host = require(${HOST}); const threadlock = require(${INDEX})
            const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: host.openSharedMemory(${JSON.stringify(name)}, { path: ${JSON.stringify(dir)}, size: 64 }), byteOffset: 0 })
            console.log('open')
            process.stdin.once('data', () => { console.log('releasing'); sem.release(1); console.log('released') })`],
          { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, THREADLOCK_SHM_TEST_RELEASE_DELAY_MS: '20000' } })
          const out = { text: '' }
          c.stdout.on('data', (d) => { out.text += d })
          c.once('error', reject)
          until(() => out.text === 'open\n', 'the releaser').then(() => resolve({ child: c, out }), reject)
        })
        try {
          let r
          if (when === 'before') kids.push(r = await releaser())
          const w = await child(`const threadlock = require(${INDEX})
            const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }), byteOffset: 0 })
            say('waiting'); sem.acquireSync(1, { timeout: 30000 }); say('got'); sem.release(1)`, dir)
          kids.push(w)
          const mine = sem.acquire(1, { timeout: 30000 })
          await until(() => sem.waiting === 2, 'the two waiters')
          if (when === 'after') kids.push(r = await releaser())
          r.child.stdin.write('r\n')
          await until(() => r.out.text === 'open\nreleasing\n' && sem.value === 1, 'the permit back, the notify not made')
          await new Promise((resolve) => setTimeout(resolve, 100))
          assert.strictEqual(r.out.text, 'open\nreleasing\n')
          const said = next(w.child)
          r.child.kill('SIGKILL')
          await exited(r.child)
          // One of the two gets the permit, and gives it to the other.
          const release = await mine
          release()
          assert.strictEqual(await said, 'got')
          await until(() => sem.value === 1 && sem.waiting === 0, 'the permit back')
        } finally {
          for (const k of kids) if (k.child.exitCode === null && k.child.signalCode === null) k.child.kill('SIGKILL')
          await Promise.all(kids.map((k) => exited(k.child)))
        }
      })
    }
  })

  describe('Semaphore across processes: a request that has waited 1 ms is served first (RESERVED)', () => {
    const RESERVED = 1 << 30
    const semIn = (name) => `const threadlock = require(${INDEX})
      const i = new Int32Array(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }))
      const sem = threadlock.Semaphore.from({ type: 'Semaphore', buffer: i.buffer, byteOffset: 0 })
      const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }`
    // A process that takes one permit, holds it 0.2 ms and gives it back,
    // again and again until word 2 is set (a blocking or a promise loop),
    // counting its turns in word 4 + k; it says 'ready' once it runs.
    const churner = (name, k, form) => child(`${semIn(name)}
      async function main () {
        say('ready')
        while (Atomics.load(i, 2) === 0) {
          ${form === 'sync' ? 'sem.acquireSync(); spin(0.2); sem.release()' : 'const r = await sem.acquire(); spin(0.2); r()'}
          Atomics.add(i, 4 + ${k}, 1)
        }
      }
      main()`, dir)

    for (const form of ['sync', 'async']) {
      it(`a ${form === 'sync' ? 'blocking acquireSync(4)' : 'promise acquire(4)'} of 4 permits is granted while 3 processes keep taking one each`, async () => {
        const name = `sr-${form}`
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const sem = new threadlock.Semaphore(4, b, 0)
        const i = new Int32Array(b)
        const kids = []
        try {
          for (let k = 0; k < 3; k++) kids.push(await churner(name, k, k === 1 ? 'async' : 'sync'))
          // The churners run (each has made turns) before the large request.
          await until(() => [0, 1, 2].every((k) => Atomics.load(i, 4 + k) > 50), 'the churners', 10000)
          const big = await child(`${semIn(name)}
            const t0 = performance.now()
            ${form === 'sync'
              ? "sem.acquireSync(4, { timeout: 20000 }); say('got ' + (performance.now() - t0).toFixed(1)); sem.release(4)"
              : "sem.acquire(4, { timeout: 20000 }).then((r) => { say('got ' + (performance.now() - t0).toFixed(1)); r() }, (e) => say(e.code))"}`, dir)
          kids.push(big)
          assert.match(big.line, /^got /, `the request for 4 permits: ${big.line}`)
          const waited = Number(big.line.slice(4))
          assert.ok(waited < 2000, `the request for 4 permits waited ${waited} ms`)
          // The churners go on after it.
          const turns = [0, 1, 2].map((k) => Atomics.load(i, 4 + k))
          await until(() => [0, 1, 2].every((k) => Atomics.load(i, 4 + k) > turns[k] + 20), 'the churners after the grant', 10000)
        } finally {
          Atomics.store(i, 2, 1)
          for (const k of kids) k.child.stdin.end()
          await Promise.all(kids.map((k) => exited(k.child)))
        }
        assert.strictEqual(sem.value, 4)
        assert.strictEqual(Atomics.load(i, 0) & (RESERVED | (1 << 29)), 0, 'RESERVED or WAITERS left on the word')
      })
    }

    // A request for 2 of 2 permits reserves (it has waited 1 ms, and a
    // release woke it with 1); another process's request for one permit
    // then sleeps behind it although a permit is free. `reserver()` starts
    // the request (in a child, pushed to `kids`).
    const reserving = async (name, kids, reserver) => {
      const b = openSharedMemory(name, { path: dir, size: 64 })
      const sem = new threadlock.Semaphore(2, b, 0)
      const i = new Int32Array(b)
      sem.acquireSync(2)
      const r = await reserver()
      kids.push(r)
      await until(() => sem.waiting === 1, 'the request for 2')
      await new Promise((resolve) => setTimeout(resolve, 20))
      sem.release(1) // wakes it with 1 of its 2: it reserves
      await until(() => (Atomics.load(i, 0) & RESERVED) !== 0, 'RESERVED on the word')
      assert.strictEqual(sem.value, 1)
      assert.strictEqual(sem.tryAcquire(), false, 'a free permit was taken past the reservation')
      const behind = await child(`${semIn(name)}
        say('asking'); sem.acquireSync(1, { timeout: 20000 }); say('got')`, dir)
      kids.push(behind)
      await until(() => sem.waiting === 2, 'the request behind the reservation')
      const got = next(behind.child)
      const gotLine = got.then(() => 'got')
      assert.strictEqual(await Promise.race([gotLine, new Promise((resolve) => setTimeout(() => resolve('waits'), 300))]), 'waits',
        'the request for 1 permit went past the reservation')
      return { sem, i, r, behind, got }
    }
    // Ends the children (one still blocked after a failure is killed).
    const end = async (kids) => {
      for (const k of kids) if (k.child.exitCode === null && k.child.signalCode === null) k.child.kill('SIGKILL')
      await Promise.all(kids.map((k) => exited(k.child)))
    }

    it('the reserving request is granted first when the permits come back, then the request behind it (blocking and promise)', async () => {
      for (const form of ['sync', 'async']) {
        const kids = []
        try {
          const { sem, i, r, got } = await reserving(`sv-${form}`, kids, () => child(`${semIn(`sv-${form}`)}
            ${form === 'sync'
              ? "say('asking'); sem.acquireSync(2, { timeout: 20000 }); say('got 2')"
              : "say('asking'); sem.acquire(2, { timeout: 20000 }).then(() => say('got 2'))"}
            process.stdin.once('data', () => { sem.release(2); say('released') })`, dir))
          const said = next(r.child)
          sem.release(1)
          assert.strictEqual(await said, 'got 2', form)
          // The request behind it, woken too (waited 1 ms), may reserve
          // the word now: it is served first next.
          const released = next(r.child)
          r.child.stdin.write('r\n')
          assert.strictEqual(await released, 'released')
          assert.strictEqual(await got, 'got')
          await until(() => sem.value === 1 && sem.waiting === 0, 'the permits back')
          assert.strictEqual(Atomics.load(i, 0) & RESERVED, 0)
        } finally {
          await end(kids)
        }
      }
    })

    it('a reserving process killed (kill -9): the request behind it takes the free permit at once (the orphan RESERVED is cleared)', async () => {
      for (const form of ['sync', 'async']) {
        const kids = []
        try {
          const { sem, i, r, got } = await reserving(`so-${form}`, kids, () => child(`${semIn(`so-${form}`)}
            say('asking'); ${form === 'sync' ? 'sem.acquireSync(2)' : 'sem.acquire(2)'}`, dir))
          r.child.kill('SIGKILL')
          await exited(r.child)
          assert.strictEqual(await got, 'got', form) // no release came
          assert.strictEqual(Atomics.load(i, 0) & RESERVED, 0)
          assert.strictEqual(sem.value, 0)
          assert.strictEqual(sem.waiting, 0)
        } finally {
          await end(kids)
        }
      }
    })

    it('a reserving request that times out, is aborted, or whose worker is terminated gives the reservation up: the request behind it goes on', async () => {
      for (const how of ['timeout', 'abort', 'terminate-sync', 'terminate-async']) {
        const kids = []
        try {
          const { sem, i, r, got } = await reserving(`sg-${how}`, kids, () => child(`${semIn(`sg-${how}`)}
            const { Worker } = require('worker_threads')
            const ac = new AbortController()
            ${{
              // Long enough for the request behind it to be queued first
              // (a process starts in seconds under qemu-user).
              timeout: `say('asking'); sem.acquire(2, { timeout: ${process.env.THREADLOCK_TEST_QEMU ? 20000 : 3000} }).catch((e) => say(e.code))`,
              abort: "say('asking'); sem.acquire(2, { signal: ac.signal }).catch((e) => say(e.name)); process.stdin.once('data', () => ac.abort())",
              'terminate-sync': `const w = new Worker('const t = require(' + ${JSON.stringify(INDEX)} + '); t.Semaphore.from(require("worker_threads").workerData).acquireSync(2)', { eval: true, workerData: sem.handle })
                say('asking'); process.stdin.once('data', () => w.terminate().then(() => say('terminated')))`,
              'terminate-async': `const w = new Worker('const t = require(' + ${JSON.stringify(INDEX)} + '); t.Semaphore.from(require("worker_threads").workerData).acquire(2)', { eval: true, workerData: sem.handle })
                say('asking'); process.stdin.once('data', () => w.terminate().then(() => say('terminated')))`
            }[how]}`, dir))
          const said = next(r.child)
          if (how !== 'timeout') r.child.stdin.write('go\n')
          assert.strictEqual(await said, { timeout: 'ETIMEDOUT', abort: 'AbortError' }[how] || 'terminated', how)
          assert.strictEqual(await got, 'got', how) // no release came
          assert.strictEqual(Atomics.load(i, 0) & RESERVED, 0, how)
          assert.strictEqual(sem.value, 0, how)
        } finally {
          await end(kids)
        }
      }
    })
  })

  describe('Barrier and CountDownLatch across processes', () => {

    it('Barrier: 4 processes x 30 phases (blocking and promise forms), nobody passes a phase before all arrived, one true per phase', async () => {
      const PHASES = 30
      const b = openSharedMemory('bx', { path: dir, size: 512 })
      const barrier = new threadlock.Barrier(4, b, 0)
      assert.ok(barrier instanceof threadlock.Barrier)
      const body = (k) => `const threadlock = require(${INDEX})
        const b = host.openSharedMemory('bx', { path: dir, size: 512 })
        const i = new Int32Array(b)
        const barrier = threadlock.Barrier.from({ type: 'Barrier', buffer: b, byteOffset: 0 })
        async function main () {
          for (let p = 0; p < ${PHASES}; p++) {
            Atomics.add(i, 4 + p, 1)
            const last = (p + ${k}) % 2 ? barrier.arriveAndWaitSync() : await barrier.arriveAndWait()
            if (Atomics.load(i, 4 + p) !== 4) Atomics.store(i, 2, 1)
            if (last) Atomics.add(i, 3, 1)
          }
          say('done')
        }
        main()`
      const kids = await Promise.all([0, 1, 2, 3].map((k) => child(body(k), dir)))
      for (const k of kids) assert.strictEqual(k.line, 'done')
      const i = new Int32Array(b)
      assert.strictEqual(Atomics.load(i, 2), 0, 'a party passed a phase before every party arrived')
      assert.strictEqual(Atomics.load(i, 3), PHASES, 'one true per phase')
      assert.strictEqual(barrier.phase, PHASES)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('CountDownLatch: waiters of other processes (blocking and promise) and of this one are released when counted down to 0 by others; timeouts and aborts', async function () {
      this.timeout(180000)
      const b = openSharedMemory('cx', { path: dir, size: 64 })
      const latch = new threadlock.CountDownLatch(3, b, 0)
      await assert.rejects(orState(latch.wait({ timeout: 100 }), 30000, () => fileState(dir, 'cx')), (e) => e.code === 'ETIMEDOUT')
      assert.throws(() => latch.waitSync({ timeout: 100 }), (e) => e.code === 'ETIMEDOUT')
      const ac = new AbortController()
      const aborted = latch.wait({ signal: ac.signal })
      ac.abort()
      await assert.rejects(orState(aborted, 30000, () => fileState(dir, 'cx')), (e) => e.name === 'AbortError')
      const open = (sync) => child(`const threadlock = require(${INDEX})
        const latch = threadlock.CountDownLatch.from({ type: 'CountDownLatch', buffer: host.openSharedMemory('cx', { path: dir, size: 64 }), byteOffset: 0 })
        say('waiting')
        ${sync ? "latch.waitSync(); say('open ' + latch.count)" : "latch.wait().then(() => say('open ' + latch.count))"}`, dir)
      const kids = [await open(true), await open(false)]
      const mine = latch.wait()
      await until(() => threadlock.waiterCount(new Int32Array(b), 0) === 3, 'three waiters')
        .catch((e) => { throw new Error(`${e.message}: ${threadlock.waiterCount(new Int32Array(b), 0)} wait; ${fileState(dir, 'cx', kids)}`) })
      const said = kids.map((k) => next(k.child))
      for (let n = 0; n < 3; n++) {
        assert.deepStrictEqual(run(`const threadlock = require(${INDEX})
          return threadlock.CountDownLatch.from({ type: 'CountDownLatch', buffer: host.openSharedMemory('cx', { path: dir, size: 64 }), byteOffset: 0 }).countDown()`, dir), { value: 2 - n })
      }
      const settled = []
      said.forEach((p, k) => p.then((line) => settled.push(`child ${k}: ${line}`)))
      mine.then(() => settled.push('here'))
      const state = () => `${threadlock.waiterCount(new Int32Array(b), 0)} wait; settled: ${settled.join(', ') || 'none'}; ${fileState(dir, 'cx', kids)}`
      assert.deepStrictEqual(await orState(Promise.all(said), 30000, state), ['open 0', 'open 0'])
      await orState(mine, 30000, state)
      assert.strictEqual(latch.count, 0)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })
    it('a promise waiter that a poke freed, which published again further on before the poke\'s scan ended, is rung by that poke (THREADLOCK_SHM_TEST_POKE_DELAY_MS)', async () => {
      // A poke (a process's arrival or a death) frees every lock waiter's
      // node and rings the waiters' processes. The promise waiter W of
      // another process is freed at node 0, and node 0 is taken at once
      // by a plain waiter here. A poke that rang W's process as it went
      // (once per process) let W, whose loop ran during the pause after
      // node 0 (THREADLOCK_SHM_TEST_POKE_DELAY_MS), publish again at node
      // 1, which the scan then freed with no ring left: W slept on with
      // no node, and the count-down never opened it (the hang seen in the
      // CountDownLatch test above). The rings come at the scan's end now:
      // W hears of its last free, publishes again, and is opened.
      const b = openSharedMemory('pk', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const latch = new threadlock.CountDownLatch(1, b, 0)
      // Three nodes used once: the scan looks as far as node 2.
      const first = [4, 5, 6].map((k) => threadlock.waitAsync(i, k, 0).value)
      await until(() => threadlock.waiterCount(i, 4) + threadlock.waiterCount(i, 5) + threadlock.waiterCount(i, 6) === 3, 'three plain waiters')
      for (const k of [4, 5, 6]) threadlock.notify(i, k)
      await Promise.all(first)
      const w = await child(`const threadlock = require(${INDEX})
        const b = host.openSharedMemory('pk', { path: dir, size: 64 }); const i = new Int32Array(b)
        const latch = threadlock.CountDownLatch.from({ type: 'CountDownLatch', buffer: b, byteOffset: 0 })
        latch.wait().then(() => say('open'))
        say('waiting')
        process.stdin.once('data', () => {
          say('busy')
          while (Atomics.load(i, 8) === 0) Atomics.wait(i, 9, 0, 5)
        })`, dir)
      const kids = [w]
      let plain
      try {
        await until(() => threadlock.waiterCount(i, 0) === 1, 'the promise waiter')
        const busy = next(w.child)
        w.child.stdin.write('busy\n')
        assert.strictEqual(await busy, 'busy')
        // The poker: its arrival pokes the file, with a pause after each
        // node freed.
        const poker = spawn(process.execPath, ['-e', `const host = require(${HOST})
          host.openSharedMemory('pk', { path: ${JSON.stringify(dir)}, size: 64 })`], { stdio: 'ignore', env: { ...process.env, THREADLOCK_SHM_TEST_POKE_DELAY_MS: '1500' } })
        await until(() => threadlock.waiterCount(i, 0) === 0, 'the poke\'s free of the waiter\'s node')
        plain = threadlock.waitAsync(i, 4, 0).value // takes node 0
        await until(() => threadlock.waiterCount(i, 4) === 1, 'the plain waiter')
        const opened = next(w.child)
        Atomics.store(i, 8, 1) // W's loop runs
        await exited(poker)
        assert.strictEqual(poker.exitCode, 0)
        // The poke reached node 1 and freed it: W, rung, published again.
        await until(() => threadlock.waiterCount(i, 0) === 1, 'the promise waiter, published again after the poke')
        assert.strictEqual(latch.countDown(), 0)
        assert.strictEqual(await orState(opened, 20000, () => fileState(dir, 'pk', kids)), 'open')
      } finally {
        if (plain !== undefined) {
          threadlock.notify(i, 4)
          assert.strictEqual(await plain, 'ok')
        }
        for (const k of kids) k.child.kill('SIGKILL')
        await Promise.all(kids.map((k) => exited(k.child)))
      }
    })
    it('a promise waiter whose node an arriving process freed, killed before its ring, hears of it within the helper\'s slice (THREADLOCK_SHM_TEST_POKE_RING_DELAY_MS)', async () => {
      // A process that opens the file pokes it on arrival: it frees every
      // lock waiter's node and rings each waiter's process (P1). Killed
      // between a free and its ring, it leaves that waiter's record on a
      // free node, and no death of a process the waiter watches rings it:
      // it did not watch the newcomer yet. The count-down's notify then
      // finds no node of it, and before P3 the waiter slept for good. Now
      // its process's helper has its loop look at its records once a
      // second, rung or not, and it finds its node freed.
      const b = openSharedMemory('ar', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const latch = new threadlock.CountDownLatch(1, b, 0)
      const w = await child(`const threadlock = require(${INDEX})
        const b = host.openSharedMemory('ar', { path: dir, size: 64 })
        const latch = threadlock.CountDownLatch.from({ type: 'CountDownLatch', buffer: b, byteOffset: 0 })
        latch.wait().then(() => say('open'))
        say('waiting')`, dir)
      const kids = [w]
      try {
        await until(() => threadlock.waiterCount(i, 0) === 1, 'the promise waiter')
        const poker = spawn(process.execPath, ['-e', `const host = require(${HOST})
          host.openSharedMemory('ar', { path: ${JSON.stringify(dir)}, size: 64 })`], { stdio: 'ignore', env: { ...process.env, THREADLOCK_SHM_TEST_POKE_RING_DELAY_MS: '60000' } })
        const gone = exited(poker)
        await until(() => threadlock.waiterCount(i, 0) === 0, 'the arrival poke\'s free of the waiter\'s node')
        poker.kill('SIGKILL')
        await gone
        assert.strictEqual(poker.signalCode, 'SIGKILL')
        const opened = next(w.child)
        assert.strictEqual(latch.countDown(), 0)
        assert.strictEqual(await orState(opened, 20000, () => fileState(dir, 'ar', kids)), 'open')
      } finally {
        for (const k of kids) k.child.kill('SIGKILL')
        await Promise.all(kids.map((k) => exited(k.child)))
      }
    })
  })

  describe('Barrier, CountDownLatch and ConditionVariable across processes: the process that wakes the others killed between its change and its notify', () => {
    // The last party's / last count-down's / notifier's process changes the
    // word (one native call, casNotify) and is stopped before the notify
    // (THREADLOCK_SHM_TEST_NOTIFY_DELAY_MS), then killed: the waiters of
    // this process (blocking: in a worker; promise: here) and of another
    // process look again and go on, without another wake.
    const cases = {
      Barrier: {
        setup: (b) => new threadlock.Barrier(4, b, 0),
        open: "threadlock.Barrier.from({ type: 'Barrier', buffer: b, byteOffset: 0 })",
        waitSync: 'x.arriveAndWaitSync({ timeout: 30000 })',
        waitAsync: 'x.arriveAndWait({ timeout: 30000 })',
        waiting: (x) => x.arrived === 3,
        changed: (x) => x.phase === 1,
        wake: 'x.arriveAndWaitSync()'
      },
      CountDownLatch: {
        setup: (b) => new threadlock.CountDownLatch(1, b, 0),
        open: "threadlock.CountDownLatch.from({ type: 'CountDownLatch', buffer: b, byteOffset: 0 })",
        waitSync: 'x.waitSync({ timeout: 30000 })',
        waitAsync: 'x.wait({ timeout: 30000 })',
        waiting: (x, b) => threadlock.waiterCount(new Int32Array(b), 0) === 3,
        changed: (x) => x.count === 0,
        wake: 'x.countDown()'
      },
      ConditionVariable: {
        setup: (b) => new threadlock.ConditionVariable(b, 0),
        open: 'new threadlock.ConditionVariable(b, 0)',
        // Each waiter waits under its own lock (words 4, 5, 6): the test is
        // the wake, not the lock.
        waitSync: '(() => { const l = new threadlock.AsyncLock(b, 16 + 4 * K); l.lock(); const r = x.waitSync(l, { timeout: 30000 }); l.unlock(); return r })()',
        waitAsync: '(async () => { const l = new threadlock.AsyncLock(b, 16 + 4 * K); l.lock(); const r = await x.wait(l, { timeout: 30000 }); l.unlock(); return r })()',
        waiting: (x) => x.waiting === 3,
        changed: (x, b) => Atomics.load(new Int32Array(b), 0) !== 0,
        wake: 'x.notifyAll()'
      }
    }
    for (const [type, c] of Object.entries(cases)) {
      it(`${type}: the waiters go on`, async () => {
        const name = `wk-${type}`
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const x = c.setup(b)
        const open = `const b = host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }); const x = ${c.open}`
        const kids = []
        let w
        try {
          // A blocking waiter in a worker of this process, a promise waiter
          // here, a blocking one in another process.
          w = new Worker(`const { workerData, parentPort } = require('worker_threads')
            const threadlock = require(${INDEX}); const host = require(${HOST}); const dir = workerData; const K = 0
            ${open}
            const r = ${c.waitSync}
            parentPort.postMessage(String(r))`, { eval: true, workerData: dir })
          const fromWorker = new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
          const K = 1
          const mine = new Function('x', 'b', 'threadlock', 'K', `return ${c.waitAsync}`)(x, b, threadlock, K)
          const other = await child(`const threadlock = require(${INDEX}); const K = 2
            ${open}
            say('waiting'); say(String(${c.waitSync}))`, dir)
          kids.push(other)
          const fromOther = next(other.child)
          await until(() => c.waiting(x, b), 'the three waiters')
          const waker = spawn(process.execPath, ['-e', `const host = require(${HOST}); const threadlock = require(${INDEX}); const dir = ${JSON.stringify(dir)}
            ${open}
            console.log('waking'); ${c.wake}; console.log('woke')`], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, THREADLOCK_SHM_TEST_NOTIFY_DELAY_MS: '30000' } })
          kids.push({ child: waker })
          const wOut = { text: '' }
          waker.stdout.on('data', (d) => { wOut.text += d })
          // Its change made, its notify not: inside its pause.
          await until(() => c.changed(x, b), 'the change')
          await new Promise((resolve) => setTimeout(resolve, 100))
          waker.kill('SIGKILL')
          await exited(waker)
          assert.strictEqual(wOut.text, 'waking\n')
          const t0 = performance.now()
          const results = await Promise.all([fromWorker, mine.then(String), fromOther])
          // Their timeouts (30 s) would end them too: they went on at the death.
          const took = performance.now() - t0
          assert.ok(took < 15000, `${type}: the waiters went on after ${took.toFixed(0)} ms`)
          for (const r of results) assert.ok(r === 'false' || r === 'undefined' || r === 'ok', `${type}: ${results}`)
        } finally {
          if (w !== undefined) await w.terminate()
          for (const k of kids) if (k.child.exitCode === null && k.child.signalCode === null) k.child.kill('SIGKILL')
          await Promise.all(kids.map((k) => exited(k.child)))
        }
      })
    }
  })

  describe('ConditionVariable with an AsyncLock across processes', () => {

    it('consumers in 3 processes (waitSync and wait) wake holding the lock when this process notifies under it; notify counts them; timeouts return holding the lock', async () => {
      const b = openSharedMemory('cv', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0)
      const cv = new threadlock.ConditionVariable(b, 4)
      // A wait that times out returns holding the lock, and the caller's
      // release function still ends its hold.
      const release = await lock.acquire()
      assert.strictEqual(await cv.wait(lock, { timeout: 50 }), 'timed-out')
      assert.strictEqual(cv.waitSync(lock, { timeout: 50 }), 'timed-out')
      assert.strictEqual(lock.owner, binding.shmOwnerId(i))
      release()
      assert.strictEqual(lock.locked, false)
      assert.throws(() => cv.waitSync(lock), (e) => e.code === 'ENOTOWNER')
      const consumer = (sync) => child(`const threadlock = require(${INDEX})
        const b = host.openSharedMemory('cv', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const lock = new threadlock.AsyncLock(b, 0)
        const cv = new threadlock.ConditionVariable(b, 4)
        // EDEADLK: this thread holds the lock.
        const mine = () => { try { lock.lock({ timeout: 0 }); return 'taken' } catch (e) { return e.code } }
        say('waiting')
        ${sync
          ? "lock.lock(); while (i[2] === 0) cv.waitSync(lock); say('got ' + i[2] + ' ' + mine()); lock.unlock()"
          : "lock.runExclusive(async () => { while (i[2] === 0) await cv.wait(lock); say('got ' + i[2] + ' ' + mine()) })"}`, dir)
      const kids = [await consumer(true), await consumer(false), await consumer(true)]
      await until(() => cv.waiting === 3, 'three consumers')
      const said = kids.map((k) => next(k.child))
      lock.lock()
      i[2] = 42
      assert.strictEqual(cv.notifyAll(), 3)
      lock.unlock()
      assert.deepStrictEqual(await Promise.all(said), ['got 42 EDEADLK', 'got 42 EDEADLK', 'got 42 EDEADLK'])
      // Each released it after it spoke.
      await until(() => !lock.locked, 'the last consumer\'s release')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })
  })

  describe('RWLock across processes', () => {
    const NATIVE = JSON.stringify(path.join(ROOT, 'lib', 'native'))
    const ID = SHM.LOCK_ID
    const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }
    // A child that takes the lock at byte 0 of `name` (`read` or `write`,
    // `n` read locks) and says its owner id once it holds it; a line on its
    // stdin releases what it holds, and it exits when its stdin ends.
    const holder = (name, mode, n = 1) => child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
      const b = host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      for (let k = 0; k < ${n}; k++) ${mode === 'write' ? 'rw.acquireWriteSync()' : 'rw.acquireReadSync()'}
      process.stdin.on('data', () => { for (let k = 0; k < ${n}; k++) ${mode === 'write' ? 'rw.releaseWrite()' : 'rw.releaseRead()'}; say('released') })
      say(String(binding.shmOwnerId(new Int32Array(b))))`, dir)
    const letGo = (h) => { h.child.stdin.write('u\n') }

    it("a thread's write requests are granted in the order it made them, across its objects on the word", async () => {
      const h = await holder('rword', 'write')
      const b = openSharedMemory('rword', { path: dir, size: 64 })
      const r1 = new threadlock.RWLock(b, 0)
      const r2 = threadlock.RWLock.from(r1.handle)
      const got = []
      const take = (rw, name) => rw.acquireWrite().then(async (release) => {
        got.push(name)
        for (let k = 0; k < 3; k++) await new Promise((resolve) => setImmediate(resolve))
        release()
      })
      const all = Promise.all([take(r2, 'b1'), take(r1, 'a1'), take(r2, 'b2'), take(r1, 'a2')])
      await until(() => r1.waiting === 4, 'the four write requests to wait')
      assert.strictEqual(r1.tryAcquireWrite(), false)
      assert.throws(() => r2.acquireWriteSync({ timeout: 10 }), { code: 'EDEADLK' })
      letGo(h)
      await all
      assert.deepStrictEqual(got, ['b1', 'a1', 'b2', 'a2'])
      assert.strictEqual(r1.writer, null)
      // A release by another object passes the write lock to the next
      // request of the thread.
      r1.acquireWriteSync()
      const p = r1.acquireWrite().then((release) => release())
      r2.releaseWrite()
      await p
      assert.strictEqual(r1.writer, null)
      h.child.stdin.end()
      await exited(h.child)
    })

    it('excludes exactly: 4 processes (and a worker) x every API; readers share, a writer is alone', async function () {
      const N = 600
      // i[1]: written by writers only, non-atomically; i[2]: writers in;
      // i[3]: readers in; i[4]: violations; i[5]: most readers in at once.
      const body = (k) => `const threadlock = require(${INDEX})
        const { Worker } = require('worker_threads')
        const b = host.openSharedMemory('rx', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        const other = threadlock.RWLock.from(rw.handle)
        const spin = () => { for (let s = 0; s < 300; s++); }
        const write = () => { if (Atomics.add(i, 2, 1) !== 0 || Atomics.load(i, 3) !== 0) Atomics.add(i, 4, 1); const v = i[1]; spin(); i[1] = v + 1; Atomics.sub(i, 2, 1) }
        const read = () => { const r = Atomics.add(i, 3, 1) + 1; if (Atomics.load(i, 2) !== 0) Atomics.add(i, 4, 1); let m; while ((m = Atomics.load(i, 5)) < r && Atomics.compareExchange(i, 5, m, r) !== m); spin(); Atomics.sub(i, 3, 1) }
        const tick = () => new Promise((resolve) => setImmediate(resolve))
        async function main () {
          ${k === 0
            ? `const w = new Worker('const { workerData } = require("worker_threads"); const t = require(' + ${JSON.stringify(INDEX)} + '); const i = new Int32Array(workerData); const l = new t.RWLock(workerData, 0); for (let n = 0; n < ${N}; n++) { if (n % 2) { l.acquireWriteSync(); if (Atomics.add(i, 2, 1) !== 0 || Atomics.load(i, 3) !== 0) Atomics.add(i, 4, 1); const v = i[1]; i[1] = v + 1; Atomics.sub(i, 2, 1); l.releaseWrite() } else { l.acquireReadSync(); Atomics.add(i, 3, 1); if (Atomics.load(i, 2) !== 0) Atomics.add(i, 4, 1); Atomics.sub(i, 3, 1); l.releaseRead() } }', { eval: true, workerData: b })
               const wdone = new Promise((resolve) => w.once('exit', resolve))`
            : 'const wdone = null'}
          for (let n = 0; n < ${N}; n++) {
            switch (n % 10) {
              case 0: rw.acquireWriteSync(); write(); rw.releaseWrite(); break
              case 1: rw.acquireReadSync(); read(); other.releaseRead(); break
              case 2: { const r = await rw.acquireWrite(); await tick(); write(); r(); break }
              case 3: { const r = await rw.acquireRead(); await tick(); read(); r(); break }
              case 4: await rw.runWrite(async () => { await null; write() }); break
              case 5: await other.runRead(async () => { await tick(); read() }); break
              case 6: while (!rw.tryAcquireWrite()) await tick(); write(); other.releaseWrite(); break
              case 7: while (!rw.tryAcquireRead()) await tick(); read(); rw.releaseRead(); break
              case 8: { const r = await rw.acquireWrite({ timeout: 60000 }); write(); r(); break }
              case 9: { rw.acquireReadSync({ timeout: 60000 }); const again = rw.tryAcquireRead(); read(); if (again) rw.releaseRead(); rw.releaseRead(); break }
            }
          }
          await wdone
          say('done')
        }
        main()`
      const kids = await Promise.all([0, 1, 2, 3].map((k) => child(body(k), dir)))
      for (const k of kids) assert.strictEqual(k.line, 'done')
      const b = openSharedMemory('rx', { path: dir, size: 64 })
      const i = new Int32Array(b)
      // Writes: 4 processes x N / 10 x 5 write cases, and the worker's N / 2.
      assert.strictEqual(i[1], 4 * (N / 10) * 5 + N / 2)
      assert.strictEqual(i[4], 0, 'no reader met a writer, no writer met anyone')
      assert.strictEqual(Atomics.load(i, 0), 0, 'no writer, no waiter bits left')
      assert.strictEqual(new threadlock.RWLock(b, 0).readers, 0)
      assert.strictEqual(binding.shmHoldsUsed(i), 0, 'every read-hold record free')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })

    it('readers of 4 processes hold at once; owner checks: read locks belong to their thread (ENOTOWNER elsewhere), EDEADLK for the writer and an upgrade', async () => {
      const b = openSharedMemory('ro', { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      assert.ok(rw instanceof threadlock.RWLock)
      const readers = await Promise.all([0, 1, 2].map(() => holder('ro', 'read', 2)))
      assert.strictEqual(rw.readers, 6)
      assert.strictEqual(rw.tryAcquireRead(), true)
      assert.strictEqual(rw.readers, 7)
      assert.strictEqual(rw.tryAcquireWrite(), false)
      assert.throws(() => rw.acquireWriteSync({ timeout: 1000 }), (e) => e.code === 'EDEADLK' && e.message.startsWith('RWLock.acquireWriteSync:'))
      rw.releaseRead()
      assert.throws(() => rw.releaseRead(), (e) => e.code === 'ENOTOWNER' && e.message.startsWith('RWLock.releaseRead:'))
      assert.strictEqual(rw.readers, 6, 'the other processes\' read locks are theirs')
      // Another process's main thread (threadId 0, as here) and a worker of
      // a holding process hold none.
      const r = run(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('ro', { path: dir, size: 64 }), 0)
        const out = [rw.readers, rw.tryAcquireWrite()]
        try { rw.releaseRead(); out.push('released') } catch (e) { out.push(e.code) }
        try { rw.releaseWrite(); out.push('released') } catch (e) { out.push(e.code) }
        return out`, dir)
      assert.deepStrictEqual(r.value, [6, false, 'ENOTOWNER', 'ENOTOWNER'])
      rw.acquireReadSync()
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const rw = threadlock.RWLock.from(workerData)
        const out = []
        try { rw.releaseRead(); out.push('released') } catch (e) { out.push(e.code) }
        out.push(rw.readers)
        parentPort.postMessage(out)`, { eval: true, workerData: rw.handle })
      const wexit = new Promise((resolve) => w.once('exit', resolve))
      const out = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      await wexit
      assert.deepStrictEqual(out, ['ENOTOWNER', 7])
      rw.releaseRead()
      for (const h of readers) { const said = next(h.child); letGo(h); assert.strictEqual(await said, 'released') }
      assert.strictEqual(rw.readers, 0)
      assert.strictEqual(rw.acquireWriteSync(), false)
      assert.strictEqual(rw.writer, binding.shmOwnerId(new Int32Array(b)))
      assert.throws(() => rw.acquireWriteSync(), (e) => e.code === 'EDEADLK')
      assert.throws(() => rw.acquireReadSync(), (e) => e.code === 'EDEADLK')
      assert.strictEqual(rw.tryAcquireRead(), false)
      const r2 = run(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('ro', { path: dir, size: 64 }), 0)
        const out = [rw.tryAcquireRead(), rw.tryAcquireWrite()]
        try { rw.releaseWrite(); out.push('released') } catch (e) { out.push(e.code, e.message.startsWith('RWLock.releaseWrite:')) }
        return out`, dir)
      assert.deepStrictEqual(r2.value, [false, false, 'ENOTOWNER', true])
      rw.releaseWrite()
      assert.throws(() => rw.releaseWrite(), (e) => e.code === 'ENOTOWNER')
      assert.strictEqual(rw.writer, null)
      for (const h of readers) h.child.stdin.end()
      await Promise.all(readers.map((h) => exited(h.child)))
    })

    it('a reader that asks again while a writer of another process waits for it gets EDEADLK; the writer gets in once it releases', async () => {
      const b = openSharedMemory('rd', { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      rw.acquireReadSync()
      const w = await child(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('rd', { path: dir, size: 64 }), 0)
        say('waiting')
        say('got ' + rw.acquireWriteSync({ timeout: 30000 }))
        rw.releaseWrite()`, dir)
      await until(() => rw.waiting === 1, 'the writer to wait for the reader')
      assert.throws(() => rw.acquireReadSync({ timeout: 5000 }), (e) => e.code === 'EDEADLK')
      await assert.rejects(rw.acquireRead(), (e) => e.code === 'EDEADLK')
      assert.strictEqual(rw.tryAcquireRead(), false)
      assert.strictEqual(rw.readers, 1)
      const said = next(w.child)
      rw.releaseRead()
      assert.strictEqual(await said, 'got false')
      w.child.stdin.end()
      await exited(w.child)
      assert.strictEqual(Atomics.load(new Int32Array(b), 0) & ID, 0)
    })

    it('a waiting writer holds back new readers of every process; timeouts, aborts and blocking: false; a writer that gives up lets the held-back readers in', async () => {
      const r = await holder('tw', 'read')
      const b = openSharedMemory('tw', { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      // A writer of another process waits for r's read lock.
      const w = await child(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('tw', { path: dir, size: 64 }), 0)
        say('waiting')
        try { rw.acquireWriteSync({ timeout: 1500 }); say('got') } catch (e) { say(e.code) }`, dir)
      await until(() => rw.waiting === 1, 'the writer')
      const wsaid = next(w.child)
      // A new reader here waits behind it (no CPU), and a timed one times out.
      let t0 = performance.now()
      assert.throws(() => rw.acquireReadSync({ timeout: 200 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 199)
      t0 = performance.now()
      await assert.rejects(rw.acquireRead({ timeout: 200 }), (e) => e.code === 'ETIMEDOUT')
      assert.ok(performance.now() - t0 >= 199)
      await assert.rejects(rw.acquireRead({ blocking: false }), (e) => e.code === 'EBUSY')
      await assert.rejects(rw.acquireWrite({ blocking: false }), (e) => e.code === 'EBUSY')
      const ac = new AbortController()
      const aborted = rw.acquireRead({ signal: ac.signal })
      await until(() => rw.waiting === 2, 'the aborted request to wait')
      ac.abort()
      await assert.rejects(aborted, (e) => e.name === 'AbortError')
      const held = rw.acquireRead()
      await until(() => rw.waiting === 2, 'the held-back reader')
      // The writer times out: the held-back reader goes in beside r.
      assert.strictEqual(await wsaid, 'ETIMEDOUT')
      const release = await held
      assert.strictEqual(release.ownerDied, false)
      assert.strictEqual(rw.readers, 2)
      assert.strictEqual(rw.writer, null)
      release()
      // A promise writer here waits for r; aborted, it lets readers in too.
      const ac2 = new AbortController()
      const writing = rw.acquireWrite({ signal: ac2.signal })
      await until(() => rw.waiting === 1, 'the promise writer')
      assert.strictEqual(rw.writer, binding.shmOwnerId(new Int32Array(b)))
      assert.throws(() => rw.releaseWrite(), (e) => e.code === 'ENOTOWNER', 'not held yet')
      assert.strictEqual(rw.tryAcquireRead(), false)
      ac2.abort()
      await assert.rejects(writing, (e) => e.name === 'AbortError')
      assert.strictEqual(rw.writer, null)
      assert.strictEqual(rw.tryAcquireRead(), true)
      rw.releaseRead()
      // And one that stays gets it when r releases.
      const got = rw.acquireWrite()
      await until(() => rw.waiting === 1, 'the writer to wait')
      letGo(r)
      const wr = await got
      assert.strictEqual(wr.ownerDied, false)
      assert.strictEqual(rw.readers, 0)
      wr()
      assert.strictEqual(Atomics.load(new Int32Array(b), 0) & ID, 0)
      w.child.stdin.end()
      r.child.stdin.end()
      await Promise.all([exited(w.child), exited(r.child)])
    })

    it('waiting readers and writers of 3 processes use no CPU while a SIGSTOPped process holds; after SIGCONT each gets in', async () => {
      for (const mode of ['write', 'read']) {
        const name = `st${mode}`
        const h = await holder(name, mode)
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const rw = new threadlock.RWLock(b, 0)
        h.child.kill('SIGSTOP')
        const kids = []
        // Under a writer: a blocking reader, a promise reader, a writer;
        // under a reader: two writers (blocking and promise) and a reader
        // held back behind them.
        const ops = mode === 'write'
          ? ['rw.acquireReadSync(); say("got"); rw.releaseRead()', 'rw.acquireRead().then((r) => { say("got"); r() })', 'rw.acquireWriteSync(); say("got"); rw.releaseWrite()']
          : ['rw.acquireWriteSync(); say("got"); rw.releaseWrite()', 'rw.acquireWrite().then((r) => { say("got"); r() })', 'rw.acquireRead().then((r) => { say("got"); r() })']
        for (const op of ops) {
          kids.push(await child(`const threadlock = require(${INDEX})
            const rw = new threadlock.RWLock(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }), 0)
            say('waiting')
            ${op}`, dir))
          await until(() => rw.waiting === kids.length, `waiter ${kids.length}`)
        }
        const before = kids.map((k) => ticks(k.child.pid))
        await new Promise((resolve) => setTimeout(resolve, 1000))
        kids.forEach((k, n) => {
          const used = ticks(k.child.pid) - before[n]
          assert.ok(used <= 10, `${mode}: waiter ${n} used ${used} ticks of CPU in 1 s`)
        })
        const said = kids.map((k) => next(k.child))
        h.child.kill('SIGCONT')
        letGo(h)
        assert.deepStrictEqual(await Promise.all(said), ['got', 'got', 'got'])
        h.child.stdin.end()
        for (const k of kids) k.child.stdin.end()
        await Promise.all([h, ...kids].map((k) => exited(k.child)))
        assert.strictEqual(Atomics.load(new Int32Array(b), 0) & ID, 0)
        assert.strictEqual(rw.readers, 0)
      }
    })

    it('kill -9 of the writer: waiters of other processes (blocking readers of two processes, a promise writer) get in and are all told ownerDied, and so is the writer after readers that took over', async () => {
      const h = await holder('kw', 'write')
      const b = openSharedMemory('kw', { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      // Two readers of two processes wait behind it: each is told.
      const [r, r2] = await Promise.all([0, 1].map(() => child(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('kw', { path: dir, size: 64 }), 0)
        say('waiting')
        say('read ' + rw.acquireReadSync())
        process.stdin.on('data', () => { rw.releaseRead(); say('released') })`, dir)))
      await until(() => rw.waiting === 2, 'the blocking readers')
      assert.strictEqual(rw.ownerDied, false)
      let said = [r, r2].map((k) => next(k.child))
      h.child.kill('SIGKILL')
      await exited(h.child)
      assert.deepStrictEqual(await Promise.all(said), ['read true', 'read true'])
      assert.strictEqual(rw.readers, 2)
      assert.strictEqual(rw.ownerDied, true)
      // A writer waits for those readers; it is told too.
      const mine = rw.acquireWrite()
      await until(() => rw.waiting === 1, 'the promise writer')
      said = [r, r2].map((k) => next(k.child))
      for (const k of [r, r2]) k.child.stdin.write('u\n')
      assert.deepStrictEqual(await Promise.all(said), ['released', 'released'])
      let release = await mine
      assert.strictEqual(release.ownerDied, true)
      release()
      assert.strictEqual(rw.ownerDied, false)
      release = await rw.acquireWrite()
      assert.strictEqual(release.ownerDied, false)
      release()
      // A promise writer waiting when the writer is killed.
      const h2 = await holder('kw', 'write')
      const waiting = rw.acquireWrite()
      await until(() => rw.waiting === 1, 'the promise writer')
      h2.child.kill('SIGKILL')
      await exited(h2.child)
      release = await waiting
      assert.strictEqual(release.ownerDied, true)
      release()
      // Nobody waiting: the next reader takes a dead writer's lock over.
      const h3 = await holder('kw', 'write')
      h3.child.kill('SIGKILL')
      await exited(h3.child)
      assert.strictEqual(rw.ownerDied, true)
      assert.strictEqual(rw.acquireReadSync(), true)
      assert.strictEqual(rw.writer, null)
      rw.releaseRead()
      assert.strictEqual(rw.acquireWriteSync(), true, 'the writer after readers that took over is told')
      rw.releaseWrite()
      assert.strictEqual(rw.acquireWriteSync(), false)
      rw.releaseWrite()
      for (const k of [r, r2]) k.child.stdin.end()
      await Promise.all([r, r2].map((k) => exited(k.child)))
    })

    it('kill -9 of a process holding read locks: a waiting writer (blocking, of another process; promise, here) gets in with ownerDied, and the records are freed', async () => {
      const b = openSharedMemory('kr', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const rw = new threadlock.RWLock(b, 0)
      const h = await holder('kr', 'read', 3)
      const h2 = await holder('kr', 'read')
      assert.strictEqual(rw.readers, 4)
      const w = await child(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('kr', { path: dir, size: 64 }), 0)
        say('waiting')
        say('got ' + rw.acquireWriteSync())
        rw.releaseWrite()`, dir)
      await until(() => rw.waiting === 1, 'the blocking writer')
      const said = next(w.child)
      h.child.kill('SIGKILL')
      await exited(h.child)
      assert.strictEqual(rw.readers, 1, 'the dead reader\'s 3 read locks are given back')
      const wsaid = next(h2.child)
      letGo(h2)
      await wsaid
      assert.strictEqual(await said, 'got true')
      assert.strictEqual(binding.shmHoldsUsed(i), 0)
      // A promise writer here, the reader killed while it waits.
      const h3 = await holder('kr', 'read', 2)
      const mine = rw.acquireWrite()
      await until(() => rw.waiting === 1, 'the promise writer')
      h3.child.kill('SIGKILL')
      await exited(h3.child)
      const release = await mine
      assert.strictEqual(release.ownerDied, true)
      release()
      // Nobody waiting: the next writer is told.
      const h4 = await holder('kr', 'read')
      h4.child.kill('SIGKILL')
      await exited(h4.child)
      assert.strictEqual(rw.acquireWriteSync(), true)
      rw.releaseWrite()
      assert.strictEqual(rw.acquireWriteSync(), false)
      rw.releaseWrite()
      assert.strictEqual(binding.shmHoldsUsed(i), 0)
      for (const k of [w, h2]) k.child.stdin.end()
      await Promise.all([w, h2].map((k) => exited(k.child)))
    })

    it('a worker terminated holding read locks or the write lock: a writer of another process gets in with ownerDied; workers terminated while waiting leave nothing', async () => {
      const b = openSharedMemory('rt', { path: dir, size: 64 })
      const rw = new threadlock.RWLock(b, 0)
      const c = await child(`const threadlock = require(${INDEX})
        const rw = new threadlock.RWLock(host.openSharedMemory('rt', { path: dir, size: 64 }), 0)
        say('ready')
        process.stdin.on('data', () => rw.acquireWrite().then((r) => { say('got ' + r.ownerDied); r() }))`, dir)
      for (const mode of ['read', 'write']) {
        const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
          const threadlock = require(${INDEX})
          const rw = threadlock.RWLock.from(workerData)
          ${mode === 'read' ? 'rw.acquireReadSync(); rw.acquireReadSync()' : 'rw.acquireWriteSync()'}
          parentPort.postMessage('held')
          setInterval(() => {}, 1000)`, { eval: true, workerData: rw.handle })
        await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
        const said = next(c.child)
        c.child.stdin.write('w\n')
        await until(() => rw.waiting === 1, `the writer behind the ${mode} holder`)
        await w.terminate()
        assert.strictEqual(await said, 'got true', mode)
      }
      rw.acquireWriteSync()
      const waiters = [0, 1, 2, 3].map((k) => new Worker(`const { workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const rw = threadlock.RWLock.from(workerData)
        ;[() => rw.acquireReadSync(), () => rw.acquireRead(), () => rw.acquireWriteSync(), () => rw.acquireWrite()][${k}]()`, { eval: true, workerData: rw.handle }))
      await until(() => rw.waiting === 4, 'the workers to wait')
      await Promise.all(waiters.map((x) => x.terminate()))
      assert.strictEqual(rw.waiting, 0)
      rw.releaseWrite()
      assert.strictEqual(Atomics.load(new Int32Array(b), 0) & ID, 0)
      assert.strictEqual(binding.shmNodesUsed(new Int32Array(b)), 0)
      assert.strictEqual(binding.shmHoldsUsed(new Int32Array(b)), 0)
      c.child.stdin.end()
      await exited(c.child)
    })

    it('kill -9 at random moments among 4 processes reading and writing: exclusion stays exact, survivors go on, ownerDied is seen after each death of a holder', async function () {
      // i[1]: writes; i[2]: the writer inside (its slot + 1); i[8 + slot]:
      // readers inside of the process in that slot; i[4]: violations;
      // i[6]: stop; i[7]: ownerDied seen by writers; i[16 + slot]: what
      // the process in that slot does (for a failure's message).
      const body = (slot) => `const threadlock = require(${INDEX})
        const b = host.openSharedMemory('rk', { path: dir, size: 128 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        say('ready')
        const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
        const readers = () => { let n = 0; for (let k = 8; k < 12; k++) n += Atomics.load(i, k); return n }
        async function main () {
          for (let n = 0; Atomics.load(i, 6) === 0; n++) {
            const at = (k) => Atomics.store(i, ${16 + slot}, n * 16 + k)
            if (n % 3 === 0) {
              at(n % 2 ? 1 : 2)
              const died = n % 2 ? (await rw.acquireWrite()).ownerDied : rw.acquireWriteSync()
              at(3)
              if (died) Atomics.add(i, 7, 1)
              if (Atomics.compareExchange(i, 2, 0, ${slot + 1}) !== 0 || readers() !== 0) Atomics.add(i, 4, 1)
              const v = i[1]; spin(1); i[1] = v + 1
              Atomics.store(i, 2, 0)
              rw.releaseWrite()
            } else {
              at(n % 2 ? 4 : 5)
              const r = n % 2 ? await rw.acquireRead() : (rw.acquireReadSync(), () => rw.releaseRead())
              at(6)
              Atomics.add(i, ${8 + slot}, 1)
              if (Atomics.load(i, 2) !== 0) Atomics.add(i, 4, 1)
              spin(1)
              Atomics.sub(i, ${8 + slot}, 1)
              r()
            }
            at(7)
            await new Promise((resolve) => setTimeout(resolve, 1))
          }
          say('done')
        }
        main()`
      const b = openSharedMemory('rk', { path: dir, size: 128 })
      const i = new Int32Array(b)
      const rw = new threadlock.RWLock(b, 0)
      let killedHolding = 0
      const start = await Promise.all([0, 1, 2, 3].map(async (slot) => ({ slot, ...await child(body(slot), dir) })))
      const kids = await killAtRandom(start, (victim) => {
        // Stopped inside a critical section: nobody else is in one that
        // excludes it, so its marks are taken back before it dies.
        const inside = Atomics.load(i, 2) === victim.slot + 1 || Atomics.load(i, 8 + victim.slot) !== 0
        if (inside) killedHolding++
        if (Atomics.load(i, 2) === victim.slot + 1) Atomics.store(i, 2, 0)
        Atomics.store(i, 8 + victim.slot, 0)
      }, async (victim) => ({ slot: victim.slot, ...await child(body(victim.slot), dir) }))
      await survivorsFinish(i, 1, 6, 500, kids, dir, 'rk')
      assert.strictEqual(Atomics.load(i, 4), 0, 'no reader met a writer, no writer met anyone')
      if (killedHolding > 0) assert.ok(Atomics.load(i, 7) >= 1, `ownerDied seen ${Atomics.load(i, 7)} times, ${killedHolding} killed holding`)
      assert.strictEqual(Atomics.load(i, 0) & ID, 0)
      assert.strictEqual(rw.readers, 0)
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
    })
  })

  describe('AsyncLock across processes: the 1 ms bound and the FIFO mode (hand-off)', () => {
    const NATIVE = JSON.stringify(path.join(ROOT, 'lib', 'native'))
    const HANDED = SHM.LOCK_HANDED
    const ID = SHM.LOCK_ID
    // A child that waits for the lock at byte 0 of `name` (blocking, or by
    // promise with `promise`), opened with `options`, once it has said its
    // owner id; when granted it records its order in i[1 + k] (k: its
    // index, from the counter at i[8]) and the ms it waited in i[12 + k],
    // holds it `hold` ms and releases it.
    const waiter = (name, k, { options = '', promise = false, hold = 0 } = {}) => child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
      const b = host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0${options})
      say(String(binding.shmOwnerId(i)))
      const t0 = performance.now()
      const got = () => {
        Atomics.store(i, 12 + ${k}, Math.round(performance.now() - t0))
        Atomics.store(i, 1 + ${k}, Atomics.add(i, 8, 1) + 1)
        const end = performance.now() + ${hold}; while (performance.now() < end);
      }
      setTimeout(() => {
        ${promise ? 'lock.acquire().then((release) => { got(); release() })' : 'lock.lock(); got(); lock.unlock()'}
      }, 0)`, dir)

    it('a blocking waiter of another process that has waited 1 ms gets the lock at the next release, while this thread holds it 2 ms at a time and takes it again at once', async () => {
      const b = openSharedMemory('bound', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0)
      const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
      lock.lock()
      const w = await waiter('bound', 0)
      await until(() => lock.waiting === 1, 'the waiter to sleep')
      // Holds of 2 ms, each taken again at once after its release, for up to
      // 3 s: a waiter that only competed would be woken at each release and
      // find the lock taken again every time.
      const t0 = performance.now()
      let rounds = 0
      for (;;) {
        spin(2)
        lock.unlock()
        if (Atomics.load(i, 1) !== 0 || performance.now() - t0 > 3000 || !lock.tryLock()) break
        rounds++
      }
      await until(() => Atomics.load(i, 1) !== 0 || performance.now() - t0 > 3000, 'the waiter')
      assert.strictEqual(Atomics.load(i, 1), 1, `the waiter was not granted in 3 s (${rounds} holds here meanwhile)`)
      assert.strictEqual(rounds, 0, 'the first release handed the lock over')
      w.child.stdin.end()
      await exited(w.child)
      assert.strictEqual(lock.locked, false)
    })

    it('a promise waiter of another process that came to try and found the lock taken (present) and has waited 1 ms is handed it by a release, while this thread holds it 2 ms at a time and takes it again at once', async () => {
      const b = openSharedMemory('pbound', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0)
      lock.lock()
      // The child asks again and again (promise form) until i[5] is set,
      // counting its grants in i[1].
      const w = await child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
        const b = host.openSharedMemory('pbound', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const lock = new threadlock.AsyncLock(b, 0)
        say(String(binding.shmOwnerId(i)))
        ;(async () => { while (Atomics.load(i, 5) === 0) { const release = await lock.acquire(); Atomics.add(i, 1, 1); release() } })()`, dir)
      const id = Number(w.line)
      await until(() => lock.waiting === 1, 'the child to sleep')
      // A release wakes a promise waiter that is asleep since it queued to
      // come (its loop may be busy: it is not handed the lock); once it
      // came and found the lock taken again, it is present, and a release
      // hands it the lock. On a loaded machine it may also take the free
      // word before this thread does (granted without a hand-off): then it
      // asks again, and this thread waits for the lock.
      const { handed, rounds } = holdUntilHanded(i, id, () => lock.unlock(), () => { if (!lock.tryLock()) lock.lock() })
      assert.ok(handed, `no release handed the present promise waiter the lock in ${rounds} holds of 2 ms (${Atomics.load(i, 1)} grants of the child)`)
      Atomics.store(i, 5, 1)
      await until(() => lock.waiting === 0 && !lock.locked, 'the child to stop asking')
      w.child.stdin.end()
      await exited(w.child)
    })

    it('a promise request asleep since it was made, whose event loop is busy 400 ms, holds up nobody: a blocking waiter of another process is handed the lock meanwhile, while a third process takes and releases it in a loop', async () => {
      const lock = await busyHoldsUpNobody(dir, 'busy', {
        make: 'new threadlock.AsyncLock(b, 0)', take: 'x.lock()', give: 'x.unlock()', hold: 2
      }, (b) => new threadlock.AsyncLock(b, 0), (x) => x.acquire())
      assert.strictEqual(lock.locked, false)
    })

    it('{ fifo: true }: blocking and promise waiters of 3 processes are granted in the order they came, and nobody barges past them', async () => {
      const b = openSharedMemory('fifo', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0, { fifo: true })
      assert.strictEqual(lock.fifo, true)
      assert.deepStrictEqual(lock.handle, { type: 'AsyncLock', buffer: b, byteOffset: 0, fifo: true })
      assert.strictEqual(threadlock.AsyncLock.from(lock.handle).fifo, true)
      lock.lock()
      const kids = []
      for (let k = 0; k < 3; k++) {
        kids.push(await waiter('fifo', k, { options: ', { fifo: true }', promise: k === 1, hold: 5 }))
        await until(() => lock.waiting === k + 1, `waiter ${k} to sleep`)
      }
      lock.unlock()
      // While they are served, this thread may not pass them.
      let barged = 0
      while (Atomics.load(i, 8) < 3) {
        if (lock.tryLock()) {
          barged += Atomics.load(i, 8) < 3 ? 1 : 0
          lock.unlock()
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
      assert.deepStrictEqual([Atomics.load(i, 1), Atomics.load(i, 2), Atomics.load(i, 3)], [1, 2, 3])
      assert.strictEqual(barged, 0, 'tryLock() got the lock while waiters were queued')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.waiting, 0)
    })

    it('a waiter handed the lock and killed before it took it up: the next waiter takes it over without ownerDied (it never ran)', async () => {
      const b = openSharedMemory('hk', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0, { fifo: true })
      lock.lock()
      const victim = await waiter('hk', 0, { options: ', { fifo: true }' })
      await until(() => lock.waiting === 1, 'the first waiter to sleep')
      const next = await waiter('hk', 1, { options: ', { fifo: true }' })
      await until(() => lock.waiting === 2, 'the second waiter to sleep')
      victim.child.kill('SIGSTOP')
      lock.unlock()
      // Handed to the stopped one: its id with HANDED, not taken up.
      const v = Atomics.load(i, 0)
      assert.ok((v & HANDED) !== 0 && (v & ID) === Number(victim.line), `the word is ${v >>> 0}`)
      assert.strictEqual(Atomics.load(i, 2), 0)
      victim.child.kill('SIGKILL')
      await exited(victim.child)
      await until(() => Atomics.load(i, 2) !== 0, 'the second waiter to take it over')
      assert.strictEqual(Atomics.load(i, 1), 0, 'the killed one never ran')
      // It was told nothing: the next holder's ownerDied is false.
      await until(() => !lock.locked, 'the lock to be free')
      lock.lock()
      assert.strictEqual(lock.ownerDied, false)
      lock.unlock()
      next.child.stdin.end()
      await exited(next.child)
    })

    // This thread's promise request in the FIFO mode, behind a child that
    // holds the lock until told (a line on its stdin; its environment gets
    // `env`) and a second child that queues after it. Returns once the
    // holder's release has handed the lock to this thread's request, this
    // event loop kept busy meanwhile (no timing: under qemu a node process
    // takes seconds to start).
    async function handedHere (name, env) {
      const b = openSharedMemory(name, { path: dir, size: 64 })
      const i = new Int32Array(b)
      const lock = new threadlock.AsyncLock(b, 0, { fifo: true })
      const saved = { ...process.env }
      Object.assign(process.env, env)
      let holder
      try {
        holder = await child(`const threadlock = require(${INDEX})
          const lock = new threadlock.AsyncLock(host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 }), 0, { fifo: true })
          lock.lock()
          process.stdin.on('data', () => { lock.unlock() })
          say('holding')`, dir)
      } finally {
        for (const k of Object.keys(env)) { if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k] }
      }
      const ac = new AbortController()
      const state = { settled: null }
      lock.acquire({ signal: ac.signal }).then((r) => { state.settled = 'granted'; r() }, (e) => { state.settled = e.name })
      await until(() => lock.waiting === 1, 'this request to sleep')
      const second = await waiter(name, 0, { options: ', { fifo: true }' })
      await until(() => lock.waiting === 2, 'the second waiter to sleep')
      // The release, then busy until it has handed the lock to this
      // thread's request (its id with HANDED in the word).
      holder.child.stdin.write('u\n')
      const me = binding.shmOwnerId(i)
      const t0 = performance.now()
      while ((Atomics.load(i, 0) & (ID | HANDED)) !== (me | HANDED) && performance.now() - t0 < 20000);
      assert.ok(Atomics.load(i, 0) & HANDED, 'handed to this thread')
      return { i, lock, ac, state, kids: [holder, second] }
    }

    it('{ fifo: true }: a promise request handed the lock while its event loop is busy is granted, also when aborted before its loop runs (a late abort, as in-process)', async () => {
      const { i, lock, ac, state, kids } = await handedHere('ha', {})
      ac.abort()
      await until(() => state.settled !== null, 'the request to settle')
      assert.strictEqual(state.settled, 'granted')
      await until(() => Atomics.load(i, 1) !== 0, 'the second waiter to be granted after it')
      await until(() => !lock.locked, 'the lock to be free')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
      assert.strictEqual(lock.waiting, 0)
    })

    it('{ fifo: true }: a request that leaves (abort) after a release wrote the hand-off but before it notified takes it up and passes it to the next waiter (THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS)', async () => {
      const { i, lock, ac, state, kids } = await handedHere('hd', { THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS: '400' })
      // The node still waits (the release pauses before its notify): the
      // abort withdraws it, and the request finds the hand-off.
      ac.abort()
      await until(() => state.settled !== null, 'the request to settle')
      assert.strictEqual(state.settled, 'AbortError')
      await until(() => Atomics.load(i, 1) !== 0, 'the second waiter to be granted')
      await until(() => !lock.locked, 'the lock to be free')
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => exited(k.child)))
      assert.strictEqual(lock.waiting, 0)
    })

    it('a lock opened with { fifo: true } in a worker of another thread is the same FIFO lock', async () => {
      const b = openSharedMemory('q', { path: dir, size: 64 })
      const w = new Worker(`const { parentPort, workerData } = require('worker_threads')
        const threadlock = require(${INDEX})
        const out = []
        for (const f of [() => new threadlock.AsyncLock(workerData, 0, { fifo: true }).fifo, () => threadlock.AsyncLock.from({ type: 'AsyncLock', buffer: workerData, byteOffset: 8, fifo: true }).handle.fifo, () => threadlock.waitAsync(new Int32Array(workerData), 0, 0, 0).value]) {
          try { out.push(f()) } catch (e) { out.push(e.code) }
        }
        parentPort.postMessage(out)`, { eval: true, workerData: b })
      const exited = new Promise((resolve) => w.once('exit', resolve))
      const out = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
      await exited
      assert.deepStrictEqual(out, [true, true, 'timed-out'])
    })
  })

  describe('RWLock across processes: a writer that has waited 1 ms is handed the write lock (hand-off)', () => {
    const NATIVE = JSON.stringify(path.join(ROOT, 'lib', 'native'))
    const HANDED = SHM.LOCK_HANDED
    const ID = SHM.LOCK_ID
    const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
    // A child that asks for the lock at byte 0 of `name` (`write` or
    // `read`; blocking, or by promise with `promise`) once it has said its
    // owner id; when granted it records its order in i[1 + k] (k: its
    // index, from the counter at i[8]) and in i[12 + k] 1, or 2 when it was
    // told ownerDied, then releases.
    const asker = (name, k, { mode = 'write', promise = false } = {}) => {
      const take = mode === 'write'
        ? (promise ? 'rw.acquireWrite().then((r) => { got(r.ownerDied); r() })' : 'got(rw.acquireWriteSync()); rw.releaseWrite()')
        : (promise ? 'rw.acquireRead().then((r) => { got(r.ownerDied); r() })' : 'got(rw.acquireReadSync()); rw.releaseRead()')
      return child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
        const b = host.openSharedMemory(${JSON.stringify(name)}, { path: dir, size: 64 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        say(String(binding.shmOwnerId(i)))
        const got = (died) => {
          Atomics.store(i, 12 + ${k}, died ? 2 : 1)
          Atomics.store(i, 1 + ${k}, Atomics.add(i, 8, 1) + 1)
        }
        setTimeout(() => { ${take} }, 0)`, dir)
    }

    it('a promise writer of another process that came to try and found the lock taken (present) and has waited 1 ms is handed it by a release, while this thread writes 2 ms at a time and takes it again at once', async () => {
      const b = openSharedMemory('wpbound', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const rw = new threadlock.RWLock(b, 0)
      rw.acquireWriteSync()
      // The child asks again and again (acquireWrite) until i[5] is set,
      // counting its grants in i[1].
      const w = await child(`const threadlock = require(${INDEX}); const { binding } = require(${NATIVE})
        const b = host.openSharedMemory('wpbound', { path: dir, size: 64 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        say(String(binding.shmOwnerId(i)))
        ;(async () => { while (Atomics.load(i, 5) === 0) { const release = await rw.acquireWrite(); Atomics.add(i, 1, 1); release() } })()`, dir)
      const id = Number(w.line)
      await until(() => rw.waiting === 1, 'the child to sleep')
      // As for the AsyncLock: woken to come first (asleep since it queued),
      // then present, and then a release hands it the lock.
      const { handed, rounds } = holdUntilHanded(i, id, () => rw.releaseWrite(), () => { if (!rw.tryAcquireWrite()) rw.acquireWriteSync() })
      assert.ok(handed, `no release handed the present promise writer the lock in ${rounds} holds of 2 ms (${Atomics.load(i, 1)} grants of the child)`)
      Atomics.store(i, 5, 1)
      await until(() => rw.waiting === 0 && rw.writer === null, 'the child to stop asking')
      w.child.stdin.end()
      await exited(w.child)
    })

    it('a promise writer asleep since it was made, whose event loop is busy 400 ms, holds up nobody: a blocking writer of another process is handed the lock meanwhile, while a third process writes in a loop', async () => {
      // Holds of 10 ms: this thread's request has then likely waited 1 ms at
      // the first release after it.
      const rw = await busyHoldsUpNobody(dir, 'wbusy', {
        make: 'new threadlock.RWLock(b, 0)', take: 'x.acquireWriteSync()', give: 'x.releaseWrite()', hold: 10
      }, (b) => new threadlock.RWLock(b, 0), (x) => x.acquireWrite())
      await until(() => rw.writer === null, 'the lock to be free')
    })

    it('a release hands the lock to the oldest request that has waited 1 ms, also a reader: it gets in, and the other readers with it, while the writer that waited less long is stopped', async () => {
      const b = openSharedMemory('wread', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const rw = new threadlock.RWLock(b, 0)
      rw.acquireWriteSync()
      const r = await asker('wread', 0, { mode: 'read' })
      await until(() => rw.waiting === 1, 'the reader to sleep')
      const w = await asker('wread', 1)
      await until(() => rw.waiting === 2, 'the writer to sleep')
      const r2 = await asker('wread', 2, { mode: 'read', promise: true })
      await until(() => rw.waiting === 3, 'the second reader to sleep')
      spin(3) // all have waited 1 ms, the first reader longest
      // A stopped writer can be handed the lock (it is a blocking waiter),
      // and could not take it up: the word would name it, and the readers
      // would wait for it.
      w.child.kill('SIGSTOP')
      rw.releaseWrite()
      const v = Atomics.load(i, 0)
      assert.ok((v & HANDED) === 0 || (v & ID) === Number(r.line), `the word was handed to another than the oldest reader (${(v >>> 0).toString(16)}; the reader ${r.line}, the writer ${w.line})`)
      await until(() => Atomics.load(i, 1) !== 0 && Atomics.load(i, 3) !== 0, 'both readers to get in while the writer is stopped')
      w.child.kill('SIGCONT')
      await until(() => Atomics.load(i, 8) === 3, 'the writer to get in')
      assert.strictEqual(Atomics.load(i, 2), 3, 'the writer last')
      assert.deepStrictEqual([Atomics.load(i, 12), Atomics.load(i, 13), Atomics.load(i, 14)], [1, 1, 1])
      for (const k of [r, w, r2]) k.child.stdin.end()
      await Promise.all([r, w, r2].map((k) => exited(k.child)))
    })

    // A blocking waiter takes a hand-off up as soon as it runs, a reader
    // even frees the word again at once: stopped, it cannot, and the word
    // shows the hand-off (a release without it frees the word).
    for (const mode of ['write', 'read']) {
      it(`a blocking ${mode === 'write' ? 'writer' : 'reader'} of another process that has waited 1 ms is handed the lock by the next release, which this thread then cannot take again at once`, async () => {
        const name = `bound${mode}`
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        rw.acquireWriteSync()
        const w = await asker(name, 0, { mode })
        await until(() => rw.waiting === 1, 'the child to sleep')
        spin(3) // it has waited 1 ms
        w.child.kill('SIGSTOP')
        rw.releaseWrite()
        const v = Atomics.load(i, 0)
        assert.ok((v & HANDED) !== 0 && (v & ID) === Number(w.line), `the word is ${(v >>> 0).toString(16)}, the child ${w.line}`)
        assert.strictEqual(rw.tryAcquireWrite(), false, 'this thread took the write lock again past the hand-off')
        assert.strictEqual(rw.tryAcquireRead(), false, 'this thread took a read lock past the hand-off')
        w.child.kill('SIGCONT')
        await until(() => Atomics.load(i, 1) !== 0, 'the child to get in')
        assert.strictEqual(Atomics.load(i, 12), 1, 'a hand-off is not a death')
        w.child.stdin.end()
        await exited(w.child)
        await until(() => rw.writer === null && rw.readers === 0, 'the lock to be free')
      })
    }

    for (const mode of ['write', 'read']) {
      it(`a ${mode === 'write' ? 'writer' : 'reader'} handed the lock and killed before it took it up: the reader and the writer that wait next get in without ownerDied (it never held)`, async () => {
        const name = `whk${mode}`
        const b = openSharedMemory(name, { path: dir, size: 64 })
        const i = new Int32Array(b)
        const rw = new threadlock.RWLock(b, 0)
        rw.acquireWriteSync()
        const victim = await asker(name, 0, { mode })
        await until(() => rw.waiting === 1, 'the first request to sleep')
        const reader = await asker(name, 1, { mode: 'read' })
        const writer = await asker(name, 2, { promise: true })
        await until(() => rw.waiting === 3, 'the reader and the writer to sleep')
        spin(3) // the first request has waited 1 ms
        victim.child.kill('SIGSTOP')
        rw.releaseWrite()
        // Handed to the stopped one: its id with HANDED, not taken up.
        const v = Atomics.load(i, 0)
        assert.ok((v & HANDED) !== 0 && (v & ID) === Number(victim.line), `the word is ${(v >>> 0).toString(16)}`)
        spin(20)
        assert.strictEqual(Atomics.load(i, 8), 0, 'nobody went in past the hand-off')
        victim.child.kill('SIGKILL')
        await exited(victim.child)
        await until(() => Atomics.load(i, 8) === 2, 'the reader and the writer to get in')
        assert.strictEqual(Atomics.load(i, 1), 0, 'the killed one never ran')
        assert.deepStrictEqual([Atomics.load(i, 13), Atomics.load(i, 14)], [1, 1], 'neither was told ownerDied')
        await until(() => rw.writer === null && rw.readers === 0, 'the lock to be free')
        rw.acquireWriteSync()
        assert.strictEqual(rw.ownerDied, false)
        rw.releaseWrite()
        for (const k of [reader, writer]) k.child.stdin.end()
        await Promise.all([reader, writer].map((k) => exited(k.child)))
      })
    }

    it('a writer that times out after a release wrote the hand-off but before it notified takes it up and passes it on (THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS)', async () => {
      const b = openSharedMemory('wtd', { path: dir, size: 64 })
      const i = new Int32Array(b)
      const rw = new threadlock.RWLock(b, 0)
      const saved = process.env.THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS
      process.env.THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS = '400'
      let holder
      try {
        holder = await child(`const threadlock = require(${INDEX})
          const rw = new threadlock.RWLock(host.openSharedMemory('wtd', { path: dir, size: 64 }), 0)
          rw.acquireWriteSync()
          process.stdin.on('data', () => { rw.releaseWrite() })
          say('holding')`, dir)
      } finally {
        if (saved === undefined) delete process.env.THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS
        else process.env.THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS = saved
      }
      const ac = new AbortController()
      const state = { settled: null }
      rw.acquireWrite({ signal: ac.signal }).then((r) => { state.settled = 'granted'; r() }, (e) => { state.settled = e.name })
      await until(() => rw.waiting === 1, 'this request to sleep')
      const second = await asker('wtd', 0)
      await until(() => rw.waiting === 2, 'the second writer to sleep')
      spin(3) // both have waited 1 ms, this thread's request longer
      // This event loop is busy until the release has written the hand-off
      // to this thread's request (present: it came to try when it was made).
      holder.child.stdin.write('u\n')
      const me = binding.shmOwnerId(i)
      const t0 = performance.now()
      while ((Atomics.load(i, 0) & (ID | HANDED)) !== (me | HANDED) && performance.now() - t0 < 20000);
      assert.ok(Atomics.load(i, 0) & HANDED, 'handed to this thread')
      // The release pauses before its notify: the abort withdraws the node,
      // and the request finds the hand-off, takes it up and passes it on.
      ac.abort()
      await until(() => state.settled !== null, 'the request to settle')
      assert.strictEqual(state.settled, 'AbortError')
      await until(() => Atomics.load(i, 1) !== 0, 'the second writer to be granted')
      await until(() => rw.writer === null, 'the lock to be free')
      for (const k of [holder, second]) k.child.stdin.end()
      await Promise.all([holder, second].map((k) => exited(k.child)))
      assert.strictEqual(rw.waiting, 0)
    })
  })
})
