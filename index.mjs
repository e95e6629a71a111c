// The ES module entry point. It re-exports the CommonJS module, so that
// `import` and `require` share one instance of the module, of its native
// addon and of its per-thread state. Node finds the named exports by reading
// index.js (`module.exports = { ... }`); test/loader.test.js checks that
// every export of index.js is reachable by name from here.

export * from './index.js'
export { default } from './index.js'
