'use strict'

// RWLock on memory shared by processes (threadlock/host's
// openSharedMemory). `new RWLock(buffer, byteOffset)` and
// `RWLock.from(handle)` return one of these when the word lies in such
// memory (chosen once, at construction: the in-process RWLock keeps its own
// code). It is an RWLock (instanceof, the same methods) with its own
// protocol, on the file's waiter list (src/host/shm_wait.c), its owner ids
// (src/host/shm_owners.c) and its read-hold records (src/host/shm_rw.c).
//
// The word: bits 0..27 the writer's owner id (a writer that holds the lock,
// or one that waits for the readers to leave; or the id of a request,
// writer or reader, that a release handed the lock to; 0: none), bit 28
// HANDED (the id is such a grantee's, which has not taken it up yet), bit
// 29 WAITERS
// (somebody may sleep on the word), bit 30 DIED (a holder died since a
// writer last released), bit 31 DRAINING (set by a writer that waits for
// the readers to leave, before each look at them; cleared by a reader that
// leaves, so that the writer's sleep on the old value ends). The readers are not in the word: each thread's read
// locks on it are a record of the file (shm_rw.c), so that they belong to
// their thread across processes and a dead thread's are found.
//
// A reader (shmReadEnter): counts itself in its record, then reads the
// word; with a live writer's id there it backs off (and wakes that writer:
// shm_rw.c, R2), sets WAITERS and sleeps on the word until the writer
// releases. A dead writer's id is cleared with DIED (the readers take the
// lock over and are told). While no writer's id is in the word, this file
// does the same steps itself on the header (#enterFast: the count of
// records in use up, a free record claimed, its offset and count written,
// then the word read; releaseRead and #drop: back in the order of
// shm_rw.c's drop),
// with no native call; anything else (a writer there, no free record, a
// record of this thread that this file did not make) is the core's.
// A writer: first puts its id into the word (one compare-exchange from no
// writer, or from a dead writer's id with DIED; barging, as lib/ShmLock.js;
// a live writer there: WAITERS, sleep); from then on no new reader enters.
// Then it reads the count of records in use in the file's header page
// (src/host/shm_rw.c, R4): 0, and the lock is its, with no native call;
// otherwise it reads the records (shmReadHolds): while live readers hold, it
// sleeps on the word as it was before that read; dead readers' records are
// emptied and set DIED. The lock is its once none are left.
// Releasing the write lock: without WAITERS, a compare-exchange to 0; with
// it, the core's release (src/host/shm_wait.c, tl_shm_lock_release in its
// RWLock mode, steps H1-H3 of lib/ShmLock.js): the oldest request asleep,
// writer or reader, whose request has waited 1 ms and that can take the
// word up at once (a blocking one, or a promise one that is present) is
// handed it (HANDED | WAITERS | its id; every sleeper's node carries its
// request's ticket); otherwise the word goes to 0 and every sleeper is
// woken: readers all go in, writers compete. A writer that gives up while
// it waits for readers (timeout, abort, a worker's end) takes its id out
// and wakes every sleeper.
//
// The hand-off (as lib/ShmLock.js, L7 and L8): the grantee takes the word
// up in the native wait that finds its node notified. A writer clears
// HANDED (a compare-exchange from the handed value) and then waits for
// readers as any writer (none can have entered: the word named a writer
// all along); a reader (node kind READER) counts its read hold while the
// word holds the handed value, then frees it and wakes every sleeper
// (src/host/shm_rw.c, R5).
// One that leaves without the lock (timeout, abort, its thread's end)
// takes a hand-off it finds up and releases it again (#passOn). A grantee
// that died before it took the word up never held: its id is cleared by
// a reader (shm_rw.c) or taken over by a writer, without DIED. A hand-off
// whose grantee has no node on the word (it left, and the release died
// before it took the word back) is free: a writer takes it (#claim), a
// reader frees it and wakes every sleeper (#prepare).
//
// Invariants:
// - W1 (exclusion). A writer holds only after it found no live read hold
//   while its id was in the word (no record in use at all, R4, or none
//   live of the word); a reader holds only after it found no
//   live writer in the word while its count was in its record; sequential
//   consistency makes one of each pair see the other (shm_rw.c, R1). Only
//   a compare-exchange from no writer or a dead one puts an id in the word,
//   or a hand-off from the holder's own value (the word names a writer
//   throughout, so no reader enters in between); only its writer takes it
//   out, or anyone once it is dead. test/c/shm_rw.c checks it, also across
//   a hand-off and a grantee's death.
// - W2 (no lost wake-up). A sleeper publishes its node while the word
//   holds the value it saw (the list's value check); a writer's release or
//   withdrawal after that sees WAITERS and notifies every sleeper; a
//   reader's leaving clears DRAINING (shm_rw.c, R2) and wakes the
//   writer.
// - W3 (owner death). Waiters watch every other process of the file, the
//   writer's and the readers' among them (a thread blocked on each one's
//   liveness byte; a process that opens the file later pokes it on
//   arrival, so that they watch it too), having read
//   the file's poke counter before they looked: a death pokes them and they
//   look again. A dead writer's id is taken over (DIED); dead readers'
//   records count for nobody and are emptied (DIED).
// - W4 (no CPU while waiting). Sleepers sleep in the kernel (futex) or in
//   their event loop; wakes come from releases, a leaving reader, deaths
//   and thread ends (the helper thread's look once a second for promise
//   waiters, P3 in src/host/shm_wait.c, and a blocking wait's 10 ms
//   slices for the termination probe aside).
//
// A thread's promise write requests keep their order (lib/ShmOrder.js, as
// lib/ShmLock.js): only the oldest competes; a blocking write request while
// some are queued is EDEADLK, a try is false.
//
// - W5 (the bound). A blocking request, or a present promise one, reader
//   or writer, that has waited 1 ms is handed the word by the next writer's
//   release that finds its node WAITING (it is the oldest such, or one
//   older is); its ticket keeps its age across its sleeps.
//
// Not built (as lib/ShmLock.js): the holder's slice and the present watch.
// A writer killed while it waited for readers counts as a holder that died
// (DIED), although it never held: nothing tells the two apart.

const { SharedSlot } = require('./SharedSlot')
const gate = require('./gate')
const native = require('./native')
const shmWait = require('./shmWait')
const { sideOf } = require('./ShmOrder')
const sides = require('./sides')
const { readSyncOptions, readAsyncOptions } = require('./validate')
const { deadlockError, timeoutError, busyError, abortError, notOwnerError, stopTerminated } = require('./errors')

const { RESULT_INTERRUPTED } = native.constants
const {
  LOCK_ID: ID, LOCK_HANDED: HANDED, LOCK_WAITERS: WAITERS, LOCK_DIED: DIED, RW_DRAINING: DRAINING,
  RELEASE_RW, ACCEPTED
} = native.shmConstants || {}
// shmLockRelease: the word was not the value given (read it again).
const STALE = 2

const { compareExchange, load } = Atomics

// shmReadHolds modes (bits): watch the holders' processes; answer -1 when
// this thread holds read locks itself.
const WATCH = 1
const REFUSE_MINE = 2

// The header of each file this thread opened a cross-process RWLock in
// (native.shmHeader), by the data's SharedArrayBuffer: its word READERS
// counts the read-hold records in use (src/host/shm_rw.c, R4), and from
// HOLDS_AT lie the records, four words each: owner, count, the word's
// offset in the data (64 bits, little-endian).
const headers = new WeakMap()
// The records' layout is read as little-endian 64-bit offsets: elsewhere
// the readers leave everything to the core.
const LITTLE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

function headerOf (i32) {
  let h = headers.get(i32.buffer)
  if (h === undefined) {
    h = new Int32Array(native.shmHeader(i32))
    headers.set(i32.buffer, h)
  }
  return h
}

// Numbers the write holds of this thread (for the release functions; the
// hold is the side's, shared by the thread's objects on the word).
let holds = 0

class ShmRWLock extends SharedSlot {
  #i32
  #header // the file's header (READERS, the read-hold records)
  // This thread's side of the word for readers (lib/sides.js, shared by
  // its objects on the word): the record that #enterFast last claimed.
  #reads
  #offLo // the word's offset in the data, low and high 32 bits
  #offHi
  #me
  // This thread's side of the word for writers (lib/ShmOrder.js): its queue
  // of promise write requests, its write hold and its draining requests,
  // shared by its objects on the word.
  #side
  // The value last seen held by another writer.
  #seen = 0
  #releaseWrite = Object.assign((hold) => {
    if (hold === this.#side.hold) this.releaseWrite()
  }, { hold: () => this.#side.hold })
  #writing = () => (load(this.#i32, 0) & (ID | HANDED)) === this.#me
  #compete = (o, where, timeout) => this.#waitWrite(o, where, timeout)

  #releaseRead = () => this.releaseRead()

  constructor (buffer, byteOffset) {
    super({ type: 'RWLock', words: 1, shm: true }, [buffer, byteOffset])
    this.#i32 = new Int32Array(this.buffer, this.byteOffset, 1)
    this.#me = native.shmOwnerId(this.#i32)
    this.#side = sideOf(this.#i32, 'write')
    this.#header = headerOf(this.#i32)
    this.#reads = sides.sideOf(this.#i32, 'shm read', () => ({ rec: -1 }))
    this.#offLo = this.#i32.byteOffset % 2 ** 32
    this.#offHi = Math.floor(this.#i32.byteOffset / 2 ** 32)
  }

  get handle () { return { type: 'RWLock', buffer: this.buffer, byteOffset: this.byteOffset } }

  /** Read locks held now, in every thread of every process. */
  get readers () { return native.shmReadHolds(this.#i32, 0, 0) }

  /**
   * The writer's owner id in the file (unique across processes), or null;
   * also a writer that waits for readers to leave.
   */
  get writer () {
    const id = load(this.#i32, 0) & ID
    return id === 0 ? null : id
  }

  /**
   * Requests (blocking and promise, every process) sleeping on the lock,
   * and this thread's write requests queued behind its oldest.
   */
  get waiting () { return native.waiterCount(this.#i32, 0) + this.#side.local }

  get ownerDied () {
    const v = load(this.#i32, 0)
    const id = v & ID
    // A grantee that died before it took a hand-off up never held.
    if (id !== 0) return (v & DIED) !== 0 || ((v & HANDED) === 0 && !native.shmOwnerAlive(this.#i32, id))
    return (v & DIED) !== 0 && this.readers > 0
  }

  // ---- readers

  // One attempt: whether the lock was taken over from a dead writer, or
  // undefined (a live writer: #seen holds the word), or null (this thread
  // holds read locks and a writer waits for them: EDEADLK).
  #enter () {
    const fast = this.#enterFast()
    if (fast !== undefined) return fast
    const r = native.shmReadEnter(this.#i32, 0)
    if (r === 0) return false
    if (r === 1) return true
    const v = load(this.#i32, 0)
    // The writer is this thread: wait for its release (promise forms).
    if (r === RW_DEADLK && (v & ID) !== this.#me) return null
    this.#seen = v
    return undefined
  }

  // Sets WAITERS on the value #seen and has this process watch its writer's
  // death (W3). Returns the value to sleep on, or undefined when the word
  // changed meanwhile or its writer is gone (try again).
  #prepare () {
    const v = this.#seen
    const id = v & ID
    if (id === 0) return undefined
    // L7 (lib/ShmLock.js): a hand-off whose grantee has no node on the word
    // (it left, and the release that wrote it died before it took it back)
    // is free: freed, and every sleeper woken, as a writer's release does.
    if ((v & HANDED) !== 0 && id !== this.#me && !native.shmHasNode(this.#i32, 0, id)) {
      if (compareExchange(this.#i32, 0, v, v & ~(ID | HANDED | WAITERS)) === v && (v & WAITERS) !== 0) {
        native.notify(this.#i32, 0, Infinity)
      }
      return undefined
    }
    const w = v | WAITERS
    if (v !== w && compareExchange(this.#i32, 0, v, w) !== v) return undefined
    native.shmWatch(this.#i32)
    // The writer's liveness again, now that its watcher is started: a
    // death before this look is seen here, one after it pokes.
    if (id !== this.#me && !native.shmOwnerAlive(this.#i32, id)) return undefined
    return w
  }

  // The record `rec` if it is this thread's for this word with read locks
  // in it: the index of its first word in #header, else -1.
  #mine (rec) {
    if (rec < 0) return -1
    const h = this.#header
    const at = (HOLDS_AT >> 2) + 4 * rec
    return load(h, at) === this.#me && load(h, at + 1) > 0 &&
      load(h, at + 2) === (this.#offLo | 0) && load(h, at + 3) === this.#offHi
      ? at
      : -1
  }

  // shm_rw.c's tl_shm_read_enter while the word has no writer, in
  // JavaScript: whether DIED is set (the read lock is this thread's), or
  // undefined (nothing changed: ask the core). The word is loaded first, so
  // that a file cut short enough to lose the header faults there, as any
  // access to the word would.
  #enterFast () {
    if (!LITTLE) return undefined
    const v = load(this.#i32, 0)
    if ((v & ID) !== 0) return undefined
    const h = this.#header
    let at = this.#mine(this.#reads.rec)
    if (at >= 0) {
      // More read locks in this thread's record, counted after the word was
      // seen free (as the core: the writer sees the record held anyway).
      Atomics.store(h, at + 1, load(h, at + 1) + 1)
      return (v & DIED) !== 0
    }
    // A new record: counted in READERS first (R4), claimed, its offset and
    // then its count written, and only then the word read again (R1).
    Atomics.add(h, READERS, 1)
    const first = HOLDS_AT >> 2
    let rec = -1
    for (let r = 0; r < HOLDS && rec < 0; r++) {
      if (load(h, first + 4 * r) === 0 && compareExchange(h, first + 4 * r, 0, this.#me) === 0) rec = r
    }
    if (rec < 0) {
      Atomics.sub(h, READERS, 1) // none free: the core empties dead ones
      return undefined
    }
    at = first + 4 * rec
    Atomics.store(h, at + 2, this.#offLo | 0)
    Atomics.store(h, at + 3, this.#offHi)
    Atomics.store(h, at + 1, 1)
    const w = load(this.#i32, 0)
    if ((w & ID) === 0) {
      this.#reads.rec = rec
      return (w & DIED) !== 0
    }
    // A writer came in between: back off as the core does, and let it
    // decide (it sleeps this request, or takes a dead writer over).
    this.#drop(at)
    return undefined
  }

  // Gives back the record at `at` (its last read lock) in the order of
  // shm_rw.c's drop: count, owner, READERS; then the writer that waits for
  // the readers, if one does, reads the records again (R2).
  #drop (at) {
    const h = this.#header
    Atomics.store(h, at + 1, 0)
    Atomics.store(h, at, 0)
    Atomics.sub(h, READERS, 1)
    if ((load(this.#i32, 0) & DRAINING) !== 0) native.shmWakeWriter(this.#i32, 0)
  }

  tryAcquireRead () {
    if (this.#enterFast() !== undefined) return true
    const r = native.shmReadEnter(this.#i32, 0)
    return r === 0 || r === 1
  }

  acquireReadSync (options) {
    const where = 'RWLock.acquireReadSync'
    if (options === undefined) {
      const died = this.#enterFast()
      if (died !== undefined) return died
    }
    const timeout = readSyncOptions(options, where)
    return this.#untilSync(() => {
      const died = this.#enter()
      if (died === null) throw deadlockError(where, 'this thread holds a read lock and a writer waits for it, so a further read lock would never be granted')
      if (died === undefined && (this.#seen & ID) === this.#me) throw deadlockError(where, 'this thread holds the write lock, so a blocking read would never return')
      return died
    }, where, timeout, gate.deadlineOf(timeout), ShmRWLock.#request(false))
  }

  releaseRead () {
    load(this.#i32, 0) // the word first (see #enterFast)
    const at = this.#mine(this.#reads.rec)
    if (at >= 0) {
      const c = load(this.#header, at + 1)
      if (c > 1) Atomics.store(this.#header, at + 1, c - 1)
      else this.#drop(at)
      return
    }
    if (native.shmReadLeave(this.#i32, 0) === RW_NOTOWNER) {
      throw notOwnerError('RWLock.releaseRead', 'this thread holds no read lock on it (read locks belong to their thread, in every process)')
    }
  }

  acquireRead (options) {
    return gate.rejecting(() => this.#acquireRead(options, 'RWLock.acquireRead'))
  }

  #acquireRead (options, where) {
    const o = readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
    const died = this.#enter()
    if (died === null) return Promise.reject(deadlockError(where, 'this thread holds a read lock and a writer waits for it, so a further read lock would never be granted'))
    if (died !== undefined) return Promise.resolve(gate.makeRelease(this.#releaseRead, died))
    if (!o.blocking) return Promise.reject(busyError(where))
    if (o.timeout === 0) return Promise.reject(timeoutError(0, where))
    return this.#waitRead(o, where)
  }

  async #waitRead (o, where) {
    const died = await this.#until(() => {
      const died = this.#enter()
      if (died === null) throw deadlockError(where, 'this thread holds a read lock and a writer waits for it, so a further read lock would never be granted')
      return died
    }, o, where, gate.deadlineOf(o.timeout), ShmRWLock.#request(false))
    return gate.makeRelease(this.#releaseRead, died)
  }

  // The sleeps of both sides, blocking and promise forms: `attempt()` is
  // tried until it returns something other than undefined (undefined: a
  // live writer holds the word, #seen), which is returned; between tries
  // the thread sleeps on the word (#prepare), until the deadline.
  //
  // `req` (#request(): its ticket, drawn at its first sleep and kept, so
  // that its nodes tell its age; whether it has slept, and come back from
  // its event loop) is the request's. Both sides sleep as hand-off waiters
  // of the lock (lib/ShmLock.js): a writer's release may hand the word
  // (HANDED | WAITERS | its id) to the oldest request, reader or writer,
  // that has waited 1 ms and can take it up at once (a blocking wait, or a
  // promise one that is present); the native wait takes it up (L8) and
  // answers ACCEPTED, and #tookUp ends the request. One that leaves without
  // the word (timeout, abort, its thread's end) passes on a hand-off it
  // finds.
  #untilSync (attempt, where, timeout, deadline, req) {
    for (;;) {
      const pokes = native.shmPokes(this.#i32)
      const got = attempt()
      if (got !== undefined) return got
      const left = gate.remaining(deadline)
      if (left === 0) {
        if (req.slept) this.#passOn()
        throw timeoutError(timeout, where)
      }
      const w = this.#prepare()
      if (w === undefined) continue
      const ticket = req.ticket || (req.ticket = native.shmTicket(this.#i32))
      const r = native.shmWaitLock(this.#i32, 0, w, left, pokes, ticket, !req.writer)
      req.slept = true
      if (r === ACCEPTED) return this.#tookUp(req)
      if (r === RESULT_INTERRUPTED) {
        this.#passOn()
        stopTerminated(where)
      }
    }
  }

  async #until (attempt, o, where, deadline, req) {
    for (;;) {
      const pokes = native.shmPokes(this.#i32)
      const got = attempt()
      if (got !== undefined) return got
      const left = gate.remaining(deadline)
      if (left === 0) {
        if (req.slept) this.#passOn()
        throw timeoutError(o.timeout, where)
      }
      const w = this.#prepare()
      if (w === undefined) continue
      const ticket = req.ticket || (req.ticket = native.shmTicket(this.#i32))
      let r
      try {
        r = shmWait.waitAsync(this.#i32, 0, w, { timeout: left, ref: o.ref, signal: o.signal, pokes, ticket, present: req.woke, reader: !req.writer })
        if (typeof r !== 'number') {
          r = await r
          req.woke = true
        }
      } catch (err) {
        this.#passOn() // an abort
        throw err
      }
      req.slept = true
      if (r === 'accepted' || r === ACCEPTED) return this.#tookUp(req)
      if (r === 'timed-out') {
        this.#passOn()
        throw timeoutError(o.timeout, where)
      }
    }
  }

  // A request, for its sleeps (#untilSync, #until).
  static #request (writer) { return { writer, ticket: 0, slept: false, woke: false } }

  // What the request `req` that was handed the word and took it up (L8)
  // got: a writer's claim is made (true: its id is in the word); a reader
  // holds a read lock, counted by the take-up, which then freed the word
  // and let the other readers in (shm_rw.c, R5): whether DIED is set.
  #tookUp (req) {
    return req.writer || (load(this.#i32, 0) & DIED) !== 0
  }

  // A request that leaves without the word takes up a hand-off it finds and
  // releases it again (to the next request, or freed with every sleeper
  // woken), as lib/ShmLock.js's #passOn.
  #passOn () {
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & (ID | HANDED)) !== (this.#me | HANDED)) return
      const mine = v & ~HANDED
      if (compareExchange(this.#i32, 0, v, mine) !== v) continue
      this.#release(mine)
      return
    }
  }

  // The release of the word `v` that this thread's id holds: a free with
  // one compare-exchange while nobody sleeps on it; otherwise the core's
  // (shm_wait.c, tl_shm_lock_release in the RWLock's mode): a hand-off to
  // the oldest writer that has waited 1 ms and can take it up, or a free
  // with every sleeper woken.
  #release (v) {
    for (;;) {
      if ((v & WAITERS) === 0) {
        if (compareExchange(this.#i32, 0, v, 0) === v) return
      } else if (native.shmLockRelease(this.#i32, 0, v, RELEASE_RW) !== STALE) {
        return
      }
      v = load(this.#i32, 0)
    }
  }

  runRead (callback, options) {
    return gate.rejecting(() => gate.runHolding(callback, 'RWLock.runRead', () => this.#acquireRead(options, 'RWLock.runRead')))
  }

  // ---- writers

  // Puts this thread's id into the word: true when it did (a dead writer's
  // id taken over sets DIED), undefined when a live writer is there
  // (#seen), null when that writer is this thread.
  #claim () {
    for (;;) {
      const v = load(this.#i32, 0)
      const id = v & ID
      let next
      if (id === 0) {
        next = (v & (WAITERS | DIED)) | this.#me
      } else if (id === this.#me) {
        if ((v & HANDED) === 0) return null
        next = v & ~HANDED // handed to this request by a release: taken up
      } else if (!native.shmOwnerAlive(this.#i32, id)) {
        // A dead writer's id taken over (DIED); a grantee that died before
        // it took its hand-off up never held.
        next = (v & WAITERS) | this.#me | ((v & HANDED) !== 0 ? 0 : DIED)
      } else if ((v & HANDED) !== 0 && !native.shmHasNode(this.#i32, 0, id)) {
        next = (v & WAITERS) | this.#me // L7 (lib/ShmLock.js): free
      } else {
        this.#seen = v
        return undefined
      }
      if (compareExchange(this.#i32, 0, v, next) === v) return true
    }
  }

  // Takes this thread's id out of the word without having held (a writer
  // that gives up while readers hold), waking every sleeper: the readers it
  // held back may go in.
  #withdraw () {
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & ID) !== this.#me) return
      if (compareExchange(this.#i32, 0, v, v & ~(ID | WAITERS | DRAINING)) === v) {
        if ((v & WAITERS) !== 0) native.notify(this.#i32, 0, Infinity)
        return
      }
    }
  }

  // Sets DRAINING (this thread's id is in the word): the value to sleep on
  // while readers hold (shm_rw.c, R2).
  #mark () {
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & DRAINING) !== 0 || compareExchange(this.#i32, 0, v, v | DRAINING) === v) return v | DRAINING
    }
  }

  // The write lock is this thread's (no reader left): DRAINING goes, and
  // whether a holder died since a writer last released.
  #granted () {
    for (;;) {
      const v = load(this.#i32, 0)
      if ((v & DRAINING) === 0 || compareExchange(this.#i32, 0, v, v & ~DRAINING) === v) break
    }
    this.#side.hold = ++holds
    return (load(this.#i32, 0) & DIED) !== 0
  }

  // With this thread's id in the word: whether no read-hold record of the
  // file is in use, so that no reader holds the lock or enters it without
  // seeing the id (src/host/shm_rw.c, R4); then the write lock is this
  // thread's without a look at the records.
  #noReaders () { return load(this.#header, READERS) === 0 }

  tryAcquireWrite () {
    if (this.#side.waiting) return false // this thread's older requests come first
    if (this.#claim() !== true) return false
    if (this.#noReaders() || native.shmReadHolds(this.#i32, 0, 0) === 0) {
      this.#granted()
      return true
    }
    this.#withdraw()
    return false
  }

  acquireWriteSync (options) {
    const where = 'RWLock.acquireWriteSync'
    // The common case first: no options, the word taken at once and no
    // read-hold record in use anywhere.
    let claimed = false
    if (options === undefined && !this.#side.waiting) {
      claimed = this.#claim() === true
      if (claimed && this.#noReaders()) return this.#granted()
    }
    const timeout = readSyncOptions(options, where)
    if (this.#side.waiting) {
      throw deadlockError(where, 'this thread has write requests queued for the lock, which come first, so a blocking acquireWriteSync() would never return')
    }
    const deadline = gate.deadlineOf(timeout)
    // First the word: this thread's id in it.
    if (!claimed) {
      this.#untilSync(() => {
        const claimed = this.#claim()
        if (claimed === null) throw deadlockError(where, 'this thread holds the write lock, so a blocking acquireWriteSync() would never return')
        return claimed ? true : undefined
      }, where, timeout, deadline, ShmRWLock.#request(true))
    }
    // Then the readers: none left.
    for (;;) {
      const pokes = native.shmPokes(this.#i32)
      const w = this.#mark()
      let n = native.shmReadHolds(this.#i32, 0, WATCH | REFUSE_MINE)
      // A death between the first read and the watch is seen by the second.
      if (n > 0) n = native.shmReadHolds(this.#i32, 0, REFUSE_MINE)
      if (n === 0) return this.#granted()
      if (n < 0) {
        this.#withdraw()
        throw deadlockError(where, 'this thread holds a read lock, so the write lock could never be granted')
      }
      const left = gate.remaining(deadline)
      if (left === 0) {
        this.#withdraw()
        throw timeoutError(timeout, where)
      }
      const r = native.shmWaitLock(this.#i32, 0, w, left, pokes, 0)
      if (r === RESULT_INTERRUPTED) {
        this.#withdraw()
        stopTerminated(where)
      }
    }
  }

  releaseWrite () {
    const v = load(this.#i32, 0)
    if ((v & (ID | HANDED)) !== this.#me || this.#side.draining !== 0) {
      throw notOwnerError('RWLock.releaseWrite', (v & ID) === 0
        ? 'the write lock is not held'
        : 'the write lock is not held by this thread (of this or another process)')
    }
    // Only this thread changes the word now (others add WAITERS, readers
    // leaving clear DRAINING, which is clear while it holds).
    this.#release(v)
    this.#side.released()
  }

  acquireWrite (options) {
    return gate.rejecting(() => this.#acquireWrite(options, 'RWLock.acquireWrite'))
  }

  #acquireWrite (options, where) {
    const o = readAsyncOptions(options, where, true)
    if (o.signal !== undefined && o.signal.aborted) return Promise.reject(abortError(o.signal))
    if (!o.blocking) {
      return this.tryAcquireWrite()
        ? Promise.resolve(gate.makeRelease(this.#releaseWrite, (load(this.#i32, 0) & DIED) !== 0))
        : Promise.reject(busyError(where))
    }
    if (o.timeout === 0 && this.#side.waiting) return Promise.reject(timeoutError(0, where))
    const died = this.#fastWrite()
    if (died !== undefined) return Promise.resolve(gate.makeRelease(this.#releaseWrite, died))
    // Behind this thread's older write requests, or its hold.
    return this.#side.request(o, where, this.#writing, this.#compete)
  }

  // The wait of the first of this thread's write requests (ShmOrder's
  // compete): its options' timeout is what is left, `shown` the request's
  // own (for its error).
  async #waitWrite (o, where, shown) {
    const deadline = gate.deadlineOf(o.timeout)
    await this.#until(() => {
      const claimed = this.#claim()
      if (claimed) return true
      // The writer is this thread (another request of it): wait for it.
      if (claimed === null) this.#seen = load(this.#i32, 0)
      return undefined
    }, { ...o, timeout: shown }, where, deadline, ShmRWLock.#request(true))
    this.#side.draining++
    try {
      for (;;) {
        const pokes = native.shmPokes(this.#i32)
        const w = this.#mark()
        // This thread's own read locks count: it may release them meanwhile.
        let n = native.shmReadHolds(this.#i32, 0, WATCH)
        if (n > 0) n = native.shmReadHolds(this.#i32, 0, 0)
        if (n === 0) break
        const left = gate.remaining(deadline)
        if (left === 0) throw timeoutError(shown, where)
        let r = shmWait.waitAsync(this.#i32, 0, w, { timeout: left, ref: o.ref, signal: o.signal, pokes })
        if (typeof r !== 'number') r = await r
        if (r === 'timed-out') throw timeoutError(shown, where)
      }
    } catch (err) {
      this.#side.draining--
      this.#withdraw()
      throw err
    }
    this.#side.draining--
    return gate.makeRelease(this.#releaseWrite, this.#granted())
  }

  // The promise forms' fast path: granted at once when this thread has no
  // write request queued, the word is free and no read-hold record of the
  // file is in use (the look before the claim only spares a withdrawal: the
  // one after it decides, R4). Whether a holder died, or undefined.
  #fastWrite () {
    if (this.#side.waiting || !this.#noReaders() || this.#claim() !== true) return undefined
    if (this.#noReaders()) return this.#granted()
    this.#withdraw()
    return undefined
  }

  runWrite (callback, options) {
    return gate.rejecting(() => {
      // Taken at once: the callback runs held (gate.runHeld), as the
      // in-process RWLock's runWrite.
      if (options === undefined && typeof callback === 'function' && this.#fastWrite() !== undefined) {
        return gate.runHeld(callback, this.#releaseWrite, this.#side.hold)
      }
      return gate.runHolding(callback, 'RWLock.runWrite', () => this.#acquireWrite(options, 'RWLock.runWrite'))
    })
  }
}

const { RW_DEADLK, RW_NOTOWNER, READERS, HOLDS_AT, HOLDS } = native.shmConstants || {}

module.exports = { ShmRWLock }
