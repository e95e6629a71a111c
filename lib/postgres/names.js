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

const CACHE_LIMIT = 10000

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
      await client.query('COMMIT')
      this.oid = found.oid
      return found.version
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
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

  /**
   * Resolves with the next fencing token of `key`. The caller holds the
   * lock, so the update cannot interleave with another holder's, and it
   * commits (durably, with the server's synchronous_commit) before the
   * token is handed out.
   */
  async fence (client, key) {
    const { rows } = await client.query(
      `UPDATE ${this.table} SET fence = fence + 1 WHERE key = $1 RETURNING fence`, [key])
    if (rows.length === 0) throw new Error(`the row of lock key ${key} is missing from ${this.table}`)
    return BigInt(rows[0].fence)
  }

  /** Forgets cached keys, for when the table may have been recreated. */
  reset () {
    this.keys.clear()
    this.ready = null
    this.oid = null
  }

  /**
   * The statements that take the lock of a key, by mode: they take it only
   * if the key's row is in the table this manager prepared (its OID), so
   * that a key of a table dropped and created again (where it may belong
   * to another name) is never locked; they return no row then.
   */
  lockStatements (mode) {
    const fn = mode === 'shared' ? 'pg_advisory_lock_shared' : 'pg_advisory_lock'
    const from = `FROM ${this.table} t WHERE t.key = $2 AND t.tableoid = $3::oid`
    return {
      lock: `SELECT ${fn}($1::int4, t.key) ${from}`,
      try: `SELECT pg_try_${fn.slice(3)}($1::int4, t.key) AS ok ${from}`
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
