'use strict'

// The name table: it maps every lock name to the key of its advisory lock
// and keeps the name's fencing counter.
//
//   key     integer, assigned once per name from an identity sequence, so two
//           names never share a key; the lock is the two-key advisory lock
//           (namespace, key)
//   digest  the SHA-256 of the stored name, unique: a name of any length can
//           be looked up through an index (a btree cannot index long text)
//   name    the stored name (below), kept to check the digest and for query()
//   fence   the last fencing token given out for the name
//
// PostgreSQL text holds neither NUL nor lone surrogates, which lock names
// may contain. Such a name is stored as '-u' followed by its UTF-16 code
// units in hex: request() refuses names that start with '-', so no name
// stored as-is looks like an escaped one.

const crypto = require('crypto')
const { SessionError, codes } = require('./errors')
const { SQL } = require('./advisory')
const { prepare } = require('./session')

const CACHE_LIMIT = 10000

// How far the durable mark of fencing tokens moves ahead at a time: one
// durable commit per BLOCK grants (see NameTable.coveredToken()).
const BLOCK = 10000n

// The marker (lo, hi) each connection last read, by its pg.Client (see
// NameTable.coveredToken()); a client is one connection for its whole life.
const markers = new WeakMap()

// Whether the marker `client` last read covers the value `v` (a bigint).
function covers (client, v) {
  const marker = markers.get(client)
  return marker !== undefined && v > marker.lo && v <= marker.hi
}

function quoteIdent (qualified) {
  return qualified.split('.').map((part) => `"${part}"`).join('.')
}

function encodeName (name) {
  if (name.isWellFormed() && !name.includes('\0')) return name
  let out = '-u'
  for (let i = 0; i < name.length; i++) out += name.charCodeAt(i).toString(16).padStart(4, '0')
  return out
}

function decodeName (stored) {
  if (!stored.startsWith('-u')) return stored
  let out = ''
  for (let i = 2; i < stored.length; i += 4) out += String.fromCharCode(parseInt(stored.slice(i, i + 4), 16))
  return out
}

class NameTable {
  constructor (table, namespace) {
    this.table = quoteIdent(table)
    this.regclass = this.table
    this.namespace = namespace
    this.keys = new Map()
    this.ready = null
    // The OID of the table that `keys` came from (set by ensure()).
    this.oid = null
    // The table's claim of its namespace, its comment (see #create).
    this.claim = `threadlock/postgres: the lock names of namespace ${namespace}`
    // The fencing tokens' sequence and its unlogged marker (see
    // coveredToken()).
    this.sequence = quoteIdent(`${table}_tokens`)
    this.live = quoteIdent(`${table}_live`)
    // The statements of a grant, by mode (see #statements()), made once,
    // and the one that reads the marker (see coveredToken()).
    this.statements = {
      exclusive: this.#statements('exclusive'),
      shared: this.#statements('shared')
    }
    this.readMarker = prepare(`SELECT lo, hi FROM ${this.live}`)
  }

  /**
   * Creates the table if it is missing and checks that it may serve this
   * namespace, once per manager (again after reset()), and resolves with
   * the server's version number (server_version_num). `queryable` is a
   * client or a pool.
   */
  ensure (queryable) {
    if (this.ready === null) {
      this.ready = this.#prepare(queryable)
      // A failure (server down) is retried by the next request.
      this.ready.catch(() => { this.ready = null })
    }
    return this.ready
  }

  async #prepare (queryable) {
    if (typeof queryable.connect !== 'function' || !('totalCount' in queryable)) return this.#create(queryable)
    const client = await queryable.connect()
    let failed = null
    try {
      return await this.#create(client)
    } catch (err) {
      failed = err
      throw err
    } finally {
      client.release(failed !== null && !(failed instanceof SessionError) ? failed : undefined)
    }
  }

  // Keys are numbered per table, so that two tables serving one namespace
  // would give two names one advisory lock: each table claims its
  // namespace with its comment, and a table whose namespace another table
  // claims is refused. A table is created only while no lock of the
  // namespace is held or awaited: such a lock belongs to a table that was
  // dropped while in use, whose keys the new table would give to other
  // names. Every step runs in one transaction under the advisory lock
  // (namespace, 0), which no name uses, so that two clients preparing at
  // once are serialized.
  async #create (client) {
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock($1::int4, 0)', [this.namespace])
      const look = "SELECT to_regclass($1)::oid AS oid, current_setting('server_version_num')::int AS version"
      let { rows: [found] } = await client.query(look, [this.regclass])
      const { rows: claims } = await client.query(
        `SELECT c.oid, c.oid::regclass::text AS name, d.description, pg_has_role(c.relowner, 'MEMBER') AS owned
           FROM pg_class c LEFT JOIN pg_description d
             ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
          WHERE c.oid = $1::oid OR d.description = $2`, [found.oid, this.claim])
      const other = claims.find((r) => r.oid !== found.oid)
      if (other !== undefined) {
        throw new SessionError(codes.ETABLE, `LockManager.request: namespace ${this.namespace} is served by the name table ${other.name}, and ${this.table} would give its keys to other names: give each name table a namespace of its own (options.namespace)`)
      }
      if (found.oid === null) {
        const { rows: [{ n }] } = await client.query(
          `SELECT count(*)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::int8::oid AND objid <> 0
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, [this.namespace >>> 0])
        if (n > 0) {
          throw new SessionError(codes.ETABLE, `LockManager.request: the name table ${this.table} is missing while ${n} lock(s) of namespace ${this.namespace} are held or awaited: it was dropped while in use, and a new table would give their keys to other names; it is created again once they are released`)
        }
        await client.query(`CREATE TABLE ${this.table} (
            key integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            digest bytea NOT NULL UNIQUE,
            name text NOT NULL,
            fence bigint NOT NULL DEFAULT 0
          )`)
        await client.query(`COMMENT ON TABLE ${this.table} IS '${this.claim}'`)
        found = (await client.query(look, [this.regclass])).rows[0]
      }
      const own = claims.find((r) => r.oid === found.oid)
      const description = own === undefined ? null : own.description
      if (description !== null && description.startsWith('threadlock/postgres: ') && description !== this.claim) {
        throw new SessionError(codes.ETABLE, `LockManager.request: the name table ${this.table} serves another namespace (its comment: '${description}'), not ${this.namespace}: give each name table a namespace of its own`)
      }
      // A table made by an earlier version, or by another role, is claimed
      // by its owner's first manager.
      if (description === null && own !== undefined && own.owned) {
        await client.query(`COMMENT ON TABLE ${this.table} IS '${this.claim}'`)
      }
      await this.#createTokens(client, found.version)
      await client.query('COMMIT')
      this.oid = found.oid
      return found.version
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  }

  // The objects of the fencing tokens (see coveredToken()): the sequence,
  // unlogged from PostgreSQL 15 on (it then writes no WAL), the unlogged
  // marker, and the durable high mark, a row of the name table with an
  // empty digest (no name has one) whose `fence` is the mark. A table made
  // by an earlier version, which kept a counter per name in `fence`,
  // starts the mark above all of them; a new mark row empties the marker.
  async #createTokens (client, version) {
    // Created only when missing, so that a role without CREATE on the
    // schema can use objects an administrator made.
    const { rows: [have] } = await client.query(
      'SELECT to_regclass($1) IS NOT NULL AS sequence, to_regclass($2) IS NOT NULL AS live', [this.sequence, this.live])
    if (!have.sequence) await client.query(`CREATE ${version >= 150000 ? 'UNLOGGED ' : ''}SEQUENCE IF NOT EXISTS ${this.sequence}`)
    if (!have.live) await client.query(`CREATE UNLOGGED TABLE IF NOT EXISTS ${this.live} (lo bigint NOT NULL, hi bigint NOT NULL)`)
    const { rows } = await client.query(
      `INSERT INTO ${this.table} (digest, name, fence)
       SELECT '\\x'::bytea, '', coalesce(max(fence), 0) FROM ${this.table}
       ON CONFLICT (digest) DO NOTHING RETURNING fence`)
    if (rows.length > 0) await client.query(`TRUNCATE ${this.live}`)
  }

  /**
   * The fencing token of a grant whose lock statement took the value `n`
   * (a string, or null) from the sequence, on `client`, which holds the
   * lock, if the marker that client last read covers it; else undefined,
   * and token() finds the token.
   *
   * Tokens come from one sequence per table, taken in the lock statement
   * after the lock is granted (the statement's subquery takes the lock
   * before its outer list calls nextval()), so a grant's token is greater
   * than every token taken before the previous holder released: strictly
   * increasing per name, across every client. A sequence is not durable
   * per value (a crash can take it back), so a value is handed out only
   * below a durable high mark: the unlogged marker (lo, hi) says that
   * values in (lo, hi] are covered. Invariants:
   *   1. the marker's hi is written only in a transaction that writes the
   *      same mark to the name table with synchronous_commit = on, which is
   *      flushed before it is visible; so a visible marker's hi is on disk
   *      and every token handed out is at most the durable mark;
   *   2. a crash empties the unlogged marker (and may take the sequence
   *      back); the next grant finds no marker and sets the sequence to
   *      the durable mark, or to its own value if higher, with lo there:
   *      every later token is above every earlier one;
   *   3. the mark is moved BLOCK ahead at a time, so one durable commit
   *      covers BLOCK grants, and a crash skips at most that many values;
   *   4. without a crash the marker only grows: hi moves up (#extend) and
   *      lo changes only where no marker is visible (#extend after a crash,
   *      #createTokens for a new mark row, whose table is new or lost its
   *      mark);
   *   5. a crash ends every session, so a connection that read the marker
   *      and is still open when it takes a value has seen no crash in
   *      between: by 4 the marker it read still holds, and a value in its
   *      (lo, hi] is safe as if both had been read in one statement. The
   *      marker is therefore read once per connection (cached by client,
   *      which is one connection for its life) and again only when a value
   *      falls outside it, instead of in every lock statement.
   * A value read after the sequence in another statement is judged as
   * safely: if the marker was set up after a crash between the two, its lo
   * is at least the value (the set-up takes the sequence's last value).
   * The slow path runs under the advisory lock (namespace, 0), as table
   * creation does, so two sessions never move the mark at once.
   */
  coveredToken (client, n) {
    if (n === null || !markers.has(client)) return undefined
    const v = BigInt(n)
    return covers(client, v) ? v : undefined
  }

  /** The fencing token of a grant that coveredToken() could not tell. */
  async token (client, n) {
    let v = n === null ? null : BigInt(n)
    for (let pass = 0; ; pass++) {
      const { rows } = await client.query({ name: this.readMarker.name, text: this.readMarker.text })
      if (rows.length === 0) markers.delete(client)
      else markers.set(client, { lo: BigInt(rows[0].lo), hi: BigInt(rows[0].hi) })
      if (v !== null && covers(client, v)) return v
      if (pass === 5) throw new Error(`could not take a fencing token from ${this.sequence}`)
      await this.#extend(client, v === null ? 0n : v)
      const { rows: [row] } = await client.query(`SELECT nextval('${this.sequence.replace(/'/g, "''")}') AS n`)
      v = BigInt(row.n)
    }
  }

  // Moves the durable mark above `n`, or sets the marker up after a crash.
  async #extend (client, n) {
    await client.query('BEGIN')
    try {
      await client.query('SET LOCAL synchronous_commit = on')
      await client.query('SELECT pg_advisory_xact_lock($1::int4, 0)', [this.namespace])
      const { rows: [marker] } = await client.query(`SELECT lo, hi FROM ${this.live}`)
      const { rows: [mark] } = await client.query(`SELECT fence FROM ${this.table} WHERE digest = '\\x'::bytea FOR UPDATE`)
      if (mark === undefined) throw new SessionError(codes.ETABLE, `LockManager.request: the name table ${this.table} has lost its row of fencing tokens`)
      const durable = BigInt(mark.fence)
      if (marker === undefined || n <= BigInt(marker.lo)) {
        const { rows: [{ last }] } = await client.query(`SELECT last_value AS last FROM ${this.sequence}`)
        const base = durable > BigInt(last) ? durable : BigInt(last)
        const hi = base + BLOCK
        await client.query(`SELECT setval('${this.sequence.replace(/'/g, "''")}', $1::int8)`, [String(base)])
        await client.query(`UPDATE ${this.table} SET fence = $1::int8 WHERE digest = '\\x'::bytea`, [String(hi)])
        await client.query(`TRUNCATE ${this.live}`)
        await client.query(`INSERT INTO ${this.live} VALUES ($1::int8, $2::int8)`, [String(base), String(hi)])
      } else if (n > BigInt(marker.hi)) {
        const hi = (n > durable ? n : durable) + BLOCK
        await client.query(`UPDATE ${this.table} SET fence = $1::int8 WHERE digest = '\\x'::bytea`, [String(hi)])
        await client.query(`UPDATE ${this.live} SET hi = $1::int8`, [String(hi)])
      }
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  }

  /** The advisory-lock key of `name` if this manager knows it, else undefined. */
  cachedKey (name) {
    return this.keys.get(name)
  }

  /** Resolves with the advisory-lock key of `name`, adding it if missing. */
  async keyOf (client, name) {
    const cached = this.keys.get(name)
    if (cached !== undefined) return cached
    const stored = encodeName(name)
    const digest = crypto.createHash('sha256').update(stored, 'utf8').digest()
    let key
    // A row inserted by another client while this one looks is seen on the
    // next pass: the INSERT finds the conflict, the SELECT the row.
    for (let pass = 0; key === undefined; pass++) {
      if (pass === 5) throw new Error(`could not add lock name ${JSON.stringify(name)} to ${this.table}`)
      const found = await client.query(`SELECT key, name FROM ${this.table} WHERE digest = $1`, [digest])
      if (found.rows.length > 0) {
        if (found.rows[0].name !== stored) {
          throw new Error(`lock names ${JSON.stringify(name)} and ${JSON.stringify(decodeName(found.rows[0].name))} have the same SHA-256 digest`)
        }
        key = found.rows[0].key
        break
      }
      const added = await client.query(
        `INSERT INTO ${this.table} (digest, name) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING RETURNING key`,
        [digest, stored])
      if (added.rows.length > 0) key = added.rows[0].key
    }
    if (this.keys.size >= CACHE_LIMIT) this.keys.clear()
    this.keys.set(name, key)
    return key
  }

  /** Forgets cached keys, for when the table may have been recreated. */
  reset () {
    this.keys.clear()
    this.ready = null
    this.oid = null
  }

  // The statements of a grant in `mode` (prepared statements, see
  // Session.run): `lock` and `try` take the lock of a key only if the key's
  // row is in the table this manager prepared (its OID), so that a key of
  // a table dropped and created again (where it may belong to another name)
  // is never locked; they return no row then. `unlock` releases it.
  #statements (mode) {
    const fn = mode === 'shared' ? 'pg_advisory_lock_shared' : 'pg_advisory_lock'
    const from = `FROM ${this.table} t WHERE t.key = $2 AND t.tableoid = $3::oid OFFSET 0`
    const seq = this.sequence.replace(/'/g, "''")
    // The subquery takes the lock (OFFSET 0 keeps it a subquery of its
    // own), and only its row makes the outer list run nextval(): the token
    // is taken once the lock is granted. The marker that says whether the
    // value is a safe token is read apart, once per connection
    // (coveredToken()).
    return {
      lock: prepare(`SELECT nextval('${seq}') AS n FROM (SELECT ${fn}($1::int4, t.key) ${from}) g`),
      try: prepare(`SELECT g.ok, CASE WHEN g.ok THEN nextval('${seq}') END AS n
              FROM (SELECT pg_try_${fn.slice(3)}($1::int4, t.key) AS ok ${from}) g`),
      unlock: prepare(SQL[mode].unlock)
    }
  }

  /** The query() rows: every advisory lock of this namespace and database. */
  async locks (queryable, version) {
    const order = version >= 140000 ? 'l.granted DESC, l.waitstart NULLS FIRST, l.pid' : 'l.granted DESC, l.pid'
    const { rows } = await queryable.query(
      `SELECT t.name, l.mode, l.granted, l.pid
         FROM pg_locks l JOIN ${this.table} t ON l.objid = t.key::oid
        WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid = $1::int8::oid
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        ORDER BY ${order}`, [this.namespace >>> 0])
    return rows.map((r) => ({
      name: decodeName(r.name),
      mode: r.mode === 'ShareLock' ? 'shared' : 'exclusive',
      held: r.granted,
      clientId: String(r.pid)
    }))
  }
}

module.exports = { NameTable, encodeName, decodeName }
