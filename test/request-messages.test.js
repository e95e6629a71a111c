'use strict'

// The messages of the named-lock requests say what was wrong with the
// request itself (issue 27, item 8): requestSync's timeout names the lock,
// as request's does, and a bad mode shows the value received.

const assert = require('assert')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { locks } = require('..')
const { createLockManager } = require('../host')
const hostSupported = require('../lib/native').hostSupported

describe('named-lock request messages', function () {
  it("locks.request with mode 'exclusiv' reports the value received", async () => {
    await assert.rejects(locks.request('m', { mode: 'exclusiv' }, () => {}), {
      name: 'TypeError',
      message: "LockManager.request: options.mode must be 'exclusive' or 'shared', received 'exclusiv'"
    })
    await assert.rejects(locks.request('m', { mode: 5 }, () => {}), {
      name: 'TypeError',
      message: "LockManager.request: options.mode must be 'exclusive' or 'shared', received type number ('5')"
    })
  })

  describe('threadlock/host', function () {
    let dir, a, b
    before(function () {
      if (!hostSupported) this.skip()
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-messages-'))
      fs.chmodSync(dir, 0o700)
      a = createLockManager({ path: dir })
      b = createLockManager({ path: dir })
    })
    after(() => {
      if (a) a.close()
      if (b) b.close()
      if (dir) fs.rmSync(dir, { recursive: true, force: true })
    })

    it("requestSync's timeout message names the lock, as request's does", async () => {
      const held = a.requestSync('the "name"')
      try {
        assert.throws(() => b.requestSync('the "name"', { timeout: 5 }), {
          code: 'ETIMEDOUT',
          message: 'LockManager.requestSync: lock "the \\"name\\"": not acquired within 5 ms'
        })
        await assert.rejects(b.request('the "name"', { timeout: 5 }, () => {}), {
          code: 'ETIMEDOUT',
          message: 'LockManager.request: lock "the \\"name\\"": not acquired within 5 ms'
        })
      } finally {
        held.release()
      }
    })

    it("requestSync with mode 'exclusiv' reports the value received", () => {
      assert.throws(() => a.requestSync('m', { mode: 'exclusiv' }), {
        name: 'TypeError',
        message: "LockManager.requestSync: options.mode must be 'exclusive' or 'shared', received 'exclusiv'"
      })
    })
  })
})
