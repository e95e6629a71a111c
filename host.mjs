// The ES module entry point of threadlock/host: it re-exports the CommonJS
// module, so that `import` and `require` share one instance.

export * from './host.js'
export { default } from './host.js'
