'use strict'

// Bad input to threadlock/postgres: request() refuses exactly what
// threadlock.locks refuses, with the same error class, name and message
// (the two are run side by side), and createLockManager() checks its own
// arguments. None of this reaches a server, so it runs without one; so does
// the check that the subpath names the missing package when pg is absent.

const assert = require('assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { execFileSync } = require('child_process')
const { locks } = require('..')
const { createLockManager, SessionError } = require('../postgres')

// A manager whose pool is never used by these tests: every call below is
// refused before a connection is asked for. Port 1 would refuse one anyway.
const manager = createLockManager('postgres://nobody@127.0.0.1:1/none')

// The calls threadlock.locks refuses, shared with threadlock/host's test.
const { badCalls, fn, errorOf, refusesAsLocks } = require('./fixtures/request-bad-calls')

describe('threadlock/postgres: bad input', function () {
  after(() => manager.close())

  describe('request() refuses what threadlock.locks refuses, with the same error', function () {
    for (const [label, args] of badCalls) {
      it(label, async () => {
        await refusesAsLocks(manager, args)
      })
    }

    it('bad input rejects the returned promise instead of throwing', async () => {
      let p
      assert.doesNotThrow(() => { p = manager.request(Symbol('s'), fn) })
      assert.ok(p instanceof Promise)
      assert.ok((await errorOf(p)) instanceof TypeError)
    })

    it('steal is refused with a NotSupportedError DOMException (threadlock.locks grants it)', async () => {
      let ran = false
      const err = await errorOf(manager.request('n', { steal: true }, () => { ran = true }))
      assert.ok(err instanceof DOMException)
      assert.strictEqual(err.name, 'NotSupportedError')
      assert.strictEqual(err.message, 'LockManager.request: steal is not supported by threadlock/postgres')
      assert.strictEqual(ran, false)
    })

    it('request.length is 2 and the prototype is tagged LockManager, as for threadlock.locks', () => {
      assert.strictEqual(manager.request.length, locks.request.length)
      assert.strictEqual(Object.prototype.toString.call(manager), '[object LockManager]')
    })
  })

  describe('createLockManager()', function () {
    const cases = [
      [42, TypeError, 'createLockManager: poolOrConfig must be a pg.Pool, a configuration object or a connection string, received type number'],
      [null, TypeError, 'createLockManager: poolOrConfig must be a pg.Pool, a configuration object or a connection string, received null'],
      [{ connect () {}, query () {} }, TypeError, 'createLockManager: poolOrConfig must be a pg.Pool or a configuration, received a pg.Client (every request needs a session of its own)']
    ]
    for (const [value, Class, message] of cases) {
      it(`poolOrConfig ${String(value)}`, () => {
        assert.throws(() => createLockManager(value), (err) => err instanceof Class && err.message === message)
      })
    }

    const optionCases = [
      [7, TypeError, 'createLockManager: options must be an object, received type number'],
      [{ maxConnections: '3' }, TypeError, 'createLockManager: options.maxConnections must be an integer, received type string'],
      [{ maxConnections: 0 }, RangeError, 'createLockManager: options.maxConnections must be an integer from 1 to 10000, received 0'],
      [{ maxConnections: 1.5 }, RangeError, 'createLockManager: options.maxConnections must be an integer from 1 to 10000, received 1.5'],
      [{ namespace: 2 ** 31 }, RangeError, 'createLockManager: options.namespace must be an integer from -2147483648 to 2147483647, received 2147483648'],
      [{ table: 5 }, TypeError, 'createLockManager: options.table must be a string, received type number'],
      [{ table: 'Locks; DROP TABLE x' }, RangeError, "createLockManager: options.table must be a lower-case identifier, optionally schema-qualified, received 'Locks; DROP TABLE x'"],
      [{ table: 'a'.repeat(57) }, RangeError, `createLockManager: options.table must name a table of at most 56 characters (the manager adds ${'a'.repeat(20)}..._tokens beside it), received '${'a'.repeat(57)}'`]
    ]
    for (const [options, Class, message] of optionCases) {
      it(`options ${JSON.stringify(options)}`, () => {
        assert.throws(() => createLockManager('postgres://x@127.0.0.1:1/x', options),
          (err) => err instanceof Class && err.message === message)
      })
    }

    it('a closed manager refuses requests with SessionError ECLOSED', async () => {
      const m = createLockManager('postgres://x@127.0.0.1:1/x')
      await m.close()
      const err = await errorOf(m.request('n', fn))
      assert.ok(err instanceof SessionError)
      assert.strictEqual(err.code, 'ECLOSED')
      assert.strictEqual(err.message, 'LockManager.request: the lock manager is closed')
    })

    it('an unreachable server rejects the request with SessionError ECONNECT, and the callback never runs', async () => {
      const m = createLockManager('postgres://x@127.0.0.1:1/x')
      let ran = false
      const err = await errorOf(m.request('n', () => { ran = true }))
      assert.ok(err instanceof SessionError, String(err && err.stack))
      assert.strictEqual(err.code, 'ECONNECT')
      assert.match(err.message, /^LockManager.request: could not connect to PostgreSQL: /)
      assert.ok(err.cause instanceof Error)
      assert.strictEqual(ran, false)
      await m.close()
    })
  })

  it("without the package 'pg', loading threadlock/postgres throws an error that names it", function () {
    this.timeout(20000)
    // A copy of the package's JavaScript in a directory where no pg can be
    // found (the subpath loads no addon).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-nopg-'))
    try {
      const root = path.join(__dirname, '..')
      fs.copyFileSync(path.join(root, 'postgres.js'), path.join(dir, 'postgres.js'))
      fs.cpSync(path.join(root, 'lib'), path.join(dir, 'lib'), { recursive: true })
      const script = "try { require('./postgres.js'); console.log('loaded') } catch (e) { console.log(e.message) }"
      const out = execFileSync(process.execPath, ['-e', script], { cwd: dir, env: { ...process.env, NODE_PATH: '' } }).toString()
      assert.strictEqual(out.trim(), "threadlock/postgres needs the package 'pg' (node-postgres), an optional peer dependency of threadlock: install it with `npm install pg`")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
