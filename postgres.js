'use strict'

// The entry point of threadlock/postgres (see lib/postgres/index.js). It
// loads neither the addon nor anything of the core package.

module.exports = require('./lib/postgres')
