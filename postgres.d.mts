// Types of the ES module entry point of threadlock/postgres (postgres.mjs):
// the same named exports as postgres.js, and the whole module as default.

export * from './postgres.js'
import * as postgres from './postgres.js'
export default postgres
