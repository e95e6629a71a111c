'use strict'

const { wait, notify, waitAsync, waiterCount } = require('./lib/atomics')

module.exports = { wait, notify, waitAsync, waiterCount }
