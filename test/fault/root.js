'use strict'

// The package copy that test/fault/run.sh built with TL_FAULT_INJECTION,
// and its binding with the fault controls. Loading it any other way is an
// error, not a skip: these tests must never pass by not running.

const path = require('path')

const root = process.env.THREADLOCK_FAULT_ROOT
if (!root) {
  throw new Error('test/fault: run through test/fault/run.sh, which builds the addon with TL_FAULT_INJECTION')
}
const { binding } = require(path.join(root, 'lib', 'native'))
if (typeof binding.faultArm !== 'function') {
  throw new Error(`test/fault: the addon in ${root} was built without TL_FAULT_INJECTION`)
}

module.exports = { root, binding }
