'use strict'

// Bad input to threadlock/host: request() refuses exactly what
// threadlock.locks refuses, with the same error; requestSync() and
// createLockManager() check their own arguments; a corrupt table file
// gives a clear error, never a crash.

const assert = require('assert')
const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { locks } = require('..')
const { createLockManager, HostError } = require('../host')
const { badCalls, fn, errorOf, refusesAsLocks } = require('./fixtures/request-bad-calls')
const { scopeDir, spawn, killAll } = require('./fixtures/host-harness')

describe('threadlock/host: bad input', function () {
  let dir, manager
  before(() => {
    dir = scopeDir()
    manager = createLockManager({ path: dir })
  })
  after(() => manager.close())

  describe('request() refuses what threadlock.locks refuses, with the same error', function () {
    for (const [label, args] of badCalls) {
      it(label, async () => {
        await refusesAsLocks(manager, args)
        // Nothing was left in the table.
        assert.strictEqual(manager.stats().nodes, 0)
      })
    }

    it('request.length is 2 and the prototype is tagged LockManager, as for threadlock.locks', () => {
      assert.strictEqual(manager.request.length, locks.request.length)
      assert.strictEqual(Object.prototype.toString.call(manager), '[object LockManager]')
    })

    it('a name longer than 255 bytes of UTF-8 is a RangeError; 255 bytes work', async () => {
      const err = await errorOf(manager.request('é'.repeat(128), fn))
      assert.ok(err instanceof RangeError)
      assert.strictEqual(err.message, 'LockManager.request: lock names of threadlock/host are limited to 255 bytes of UTF-8, received 256 bytes')
      assert.strictEqual(await manager.request('x'.repeat(255), (lock) => lock.name.length), 255)
    })
  })

  describe('requestSync()', function () {
    const cases = [
      [[Symbol('s')], TypeError, 'LockManager.requestSync: name must be a string, received a symbol'],
      [['n', 42], TypeError, 'LockManager.requestSync: options must be an object, received type number'],
      [['n', { mode: 'foo' }], TypeError, "LockManager.requestSync: options.mode must be 'exclusive' or 'shared', received type string"],
      [['n', { timeout: '5' }], TypeError, 'LockManager.requestSync: options.timeout must be a number of milliseconds, received type string'],
      [['n', { timeout: -1 }], RangeError, 'LockManager.requestSync: options.timeout must be >= 0 (Infinity for none), received -1'],
      [['n', { timeout: NaN }], RangeError, 'LockManager.requestSync: options.timeout must be >= 0 (Infinity for none), received NaN'],
      [['n', { signal: new AbortController().signal }], DOMException, 'LockManager.requestSync: signal is not supported (the thread is blocked while it waits); use timeout'],
      [['n', { steal: true, ifAvailable: true }], DOMException, 'LockManager.requestSync: steal and ifAvailable cannot be combined'],
      [['-n'], DOMException, "LockManager.requestSync: lock names starting with '-' are reserved"],
      [['x'.repeat(256)], RangeError, 'LockManager.requestSync: lock names of threadlock/host are limited to 255 bytes of UTF-8, received 256 bytes']
    ]
    for (const [args, Class, message] of cases) {
      it(`${String(args[0]).slice(0, 10)} ${JSON.stringify(args[1]) || ''}`, () => {
        assert.throws(() => manager.requestSync(...args), (err) => err instanceof Class && err.message === message)
        assert.strictEqual(manager.stats().nodes, 0)
      })
    }
  })

  describe('createLockManager()', function () {
    const cases = [
      [7, TypeError, 'createLockManager: options must be an object, received type number'],
      [{ path: 5 }, TypeError, 'createLockManager: options.path must be a string or a file URL, received type number'],
      [{ path: '' }, RangeError, 'createLockManager: options.path must be a non-empty path without NUL characters']
    ]
    for (const [options, Class, message] of cases) {
      it(`options ${JSON.stringify(options)}`, () => {
        assert.throws(() => createLockManager(options), (err) => err instanceof Class && err.message === message)
      })
    }

    it('a closed manager refuses requests with HostError ECLOSED', async () => {
      const m = createLockManager({ path: dir })
      await m.close()
      const err = await errorOf(m.request('n', fn))
      assert.ok(err instanceof HostError)
      assert.strictEqual(err.code, 'ECLOSED')
      assert.strictEqual(err.message, 'LockManager.request: the lock manager is closed')
      assert.throws(() => m.requestSync('n'), (e) => e.code === 'ECLOSED' && e.message === 'LockManager.requestSync: the lock manager is closed')
    })

    it('without a host core for the platform, the module loads and createLockManager throws HostError ENOTSUP', () => {
      // The addon of a platform without src/host/ exports hostSupported: false.
      const script = "const native = require('./lib/native'); native.hostSupported = false; " +
        "const host = require('./host'); try { host.createLockManager({ path: '/nonexistent' }) } catch (e) { console.log(e.name, e.code, e.message) }"
      const out = execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..') }).toString().trim()
      assert.strictEqual(out, `HostError ENOTSUP createLockManager: threadlock/host is not supported on this platform yet (${process.platform}); it works on Linux today`)
    })

    for (const [magic, fsName] of [['0x6969', 'NFS'], ['0xFF534D42', 'CIFS'], ['0x01021997', '9p'], ['0x65735546', 'FUSE \\(or virtiofs\\)']]) {
      it(`a directory on ${fsName.replace(/\\/g, '')} is refused with HostError EFSTYPE, pointing to threadlock/postgres`, () => {
        // The file system's type is stood in through a test hook of
        // src/host/platform_linux.c: CI cannot mount each of them.
        const d = scopeDir()
        const script = `try { require('./host').createLockManager({ path: ${JSON.stringify(d)} }); console.log('attached') } catch (e) { console.log(e.name, e.code, e.message) }`
        const out = execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'), env: { ...process.env, THREADLOCK_HOST_TEST_FSTYPE: magic } }).toString().trim()
        assert.match(out, new RegExp(`^HostError EFSTYPE createLockManager: '.*' is on a ${fsName} file system, .*use threadlock/postgres to lock across machines$`))
        assert.ok(!fs.existsSync(path.join(d, 'threadlock-host.table')), 'no table file was created')
      })
    }
  })

  describe('a corrupt table file', function () {
    const FILE = 'threadlock-host.table'

    it('a bad header: attaching throws HostError ECORRUPT while another process uses the file', () => {
      const d = scopeDir()
      const m = createLockManager({ path: d })
      try {
        const fd = fs.openSync(path.join(d, FILE), 'r+')
        fs.writeSync(fd, Buffer.from('garbage!'), 0, 8, 0)
        fs.closeSync(fd)
        assert.throws(() => createLockManager({ path: d }), (err) => err instanceof HostError && err.code === 'ECORRUPT' &&
          /^createLockManager: the table file in .* is corrupt \(bad header\)/.test(err.message))
      } finally {
        m.close()
      }
      // Once nobody uses it, the next process rebuilds it.
      const again = createLockManager({ path: d })
      assert.strictEqual(again.stats().slots, 1)
      again.close()
    })

    it('an index out of range in a name entry: requests reject with HostError ECORRUPT, no crash', async () => {
      const d = scopeDir()
      const a = createLockManager({ path: d })
      const b = createLockManager({ path: d })
      const name = 'corrupt-me-' + 'z'.repeat(40)
      a.requestSync(name)
      // Layout version 2: a name entry keeps its head index 32 bytes before
      // its name (then its tail). The name must be found exactly once, for the test to
      // corrupt what it means to.
      const file = fs.readFileSync(path.join(d, FILE))
      // Names are stored as UTF-16 code units.
      const at = file.indexOf(Buffer.from(name, 'utf16le'))
      assert.ok(at > 0 && file.indexOf(Buffer.from(name, 'utf16le'), at + 1) === -1)
      const head = file.readUInt32LE(at - 32)
      assert.ok(head >= 1 && head <= 4096, `head ${head}`)
      assert.strictEqual(file.readUInt32LE(at - 28), head, 'one node: tail = head')
      const fd = fs.openSync(path.join(d, FILE), 'r+')
      const bad = Buffer.alloc(4)
      bad.writeUInt32LE(0xfffffff0)
      fs.writeSync(fd, bad, 0, 4, at - 32)
      fs.closeSync(fd)
      const err = await errorOf(b.request(name, fn))
      assert.ok(err instanceof HostError, String(err))
      assert.strictEqual(err.code, 'ECORRUPT')
      assert.match(err.message, /^LockManager.request: the table file in .* is corrupt/)
      const q = await errorOf(b.query())
      assert.strictEqual(q && q.code, 'ECORRUPT')
      await a.close()
      await b.close()
    })
  })

  describe('names are compared as JavaScript strings (finding 9)', function () {
    afterEach(killAll)

    it("lone surrogates '\\uD800', '\\uDC00' and '\\uFFFD' are three locks across processes, and query() gives them back as they were", async () => {
      const d = scopeDir()
      const [child] = await spawn(d, 1)
      const names = ['\uD800', '\uDC00', '\uFFFD', 'a\uD800b']
      const ids = []
      for (const name of names) {
        const id = child.send('request', { name })
        await child.event(id, 'granted')
        ids.push(id)
      }
      const m = createLockManager({ path: d })
      try {
        const snap = await m.query()
        assert.deepStrictEqual(snap.held.map((e) => e.name).sort(), [...names].sort())
        // Each is held: none is granted to another process.
        for (const name of names) assert.strictEqual(m.requestSync(name, { ifAvailable: true }), null, JSON.stringify(name))
        // And a name that differs only there is another lock.
        const other = m.requestSync('a\uDC00b', { ifAvailable: true })
        assert.notStrictEqual(other, null)
        other.release()
      } finally {
        await m.close()
      }
    })
  })
})
