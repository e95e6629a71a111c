'use strict'

// The trust boundary of threadlock/host, with real processes and a second
// user (nobody, through setpriv; these tests need root): one default
// directory per user whatever the environment; a table identified by its
// file, not its path; any directory or file that another user could write,
// replace or link is refused with a HostError that says why; error codes
// come from the OS error, never from the message.

const assert = require('assert')
const fs = require('fs')
const path = require('path')
const { execFileSync, spawn, spawnSync } = require('child_process')
const { createLockManager, HostError } = require('../host')

const ROOT = path.join(__dirname, '..')
const NOBODY = 65534
const isRoot = process.geteuid() === 0

// Runs `body` (the text of a function of `host` returning a value) in a
// new node process, as `uid` (null: this user), with `env` added; returns
// what it printed as JSON: { value } or { error: { name, code, message } }.
function run (body, { uid = null, env = {}, timeout = 30000 } = {}) {
  const script = `const host = require(${JSON.stringify(path.join(ROOT, 'host'))});
    let out
    try { out = { value: (${body})(host) } } catch (e) { out = { error: { name: e.name, code: e.code, message: e.message } } }
    console.log(JSON.stringify(out))`
  const cmd = uid === null ? [process.execPath, '-e', script] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', script]
  const r = spawnSync(cmd[0], cmd.slice(1), { env: { ...process.env, ...env }, timeout, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`child failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

// A child that attaches (`path`, or the default when null), takes `name`
// and holds it until its stdin closes. Resolves once it holds it.
function holder (dir, name, env = {}) {
  const script = `const host = require(${JSON.stringify(path.join(ROOT, 'host'))});
    const m = host.createLockManager(${dir === null ? '' : `{ path: ${JSON.stringify(dir)} }`})
    const held = m.requestSync(${JSON.stringify(name)}, { ifAvailable: true })
    console.log(held === null ? 'busy' : 'held ' + m.path)
    process.stdin.on('end', () => m.close()); process.stdin.resume()`
  const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve({ child, line: out.trim() })
    })
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}: ${out}`)))
  }).then((r) => { child.removeAllListeners('exit'); return r })
}

function stop (child) {
  return new Promise((resolve) => {
    child.once('exit', resolve)
    child.stdin.end()
  })
}

// A function for run(): attaches to `dir` and asks `name` if available.
function tryHold (dir, name) {
  return `(host) => { const m = host.createLockManager({ path: ${JSON.stringify(dir)} }); const h = m.requestSync(${JSON.stringify(name)}, { ifAvailable: true }); return h === null ? 'busy' : 'held' }`
}

describe('threadlock/host: trust boundary and table identity', function () {
  this.timeout(60000)
  let base
  before(function () {
    if (!isRoot) this.skip() // a second user is needed: run as root
    // Traversable by nobody, writable only by root.
    base = fs.mkdtempSync('/tmp/tl-host-trust-')
    fs.chmodSync(base, 0o755)
  })
  after(() => {
    if (base) fs.rmSync(base, { recursive: true, force: true })
  })

  describe('one default directory per user, whatever the environment (finding 6)', function () {
    it('a process with XDG_RUNTIME_DIR, one with TMPDIR and one with neither share one table', async () => {
      const name = `deploy-${process.pid}-${Date.now()}`
      const xdg = fs.mkdtempSync(path.join(base, 'xdg-'))
      const tmp = fs.mkdtempSync(path.join(base, 'tmp-'))
      const { child, line } = await holder(null, name, { XDG_RUNTIME_DIR: xdg })
      try {
        assert.strictEqual(line, `held /tmp/threadlock-${process.geteuid()}`)
        const env = { ...process.env }
        delete env.XDG_RUNTIME_DIR
        delete env.TMPDIR
        for (const extra of [{ TMPDIR: tmp }, { XDG_RUNTIME_DIR: tmp, TMPDIR: xdg, HOME: tmp }, {}]) {
          const got = run(`(host) => { const m = host.createLockManager(); return [m.path, m.requestSync(${JSON.stringify(name)}, { ifAvailable: true }) === null ? 'busy' : 'held'] }`, { env: extra })
          assert.deepStrictEqual(got, { value: [`/tmp/threadlock-${process.geteuid()}`, 'busy'] }, JSON.stringify(extra))
        }
      } finally {
        await stop(child)
      }
      const st = fs.lstatSync(`/tmp/threadlock-${process.geteuid()}`)
      assert.ok(st.isDirectory())
      assert.strictEqual(st.uid, process.geteuid())
      assert.strictEqual(st.mode & 0o077, 0)
    })

    it("a default directory that another user made first is refused with EUNSAFE, saying whose it is", function () {
      const dir = `/tmp/threadlock-${NOBODY}`
      if (fs.existsSync(dir)) this.skip() // nobody has a real one: leave it
      fs.mkdirSync(dir, { mode: 0o700 }) // root's, squatting nobody's name
      try {
        const got = run('(host) => host.createLockManager().path', { uid: NOBODY })
        assert.strictEqual(got.error && got.error.code, 'EUNSAFE', JSON.stringify(got))
        assert.match(got.error.message, /^createLockManager: '\/tmp\/threadlock-65534' belongs to user 0, not to this user \(65534\)/)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  describe('a table is its file, not its path (finding 10)', function () {
    it('an overlay mount and its upper directory: the second path is refused, never two holders', async function () {
      const o = fs.mkdtempSync(path.join(base, 'ovl-'))
      for (const d of ['lower', 'upper', 'work', 'merged']) fs.mkdirSync(path.join(o, d), { mode: 0o700 })
      const m = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${o}/lower,upperdir=${o}/upper,workdir=${o}/work`, `${o}/merged`])
      if (m.status !== 0) this.skip() // no overlay here (not root, or no CAP_SYS_ADMIN)
      try {
        fs.mkdirSync(path.join(o, 'merged', 'locks'), { mode: 0o700 })
        const name = 'only-one'
        // Through the overlay first, then the upper directory; then the
        // other way round (the first attacher of each path re-initialises
        // unless it sees the other).
        for (const [first, second] of [['merged', 'upper'], ['upper', 'merged']]) {
          const { child, line } = await holder(path.join(o, first, 'locks'), name)
          try {
            assert.match(line, /^held /)
            const got = run(`(host) => { let m; try { m = host.createLockManager({ path: ${JSON.stringify(path.join(o, second, 'locks'))} }) } catch (e) { return 'refused ' + e.code + ' ' + e.message } return m.requestSync(${JSON.stringify(name)}, { ifAvailable: true }) === null ? 'busy' : 'held' }`)
            assert.notStrictEqual(got.value, 'held', `${second} after ${first}: both hold the lock`)
            assert.match(got.value, /^refused EATTACH createLockManager: the table file in .* is in use through another path to the same file/)
          } finally {
            await stop(child)
          }
        }
      } finally {
        spawnSync('umount', [`${o}/merged`])
      }
    })
  })

  describe('anything another user could write, replace or link is refused (finding 1)', function () {
    // A directory of nobody's, in the root-owned base.
    function nobodyDir (mode = 0o700) {
      const d = fs.mkdtempSync(path.join(base, 'nobody-'))
      fs.chownSync(d, NOBODY, NOBODY)
      fs.chmodSync(d, mode)
      return d
    }

    it("another user's mode-0777 directory given in path: refused, and nobody's table is never joined", () => {
      const d = nobodyDir(0o777)
      // nobody attaches first (its own directory: refused for it too, since
      // others can write it), then makes it 0700 and attaches.
      const mine = run(tryHold(d, 'x'), { uid: NOBODY })
      assert.strictEqual(mine.error && mine.error.code, 'EUNSAFE')
      assert.match(mine.error.message, /is writable by other users \(mode 0777\)/)
      const err = assert.throws(() => createLockManager({ path: d }), (e) => e instanceof HostError && e.code === 'EUNSAFE' &&
        e.message === `createLockManager: '${d}' belongs to user ${NOBODY}, not to this user (0): its owner could change the locks; use a directory of this user`)
      assert.strictEqual(err, undefined)
      assert.ok(!fs.existsSync(path.join(d, 'threadlock-host.table')))
    })

    it('a directory of this user with mode 0777 or 0770 is refused, saying why', () => {
      for (const mode of [0o777, 0o770, 0o1777]) {
        const d = fs.mkdtempSync(path.join(base, 'open-'))
        fs.chmodSync(d, mode)
        assert.throws(() => createLockManager({ path: d }), (e) => e.code === 'EUNSAFE' &&
          e.message.startsWith(`createLockManager: '${d}' is writable by other users (mode ${mode.toString(8).padStart(4, '0')})`))
      }
    })

    it("a directory on the way that another user owns (it could rename what is in it) is refused", () => {
      const d = nobodyDir(0o755)
      const inner = path.join(d, 'mine')
      fs.mkdirSync(inner, { mode: 0o700 })
      assert.throws(() => createLockManager({ path: inner }), (e) => e.code === 'EUNSAFE' &&
        e.message.startsWith(`createLockManager: '${d}' (on the way) belongs to user ${NOBODY}`))
    })

    it('a symbolic link on the way, planted by another user or not, is not followed', () => {
      const target = fs.mkdtempSync(path.join(base, 'target-'))
      const d = nobodyDir(0o755)
      const link = path.join(d, 'link')
      const mine = fs.mkdtempSync(path.join(base, 'mine-'))
      fs.symlinkSync(target, path.join(mine, 'link'))
      // A link in root's own directory: refused too, naming the link.
      assert.throws(() => createLockManager({ path: path.join(mine, 'link') }), (e) => e.code === 'EUNSAFE' &&
        e.message.startsWith(`createLockManager: '${mine}/link' is a symbolic link, which is not followed`))
      assert.throws(() => createLockManager({ path: path.join(mine, 'link', 'sub') }), (e) => e.code === 'EUNSAFE' && /is a symbolic link/.test(e.message))
      // nobody's link (in nobody's directory) to root's directory.
      execFileSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'ln', '-s', target, link])
      assert.throws(() => createLockManager({ path: link }), (e) => e.code === 'EUNSAFE')
      assert.ok(!fs.existsSync(path.join(target, 'threadlock-host.table')))
    })

    it('a hard link at the table\'s name is refused, and its target is neither resized nor written', () => {
      const d = fs.mkdtempSync(path.join(base, 'hard-'))
      const victim = path.join(base, `victim-${process.pid}`)
      fs.writeFileSync(victim, 'precious', { mode: 0o600 })
      fs.linkSync(victim, path.join(d, 'threadlock-host.table'))
      assert.throws(() => createLockManager({ path: d }), (e) => e.code === 'EUNSAFE' && /has 2 links/.test(e.message))
      assert.strictEqual(fs.readFileSync(victim, 'utf8'), 'precious')
    })

    it('a table file of another user, or one that others can open, is refused', () => {
      const d = fs.mkdtempSync(path.join(base, 'file-'))
      const file = path.join(d, 'threadlock-host.table')
      fs.writeFileSync(file, '')
      fs.chownSync(file, NOBODY, NOBODY)
      assert.throws(() => createLockManager({ path: d }), (e) => e.code === 'EUNSAFE' && e.message.includes(`belongs to user ${NOBODY}`))
      fs.chownSync(file, 0, 0)
      fs.chmodSync(file, 0o644)
      assert.throws(() => createLockManager({ path: d }), (e) => e.code === 'EUNSAFE' && e.message.includes('can be opened by other users (mode 0644)'))
    })

    it('a FIFO at the table\'s name is a clear error, without hanging', () => {
      const d = fs.mkdtempSync(path.join(base, 'fifo-'))
      execFileSync('mkfifo', [path.join(d, 'threadlock-host.table')])
      const got = run(`(host) => host.createLockManager({ path: ${JSON.stringify(d)} }).path`, { timeout: 20000 })
      assert.deepStrictEqual(got.error, {
        name: 'HostError',
        code: 'EUNSAFE',
        message: `createLockManager: '${d}/threadlock-host.table' is a FIFO, not a regular file; remove it (the table is made again)`
      })
    })

    it('a plain lockf on byte 0 by another process: createLockManager fails within seconds, naming the process', async () => {
      const d = fs.mkdtempSync(path.join(base, 'lockf-'))
      const file = path.join(d, 'threadlock-host.table')
      fs.writeFileSync(file, '', { mode: 0o600 })
      // flock(1) takes flock locks; python's fcntl.lockf takes the POSIX
      // record lock of the finding.
      const locker = spawn('python3', ['-c', `import fcntl,os,sys\nfd=os.open(${JSON.stringify(file)}, os.O_RDWR)\nfcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)\nprint('locked', flush=True)\nsys.stdin.read()`], { stdio: ['pipe', 'pipe', 'inherit'] })
      try {
        await new Promise((resolve, reject) => {
          locker.stdout.once('data', resolve)
          locker.once('exit', (code) => reject(new Error(`python3 exited with ${code}`)))
        })
        const started = Date.now()
        const got = run(`(host) => host.createLockManager({ path: ${JSON.stringify(d)} }).path`, { timeout: 40000 })
        assert.ok(Date.now() - started < 30000)
        assert.strictEqual(got.error && got.error.code, 'EATTACH', JSON.stringify(got))
        assert.strictEqual(got.error.message, `createLockManager: byte 0 of the table file in '${d}' has been locked by process ${locker.pid} for 5 s (only threadlock/host may lock it)`)
      } finally {
        locker.stdin.end()
        locker.kill()
      }
    })
  })

  describe('error codes come from the OS error, not from the message (finding 9)', function () {
    it('a table in use by processes of another layout version says "version" (EVERSION), and is rebuilt once they are gone', () => {
      const d = fs.mkdtempSync(path.join(base, 'version-'))
      const m = createLockManager({ path: d })
      try {
        // Layout versions keep magic (8 bytes) and version (4) first.
        const fd = fs.openSync(path.join(d, 'threadlock-host.table'), 'r+')
        const v = Buffer.alloc(4)
        v.writeUInt32LE(1)
        fs.writeSync(fd, v, 0, 4, 8)
        fs.closeSync(fd)
        const got = run(`(host) => host.createLockManager({ path: ${JSON.stringify(d)} }).path`)
        assert.strictEqual(got.error && got.error.code, 'EVERSION', JSON.stringify(got))
        assert.match(got.error.message, /^createLockManager: the table file in '.*' has layout version 1, and this threadlock uses version \d+: it is in use by processes of another threadlock version/)
      } finally {
        m.close()
      }
      const again = run(`(host) => host.createLockManager({ path: ${JSON.stringify(d)} }).stats().slots`)
      assert.deepStrictEqual(again, { value: 1 })
    })

    it('EISDIR under a directory named "corrupt" is EISDIR', () => {
      const d = fs.mkdtempSync(path.join(base, 'corrupt-'))
      fs.mkdirSync(path.join(d, 'threadlock-host.table'))
      assert.throws(() => createLockManager({ path: d }), (e) => e instanceof HostError && e.code === 'EISDIR' &&
        e.message === `createLockManager: cannot open '${d}/threadlock-host.table': Is a directory`)
    })

    it('EACCES under "my file system" is EACCES', () => {
      const d = path.join(base, `my file system ${process.pid}`)
      fs.mkdirSync(d, { mode: 0o700 })
      fs.chownSync(d, NOBODY, NOBODY)
      const file = path.join(d, 'threadlock-host.table')
      fs.writeFileSync(file, '')
      fs.chownSync(file, NOBODY, NOBODY)
      fs.chmodSync(file, 0)
      const got = run(`(host) => host.createLockManager({ path: ${JSON.stringify(d)} }).path`, { uid: NOBODY })
      assert.strictEqual(got.error && got.error.code, 'EACCES', JSON.stringify(got))
      assert.strictEqual(got.error.message, `createLockManager: cannot open '${file}': Permission denied`)
    })
  })
})
