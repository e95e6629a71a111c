'use strict'

// The statements of PostgreSQL's two-key advisory locks, by mode: a lock of
// the manager is (namespace, key), see names.js. The session-level forms are
// used, so a lock outlives transactions and ends with its session.

const SQL = {
  exclusive: {
    lock: 'SELECT pg_advisory_lock($1::int4, $2::int4)',
    try: 'SELECT pg_try_advisory_lock($1::int4, $2::int4) AS ok',
    unlock: 'SELECT pg_advisory_unlock($1::int4, $2::int4) AS ok'
  },
  shared: {
    lock: 'SELECT pg_advisory_lock_shared($1::int4, $2::int4)',
    try: 'SELECT pg_try_advisory_lock_shared($1::int4, $2::int4) AS ok',
    unlock: 'SELECT pg_advisory_unlock_shared($1::int4, $2::int4) AS ok'
  }
}

module.exports = { SQL }
