'use strict'

// Loads the compiled addon once per thread and registers this thread as a
// live lock owner, so that a lock it still holds when it dies is recovered.

const path = require('path')
const { threadId } = require('worker_threads')

function load () {
  const root = path.join(__dirname, '..')
  try {
    return require('node-gyp-build')(root)
  } catch (err) {
    if (err && err.code !== 'MODULE_NOT_FOUND') throw err
    return require(path.join(root, 'build', 'Release', 'threadlock.node'))
  }
}

const binding = load()

// Lock words store the owner's thread id plus one, so that 0 means free.
const selfId = threadId + 1
binding.register(selfId)

module.exports = { binding, selfId }
