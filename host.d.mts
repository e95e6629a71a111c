// Types of the ES module entry point of threadlock/host (host.mjs): the
// same named exports as host.js, and the whole module as default.

export * from './host.js'
import * as host from './host.js'
export default host
