'use strict'

// Options first: every primitive takes one options object in place of its
// (buffer, byteOffset, options) arguments, as users of other lock libraries
// write it (`new AsyncLock({ fifo: true })`, `new Semaphore(2, { buffer })`),
// and keeps the positional form. A plain object in the buffer's place is the
// options; anything else there must be a SharedArrayBuffer. Unknown options
// and arguments after the options object are refused with a TypeError
// before anything is written.

const assert = require('assert')
const tl = require('..')

// Every primitive, with the arguments that come before its slot, and the
// number of words it uses.
const PRIMITIVES = {
  AsyncLock: { before: [], words: 1, keys: ['buffer', 'byteOffset', 'fifo'] },
  RWLock: { before: [], words: 1, keys: ['buffer', 'byteOffset'] },
  Semaphore: { before: [2], words: 1, keys: ['buffer', 'byteOffset'] },
  CountDownLatch: { before: [3], words: 1, keys: ['buffer', 'byteOffset'] },
  Barrier: { before: [2], words: 2, keys: ['buffer', 'byteOffset'] },
  ConditionVariable: { before: [], words: 1, keys: ['buffer', 'byteOffset'] }
}

function make (name, ...rest) {
  return new tl[name](...PRIMITIVES[name].before, ...rest)
}

describe('constructors take one options object', () => {
  it('new AsyncLock({ fifo: true }) makes a FIFO lock in a new buffer, as async-mutex users write it', () => {
    const lock = new tl.AsyncLock({ fifo: true })
    assert.strictEqual(lock.fifo, true)
    assert.strictEqual(lock.handle.fifo, true)
    assert.strictEqual(lock.buffer.byteLength, 4)
    assert.strictEqual(lock.byteOffset, 0)
    assert.strictEqual(new tl.AsyncLock({ fifo: false }).fifo, false)
    assert.strictEqual(new tl.AsyncLock({}).fifo, false)
  })

  it('new AsyncLock({ buffer, byteOffset, fifo }) opens the same word as the positional form', async () => {
    const sab = new SharedArrayBuffer(8)
    const a = new tl.AsyncLock({ buffer: sab, byteOffset: 4, fifo: true })
    const b = new tl.AsyncLock(sab, 4, { fifo: true })
    assert.strictEqual(a.byteOffset, 4)
    const release = await a.acquire()
    assert.strictEqual(b.locked, true)
    assert.deepStrictEqual([...new Int32Array(sab)].map((v) => v !== 0), [false, true])
    release()
    assert.strictEqual(b.locked, false)
  })

  it('new Semaphore(2, { buffer, byteOffset }) writes its permits in the given slot', () => {
    const sab = new SharedArrayBuffer(12)
    const sem = new tl.Semaphore(2, { buffer: sab, byteOffset: 8 })
    assert.deepStrictEqual([...new Int32Array(sab)], [0, 0, 2])
    assert.strictEqual(sem.value, 2)
    assert.strictEqual(new tl.Semaphore(5, {}).value, 5)
    assert.strictEqual(new tl.Semaphore(undefined, {}).value, 1)
  })

  it('every primitive takes { buffer, byteOffset } and {} alone', () => {
    for (const name of Object.keys(PRIMITIVES)) {
      const { words } = PRIMITIVES[name]
      const sab = new SharedArrayBuffer(4 * (words + 1))
      const p = make(name, { buffer: sab, byteOffset: 4 })
      assert.strictEqual(p.buffer, sab, name)
      assert.strictEqual(p.byteOffset, 4, name)
      const q = make(name, {})
      assert.strictEqual(q.buffer.byteLength, 4 * words, name)
      assert.strictEqual(q.byteOffset, 0, name)
      // An object without a prototype is an options object too.
      assert.strictEqual(make(name, Object.assign(Object.create(null), { buffer: sab })).buffer, sab, name)
    }
  })

  it('keeps the positional form, with own options third', () => {
    const sab = new SharedArrayBuffer(8)
    assert.strictEqual(new tl.AsyncLock(sab, 4, { fifo: true }).fifo, true)
    assert.strictEqual(new tl.AsyncLock(undefined, 0, { fifo: true }).fifo, true)
    assert.strictEqual(new tl.Semaphore(3, sab, 4).value, 3)
    assert.strictEqual(new tl.RWLock(sab).byteOffset, 0)
  })

  describe('refuses what it cannot read, before writing anything', () => {
    // Each row: the primitive, its slot arguments, and the message.
    const rows = [
      ['AsyncLock', [{ fifo: true, fiffo: true }], "AsyncLock: unknown option 'fiffo' (known: buffer, byteOffset, fifo)"],
      ['Semaphore', [{ permits: 3 }], "Semaphore: unknown option 'permits' (known: buffer, byteOffset)"],
      ['RWLock', [{ byteLength: 4 }], "RWLock: unknown option 'byteLength' (known: buffer, byteOffset)"],
      ['AsyncLock', [{ fifo: true }, 0], 'AsyncLock: an options object must be the last argument, received type number after it'],
      ['Barrier', [{}, undefined, {}], 'Barrier: an options object must be the last argument, received an instance of Object after it'],
      ['CountDownLatch', [{ buffer: new ArrayBuffer(4) }], 'CountDownLatch: options.buffer must be a SharedArrayBuffer, received an instance of ArrayBuffer'],
      ['ConditionVariable', [42], 'ConditionVariable: buffer must be a SharedArrayBuffer (or pass one options object), received type number'],
      ['AsyncLock', [new Map()], 'AsyncLock: buffer must be a SharedArrayBuffer (or pass one options object), received an instance of Map'],
      ['AsyncLock', [new tl.AsyncLock().handle], 'AsyncLock: options.type is not an option; to open a handle, call AsyncLock.from(handle)'],
      ['AsyncLock', [new SharedArrayBuffer(4), 0, { fifi: true }], "AsyncLock: unknown option 'fifi' (known: fifo)"],
      ['Semaphore', [new SharedArrayBuffer(4), 0, { buffer: new SharedArrayBuffer(4) }], "Semaphore: unknown option 'buffer' (there are none here)"],
      ['AsyncLock', [{ fifo: 1 }], 'AsyncLock: options.fifo must be a boolean, received type number']
    ]
    for (const [name, args, message] of rows) {
      it(`${name}: ${message}`, () => {
        assert.throws(() => make(name, ...args), (err) => err instanceof TypeError && err.message === message)
      })
    }

    it('a refused options object leaves the given buffer as it was', () => {
      const sab = new SharedArrayBuffer(8)
      new Int32Array(sab).fill(-1)
      assert.throws(() => new tl.Semaphore(2, { buffer: sab, byteOffset: 4, extra: 1 }), TypeError)
      assert.throws(() => new tl.Barrier(2, { buffer: sab, typo: 1 }), TypeError)
      assert.throws(() => new tl.CountDownLatch(1, { buffer: sab, byteOffset: 6 }), RangeError)
      assert.deepStrictEqual([...new Int32Array(sab)], [-1, -1])
    })
  })
})
