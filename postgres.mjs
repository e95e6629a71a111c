// The ES module entry point of threadlock/postgres: it re-exports the
// CommonJS module, so that `import` and `require` share one instance.

export * from './postgres.js'
export { default } from './postgres.js'
