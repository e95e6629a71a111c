// Types of the ES module entry point (index.mjs): the same named exports as
// the CommonJS entry point, and the whole module as the default export.

export * from './index.js'
import * as threadlock from './index.js'
export default threadlock
