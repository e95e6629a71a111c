'use strict'

// Termination stress for every lock primitive: rounds in which 4 workers
// hammer one AsyncLock (default and FIFO), RWLock, Semaphore or named lock
// with every request form at random (test/fixtures/termination-hammer.js),
// some of them from two async lanes at once, while the test terminates one
// or two of them at random moments and starts fresh ones in their place
// (threads started ahead, so that they join at once). After the
// terminations every worker must keep making requests; then all stop, and
// every request must settle (a stall fails the round and names what each
// worker was doing, it does not hang). Mutual exclusion must have held
// throughout, the primitive must be at rest after each round, and free at
// the end.
//
// 40 rounds per primitive here (under a minute in all on two cores);
// `npm run stress` sets THREADLOCK_STRESS_SCALE=10 for ten times as many,
// and prints how each request form ended.

const assert = require('assert')
const { AsyncLock, RWLock, Semaphore, locks } = require('..')
const { TestWorker, cleanup, within, until, sleep, progress, progressDone, STRESS_SCALE } =
  require('./fixtures/threads')
const H = require('./fixtures/termination-hammer')

const FIXTURE = require.resolve('./fixtures/termination-hammer')
const ROUNDS = 40 * STRESS_SCALE
const POOL = 4
const KILLS = 2 // the most workers a round terminates
const SPARES = 4 // workers started ahead for the rounds to come
const PERMITS = 9 // two deaths holding 3 each still leave room for any request
const SETTLE_MS = 10000 // for requests of at most a few ms each, on a busy machine
const PROGRESS_MS = 10000
const SOLO_OPS = 300 // requests of each worker alone at the end (see solo())

const random = (n) => Math.floor(Math.random() * n)

/**
 * One primitive under stress: the shared arrays of the hammer fixture, the
 * workers by id, and what every worker ever posted.
 *   kind     'AsyncLock', 'RWLock', 'Semaphore' or 'named'
 *   handle   the primitive's handle (none for named locks)
 *   forms    (slot) => the hammer's form set for the worker in `slot`
 *   killable (slot) => whether the worker in `slot` may be terminated
 */
class Stress {
  constructor ({ kind, handle, forms, killable = () => true, lanes = () => 1, name }) {
    const ids = ROUNDS * 3 + POOL * 2 + 8
    const shared = (n) => new Int32Array(new SharedArrayBuffer(4 * n))
    this.ctl = shared(H.CTL_LENGTH)
    this.arrays = {
      reads: shared(ids),
      dying: shared(ids),
      held: shared(ids),
      done: shared(ids),
      current: shared(2 * ids), // by id and lane: the form in hand
      ops: shared(2 * ids) // by id and lane: requests made
    }
    this.data = { ctl: this.ctl, ...this.arrays, kind, handle, fixture: FIXTURE }
    this.maxIds = ids
    this.forms = forms
    this.killable = killable
    this.lanes = lanes
    this.name = name
    this.nextId = 0
    this.pool = [] // by slot
    this.everyone = []
    this.dead = [] // workers terminated
    this.spares = [] // started workers that no slot holds yet (see topUp())
    this.coming = 0 // spares on their way
    this.failed = null // why a spare did not start
    this.stats = {}
  }

  /** A new worker, once it has loaded threadlock and opened the primitive. */
  async prepare () {
    const id = ++this.nextId
    assert.ok(id < this.maxIds, 'more workers than the shared arrays have room for')
    Atomics.store(this.ctl, H.MAX_ID, id)
    const tw = new TestWorker({
      data: this.data,
      init: ({ tl, state, workerData, require }) => {
        state.primitive = require(workerData.fixture).open(tl, workerData)
      }
    })
    const w = { tw, id, slot: -1, threadId: tw.threadId, loop: null }
    this.everyone.push(w)
    await tw.ready()
    return w
  }

  /** Puts a worker (new or spare) in `slot` of the pool. */
  place (w, slot) {
    w.slot = slot
    this.pool[slot] = w
    return w
  }

  async spawn (slot) {
    return this.place(await this.prepare(), slot)
  }

  /**
   * Starts workers until SPARES are ready or on their way, in the
   * background: a worker terminated in a round is replaced by a spare at
   * once, instead of the survivors hammering on their own for as long as a
   * thread takes to start (a few hundred ms on a loaded machine, most of
   * this file's CPU time), and the spares of the next round start while
   * this one runs, as the replacements used to.
   */
  topUp () {
    while (this.spares.length + this.coming < SPARES) {
      this.coming++
      this.prepare().then((w) => {
        this.coming--
        this.spares.push(w)
      }, (err) => {
        this.coming--
        this.failed = err
      })
    }
  }

  /** Resolves once a round's worth of spares is ready. */
  async fill () {
    this.topUp()
    await until(() => {
      if (this.failed) throw this.failed
      return this.spares.length >= KILLS
    }, 'the spare workers did not start', 20000)
  }

  start (w) {
    w.loop = w.tw.run((ctx, arg) => ctx.require(ctx.workerData.fixture).hammer(ctx, arg),
      { id: w.id, forms: this.forms(w.slot), permits: PERMITS, name: this.name, lanes: this.lanes(w.slot) })
    w.loop.catch(() => {}) // a terminated worker's loop rejects; survivors are awaited
    return w
  }

  async terminate (w) {
    // Marked first: from now on its marks may be left behind.
    Atomics.store(this.arrays.dying, w.id, 1)
    this.dead.push(w)
    await w.tw.terminate()
  }

  /** What worker `w` is doing now, for a watchdog's message. */
  where (w) {
    const lane = (no) => H.formName(Atomics.load(this.arrays.current, 2 * w.id + no))
    return `worker ${w.id} (thread ${w.threadId}) in ${lane(0)} | ${lane(1)}, ${this.ops(w)} requests`
  }

  ops (w) {
    return Atomics.load(this.arrays.ops, 2 * w.id) + Atomics.load(this.arrays.ops, 2 * w.id + 1)
  }

  violations () {
    return this.everyone.flatMap((w) => w.tw.events.filter((e) => e.violation).map((e) => e.violation))
  }

  /** Fails with every violation reported so far. */
  checkViolations (round) {
    const n = Atomics.load(this.ctl, H.VIOLATIONS)
    const texts = this.violations()
    assert.ok(n === 0 && texts.length === 0,
      `round ${round}: mutual exclusion or a request's outcome went wrong ${n} times:\n  ${texts.slice(0, 10).join('\n  ')}`)
  }

  /** Exclusive holds: the unguarded counter lost no update. */
  checkCount (round) {
    let sum = 0
    for (let i = 1; i <= this.nextId; i++) sum += Atomics.load(this.arrays.done, i)
    const count = Atomics.load(this.ctl, H.COUNT)
    // A worker terminated between its two increments counted once only.
    assert.ok(count >= sum && count <= sum + this.dead.length,
      `round ${round}: ${count} increments of the unguarded counter for ${sum} exclusive holds ` +
      `(${this.dead.length} workers terminated): two holders at once lost updates`)
  }

  tally (stats) {
    for (const [form, outcomes] of Object.entries(stats)) {
      const t = this.stats[form] || (this.stats[form] = {})
      for (const [outcome, n] of Object.entries(outcomes)) t[outcome] = (t[outcome] || 0) + n
    }
  }

  /**
   * One round: the pool hammers; one or two killable workers are
   * terminated at random moments and replaced; every worker makes progress
   * afterwards; then all stop and must settle.
   */
  async round (r, { kills = true, state = () => '' } = {}) {
    Atomics.store(this.ctl, H.STOP, 0)
    this.pool.forEach((w) => this.start(w))
    await sleep(2 + Math.random() * 20)
    const fresh = []
    if (kills) {
      const candidates = this.pool.filter((w) => this.killable(w.slot))
      const victims = []
      const n = Math.random() < 0.7 ? 1 : 2
      for (let i = 0; i < n && candidates.length > 0; i++) victims.push(...candidates.splice(random(candidates.length), 1))
      for (const v of victims) {
        await sleep(Math.random() * 8)
        await this.terminate(v)
        fresh.push(this.place(this.spares.shift(), v.slot))
      }
      this.topUp()
    }
    fresh.forEach((w) => this.start(w))
    const alive = this.pool
    const before = alive.map((w) => this.ops(w))
    try {
      await until(() => alive.every((w, j) => this.ops(w) >= before[j] + 2),
        `round ${r}: a worker made no progress after the terminations`, PROGRESS_MS)
    } catch (err) {
      throw new Error(`${err.message}; ${alive.map((w) => this.where(w)).join('; ')}; ${state()}`)
    }
    Atomics.store(this.ctl, H.STOP, 1)
    const loops = alive.map((w) => w.loop)
    try {
      const stats = await within(Promise.all(loops), SETTLE_MS, `round ${r}: the survivors' requests did not settle`)
      stats.forEach((s) => this.tally(s))
    } catch (err) {
      throw new Error(`${err.message}; ${alive.map((w) => this.where(w)).join('; ')}; ${state()}`)
    }
    this.checkViolations(r)
    this.checkCount(r)
  }

  /** Asserts that every form was granted at least once over the test. */
  checkForms (names) {
    const never = names.filter((f) => !(this.stats[f] && this.stats[f].granted > 0))
    assert.deepStrictEqual(never, [], `forms never granted: ${never.join(', ')}`)
  }

  report (label) {
    if (process.env.THREADLOCK_STRESS_PROGRESS !== '1') return
    const died = Atomics.load(this.ctl, H.OWNER_DIED)
    console.log(`      ${label}: ${this.dead.length} workers terminated, ${died} grants with ownerDied`)
    for (const [form, outcomes] of Object.entries(this.stats).sort()) {
      console.log(`        ${form}: ${Object.entries(outcomes).map(([o, n]) => `${n} ${o}`).join(', ')}`)
    }
  }

  /** The thread ids of the workers terminated so far. */
  deadThreads () {
    return new Set(this.dead.map((w) => w.threadId))
  }

  async run (label, atRest) {
    await Promise.all(Array.from({ length: POOL }, (_, slot) => this.spawn(slot)))
    for (let r = 0; r < ROUNDS; r++) {
      progress(`${label}: round ${r + 1} / ${ROUNDS}, ${this.dead.length} terminated`)
      await this.fill()
      await this.round(r, { state: () => atRest.describe() })
      await atRest.check(r)
    }
    // A last round without terminations: whatever a dead worker left is
    // taken over by the survivors.
    await this.round(ROUNDS, { kills: false, state: () => atRest.describe() })
    await this.solo(() => atRest.describe())
    progressDone()
  }

  /**
   * Each worker of the pool alone for SOLO_OPS requests, one after
   * another: every form that works is granted there, whatever the rounds'
   * contention left it (a try under FIFO, granted only while nobody waits,
   * was granted 0 times in 40 rounds once under wine), so that checkForms
   * fails only for a form that is never granted.
   */
  async solo (state) {
    for (const w of this.pool) {
      Atomics.store(this.ctl, H.STOP, 0)
      this.start(w)
      const before = this.ops(w)
      await until(() => this.ops(w) >= before + SOLO_OPS,
        `alone, worker ${w.id} made no progress; ${this.where(w)}; ${state()}`, PROGRESS_MS)
      Atomics.store(this.ctl, H.STOP, 1)
      this.tally(await within(w.loop, SETTLE_MS, `alone, worker ${w.id}'s requests did not settle; ${state()}`))
      this.checkViolations(`alone, worker ${w.id}`)
    }
  }
}

function formNames (set) {
  const sets = { lock: H.FORMS.lock, rwlock: [...H.FORMS.read, ...H.FORMS.write], write: H.FORMS.write, sem: H.FORMS.sem, named: H.FORMS.named }
  return sets[set].map((f) => f[0])
}

/**
 * The end of an RWLock stress: the main thread takes the write lock (from a
 * dead owner, maybe), the lock is free afterwards, and nothing went wrong.
 */
async function rwEnd (rw, s, show, when, label) {
  const release = await within(rw.acquireWrite(), SETTLE_MS, `the main thread's acquireWrite() ${when}; ${show()}`)
  release()
  assert.strictEqual(rw.readers, 0, show())
  assert.strictEqual(rw.writer, null, show())
  assert.strictEqual(rw.waiting, 0, show())
  s.checkViolations('end')
  s.checkCount('end')
  s.checkForms(formNames('rwlock'))
  s.report(label)
}

describe('termination stress', function () {
  this.timeout(Math.max(120000, 60000 * STRESS_SCALE))
  afterEach(cleanup)

  for (const fifo of [false, true]) {
    const label = fifo ? 'AsyncLock { fifo: true }' : 'AsyncLock (default policy)'
    it(`${label}: ${ROUNDS} rounds of terminating workers amid every request form`, async () => {
      const lock = new AsyncLock(undefined, 0, { fifo })
      // Half the workers make requests from two lanes at once, as two
      // async tasks of one thread would.
      const s = new Stress({ kind: 'AsyncLock', handle: lock.handle, forms: () => 'lock', lanes: (slot) => 1 + (slot % 2) })
      const show = () => `lock: locked ${lock.locked}, owner ${lock.owner}, waiting ${lock.waiting}, ` +
        `word 0x${(Atomics.load(new Int32Array(lock.buffer), 0) >>> 0).toString(16)}`
      await s.run(label, {
        describe: show,
        check: (r) => {
          assert.strictEqual(lock.waiting, 0, `round ${r}: requests still wait with every survivor settled; ${show()}`)
          if (lock.locked) {
            assert.ok(s.deadThreads().has(lock.owner), `round ${r}: held by live thread ${lock.owner} with every survivor settled; ${show()}`)
          }
        }
      })
      // The main thread takes it over too (from a dead owner, maybe).
      const release = await within(lock.acquire(), SETTLE_MS, `the main thread's acquire() on the settled lock; ${show()}`)
      release()
      await until(() => !lock.locked, `the lock stays held after the main thread's release; ${show()}`, 2000)
      assert.strictEqual(lock.locked, false)
      assert.strictEqual(lock.waiting, 0)
      s.checkViolations('end')
      s.checkCount('end')
      s.checkForms(formNames('lock'))
      s.report(label)
    })
  }

  // Writers that die: two workers that read and write are never
  // terminated, two that only write are (the next test terminates readers
  // too).
  it(`RWLock, readers and writers: ${ROUNDS} rounds of terminating writers amid every request form`, async () => {
    const rw = new RWLock()
    const s = new Stress({
      kind: 'RWLock',
      handle: rw.handle,
      forms: (slot) => (slot < 2 ? 'rwlock' : 'write'),
      killable: (slot) => slot >= 2
    })
    const show = () => `rwlock: readers ${rw.readers}, writer ${rw.writer}, waiting ${rw.waiting}, ` +
      `word 0x${(Atomics.load(new Int32Array(rw.buffer), 0) >>> 0).toString(16)}`
    await s.run('RWLock (writers die)', {
      describe: show,
      check: (r) => {
        assert.strictEqual(rw.waiting, 0, `round ${r}: requests still wait with every survivor settled; ${show()}`)
        assert.strictEqual(rw.readers, 0, `round ${r}: read-held with every survivor settled; ${show()}`)
        if (rw.writer !== null) {
          assert.ok(s.deadThreads().has(rw.writer), `round ${r}: write-held by live thread ${rw.writer}; ${show()}`)
        }
      }
    })
    await rwEnd(rw, s, show, 'on the settled lock', 'RWLock (writers die)')
  })

  // Issue 18, item 12: readers are owners too, and a dead reader's read
  // holds are recovered (ownerDied for the next writer). Kept apart from
  // the test above so that a failure names this contract.
  it(`RWLock, readers that die are recovered: ${ROUNDS} rounds of terminating readers and writers`, async () => {
    const rw = new RWLock()
    const s = new Stress({ kind: 'RWLock', handle: rw.handle, forms: () => 'rwlock' })
    const show = () => `rwlock: readers ${rw.readers}, writer ${rw.writer}, waiting ${rw.waiting}, ` +
      `word 0x${(Atomics.load(new Int32Array(rw.buffer), 0) >>> 0).toString(16)}`
    await s.run('RWLock (readers die)', {
      describe: show,
      check: (r) => {
        assert.strictEqual(rw.waiting, 0, `round ${r}: requests still wait with every survivor settled; ${show()}`)
        if (rw.writer !== null) {
          assert.ok(s.deadThreads().has(rw.writer), `round ${r}: write-held by live thread ${rw.writer}; ${show()}`)
        }
      }
    })
    await rwEnd(rw, s, show, 'after dead readers', 'RWLock (readers die)')
  })

  // Permits have no owner, so a worker that dies holding some takes them
  // along: after each round the value must be the initial count less what
  // the dead held (a worker killed between a request and its bookkeeping
  // may have held its request's permits or not), and the test then gives
  // the lost permits back.
  it(`Semaphore, requests of 1 to 3 of ${PERMITS} permits: ${ROUNDS} rounds of terminating workers amid every request form`, async () => {
    const sem = new Semaphore(PERMITS)
    const s = new Stress({ kind: 'Semaphore', handle: sem.handle, forms: () => 'sem' })
    const show = () => `semaphore: value ${sem.value}, waiting ${sem.waiting}`
    let accounted = 0 // dead workers already settled
    await s.run('Semaphore', {
      describe: show,
      check: (r) => {
        assert.strictEqual(sem.waiting, 0, `round ${r}: requests still wait with every survivor settled; ${show()}`)
        let sure = 0
        const maybe = []
        for (const w of s.dead.slice(accounted)) {
          const st = H.semState(Atomics.load(s.arrays.held, w.id))
          sure += st.held
          if (st.maybeTaken) maybe.push(st.maybeTaken)
          if (st.maybeKept) maybe.push(st.maybeKept)
        }
        // The values the dead may have taken along: `sure` plus any subset
        // of the `maybe` amounts.
        let possible = new Set([PERMITS - sure])
        for (const m of maybe) possible = new Set([...possible, ...[...possible].map((v) => v - m)])
        const value = sem.value
        assert.ok(possible.has(value),
          `round ${r}: ${value} permits left; with ${sure} surely and [${maybe}] possibly held by the dead, ` +
          `expected one of ${[...possible].sort((a, b) => a - b)}; ${show()}`)
        for (const w of s.dead.slice(accounted)) Atomics.store(s.arrays.held, w.id, 0)
        accounted = s.dead.length
        if (value < PERMITS) sem.release(PERMITS - value)
        // Every permit is back and nobody holds one: the shares that dead
        // workers left in the hammer's count of permits in use go too.
        Atomics.store(s.ctl, H.IN_USE, 0)
      }
    })
    assert.strictEqual(sem.waiting, 0, show())
    assert.strictEqual(sem.value, PERMITS, show())
    s.checkViolations('end')
    s.checkForms(formNames('sem'))
    s.report('Semaphore')
  })

  it(`named locks, exclusive and shared: ${ROUNDS} rounds of terminating workers amid every request form`, async () => {
    const name = `termination-stress-${process.pid}`
    const s = new Stress({ kind: 'named', forms: () => 'named', name, lanes: (slot) => 1 + (slot % 2) })
    const ours = (q) => ({
      held: q.held.filter((l) => l.name === name),
      pending: q.pending.filter((l) => l.name === name)
    })
    let last = ''
    const show = () => `locks.query(): ${last}`
    const settledQuery = async (what) => {
      // A dead thread's named locks are released as it ends; a moment is
      // allowed for that, a lock left for good fails.
      await until(async () => {
        const q = ours(await locks.query())
        last = JSON.stringify(q)
        return q.held.length === 0 && q.pending.length === 0
      }, `${what}: named lock "${name}" still held or pending`, 2000)
    }
    await s.run('named locks', { describe: show, check: (r) => settledQuery(`round ${r}`) })
    await settledQuery('at the end')
    const got = await within(locks.request(name, { mode: 'exclusive' }, (lock) => lock !== null), SETTLE_MS,
      `the main thread's request for "${name}"`)
    assert.strictEqual(got, true)
    await settledQuery('after the main thread\'s request')
    s.checkViolations('end')
    s.checkCount('end')
    s.checkForms(formNames('named'))
    s.report('named locks')
  })
})
