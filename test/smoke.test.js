'use strict'

const assert = require('assert')
const { wait, notify, waitAsync } = require('..')

describe('smoke', () => {
  it('loads and answers the simplest calls', async () => {
    const ta = new Int32Array(new SharedArrayBuffer(8))
    assert.strictEqual(wait(ta, 0, 1, 0), 'not-equal')
    assert.strictEqual(wait(ta, 0, 0, 0), 'timed-out')
    const r = waitAsync(ta, 0, 0)
    assert.strictEqual(r.async, true)
    assert.strictEqual(notify(ta, 0), 1)
    assert.strictEqual(await r.value, 'ok')
  })
})
