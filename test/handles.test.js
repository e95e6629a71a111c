'use strict'

// Handles name the primitive they describe. A handle opened as another kind
// of primitive would read and write the same words with another layout (a
// semaphore's permits taken for a lock holder's id), so from() refuses it
// with a TypeError before touching the memory. The type lives in the handle
// only: zeroed memory, or a handle written by hand without a type, still
// opens as any primitive, and zeroed memory is a free lock.

const assert = require('assert')
const tl = require('..')

// Every primitive, with the arguments that come before its slot.
const PRIMITIVES = {
  AsyncLock: [],
  RWLock: [],
  Semaphore: [2],
  CountDownLatch: [3],
  Barrier: [2],
  ConditionVariable: []
}

// "a Semaphore", "an AsyncLock", "an RWLock".
const named = (name) => `${/^(?:[AEIOU]|RW)/.test(name) ? 'an' : 'a'} ${name}`

function create (name, ...slot) {
  return new tl[name](...PRIMITIVES[name], ...slot)
}

function words (handle) {
  return [...new Int32Array(handle.buffer)]
}

describe('handles carry the type of their primitive', () => {
  it('covers every exported class that has a handle', () => {
    const withHandle = Object.keys(tl)
      .filter((k) => typeof tl[k] === 'function' && tl[k].prototype && 'handle' in tl[k].prototype)
      .sort()
    assert.deepStrictEqual(withHandle, Object.keys(PRIMITIVES).sort())
  })

  for (const name of Object.keys(PRIMITIVES)) {
    it(`${name}: handle.type is '${name}', and from() opens its own handles, also cloned`, () => {
      const p = create(name)
      assert.strictEqual(p.handle.type, name)
      const again = tl[name].from(structuredClone(p.handle))
      assert.ok(again instanceof tl[name])
      assert.deepStrictEqual(again.handle, p.handle)
      // The clone shares the memory: a word written through one is read
      // through the other (and put back).
      const mine = new Int32Array(p.buffer)
      const theirs = new Int32Array(again.buffer)
      const was = Atomics.exchange(theirs, 0, 12345)
      assert.strictEqual(Atomics.exchange(mine, 0, was), 12345)
    })

    for (const other of Object.keys(PRIMITIVES)) {
      if (other === name) continue
      it(`${other}.from() refuses the handle of ${named(name)} and writes nothing`, () => {
        // A slot big enough for either, with the primitive in it.
        const sab = new SharedArrayBuffer(16)
        const p = create(name, sab, 4)
        const before = words(p.handle)
        const message = `${other}.from: the handle describes ${named(name)}, not ${named(other)}`
        assert.throws(() => tl[other].from(p.handle), (err) => err instanceof TypeError && err.message === message)
        assert.throws(() => tl[other].from(structuredClone(p.handle)), TypeError)
        assert.deepStrictEqual(words(p.handle), before)
      })
    }
  }

  it('the refused handle leaves both primitives working: a lock and a semaphore side by side', async () => {
    const sab = new SharedArrayBuffer(8)
    const lock = new tl.AsyncLock(sab, 0)
    const sem = new tl.Semaphore(3, sab, 4)
    assert.throws(() => tl.AsyncLock.from(sem.handle), TypeError)
    assert.throws(() => tl.Semaphore.from(lock.handle), TypeError)
    const release = await lock.acquire()
    assert.strictEqual(lock.locked, true)
    assert.strictEqual(sem.tryAcquire(3), true)
    assert.strictEqual(sem.value, 0)
    release()
    sem.release(3)
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(sem.value, 3)
  })

  it('zeroed memory and a handle written by hand without a type open as any primitive; zero is a free lock', () => {
    for (const name of Object.keys(PRIMITIVES)) {
      const p = tl[name].from({ buffer: new SharedArrayBuffer(8) })
      assert.strictEqual(p.handle.type, name)
    }
    const lock = tl.AsyncLock.from({ buffer: new SharedArrayBuffer(4) })
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(lock.tryLock(), true)
    lock.unlock()
  })

  it('refuses a type that is not a string, and a type nobody has', () => {
    const buffer = new SharedArrayBuffer(4)
    assert.throws(() => tl.AsyncLock.from({ type: 1, buffer }), { name: 'TypeError', message: 'AsyncLock.from: handle.type must be the name of a primitive, received type number' })
    assert.throws(() => tl.AsyncLock.from({ type: null, buffer }), TypeError)
    assert.throws(() => tl.RWLock.from({ type: 'Mutex', buffer }), { name: 'TypeError', message: 'RWLock.from: the handle describes a Mutex, not an RWLock' })
  })

  it('a subclass opens the handles of its primitive', () => {
    class MyLock extends tl.AsyncLock {}
    const lock = new tl.AsyncLock(undefined, 0, { fifo: true })
    const mine = MyLock.from(lock.handle)
    assert.ok(mine instanceof MyLock)
    assert.strictEqual(mine.fifo, true)
    assert.strictEqual(mine.handle.type, 'AsyncLock')
    assert.throws(() => MyLock.from(new tl.Semaphore(1).handle), TypeError)
  })
})
