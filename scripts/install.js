'use strict'

// npm install hook: use a prebuilt binary from prebuilds/ when one matches
// this platform and loads; otherwise build from source with node-gyp. When
// Node's headers sit next to the running node (distribution packages and
// the official tarballs both put them in <prefix>/include/node), node-gyp is
// pointed at them so that the build works offline.

const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')

function prebuildLoads () {
  const probe = spawnSync(process.execPath, ['-e',
    `require('node-gyp-build')(${JSON.stringify(root)})`], { cwd: root, stdio: 'ignore' })
  return probe.status === 0 && fs.existsSync(path.join(root, 'prebuilds'))
}

function nodeGyp () {
  if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp
  const bundled = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules',
    'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
  if (fs.existsSync(bundled)) return bundled
  return require.resolve('node-gyp/bin/node-gyp.js')
}

function build () {
  const args = [nodeGyp(), 'rebuild']
  const prefix = path.join(path.dirname(process.execPath), '..')
  if (!process.env.npm_config_nodedir &&
      fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) {
    args.push(`--nodedir=${prefix}`)
  }
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error('threadlock: building the native addon failed (see above)')
    process.exit(r.status || 1)
  }
}

if (process.env.THREADLOCK_FORCE_BUILD || !prebuildLoads()) build()
