'use strict'

// The entry point of threadlock/host (see lib/host/index.js): named locks
// shared by the processes of one host.

module.exports = require('./lib/host')
