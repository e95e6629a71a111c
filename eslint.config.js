'use strict'

// Flat config: @eslint/js recommended rules with Node's globals, mocha's in
// the tests. Generated and third-party files are ignored.

const js = require('@eslint/js')
const globals = require('globals')

module.exports = [
  {
    ignores: ['node_modules/', 'build/', 'prebuilds/', 'test/c/build/', 'coverage/']
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'commonjs',
      globals: { ...globals.node }
    }
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      globals: { ...globals.node }
    }
  },
  {
    files: ['test/**/*.js'],
    languageOptions: {
      globals: { ...globals.mocha }
    }
  }
]
