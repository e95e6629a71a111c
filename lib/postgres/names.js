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
  }

  /**
   * Creates the table if it is missing, once per manager, and resolves with
   * the server's version number (server_version_num).
   */
  ensure (client) {
    if (this.ready === null) {
      this.ready = this.#create(client)
      // A failure (server down) is retried by the next request.
      this.ready.catch(() => { this.ready = null })
    }
    return this.ready
  }

  async #create (client) {
    const { rows } = await client.query(
      "SELECT to_regclass($1) IS NOT NULL AS present, current_setting('server_version_num')::int AS version",
      [this.regclass])
    if (!rows[0].present) {
      // Two clients creating the table at once would collide in the
      // catalog: creation is serialized by the advisory lock (namespace, 0),
      // which no name uses. Both statements run in one implicit transaction,
      // which ends the transaction-level lock.
      await client.query(`SELECT pg_advisory_xact_lock(${this.namespace}, 0);
        CREATE TABLE IF NOT EXISTS ${this.table} (
          key integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          digest bytea NOT NULL UNIQUE,
          name text NOT NULL,
          fence bigint NOT NULL DEFAULT 0
        )`)
    }
    return rows[0].version
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
