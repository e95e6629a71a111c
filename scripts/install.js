'use strict'

// npm install hook: use a prebuilt binary from prebuilds/ when one matches
// this platform and loads, and there is no build/Release/ binary to keep up
// to date; otherwise build from source with node-gyp. When
// Node's headers sit next to the running node (distribution packages and
// the official tarballs both put them in <prefix>/include/node), node-gyp is
// pointed at them so that the build works offline.

const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')

// The prebuild that node-gyp-build picks for this machine, if it picks one
// from prebuilds/ (not build/Release/, which a checkout rebuilds, since its
// src/ may have changed) and the file loads in a fresh process; otherwise
// null.
function prebuildLoads () {
  const prebuilds = path.join(root, 'prebuilds')
  if (!fs.existsSync(prebuilds)) return null
  const probe = spawnSync(process.execPath, ['-e', `
    const load = require('node-gyp-build')
    load(${JSON.stringify(root)})
    console.log(load.resolve(${JSON.stringify(root)}))
  `], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  const file = probe.status === 0 ? probe.stdout.trim() : ''
  return file.startsWith(prebuilds + path.sep) ? file : null
}

function nodeGyp () {
  if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp
  const bundled = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules',
    'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
  if (fs.existsSync(bundled)) return bundled
  return require.resolve('node-gyp/bin/node-gyp.js')
}

function build (reason) {
  const args = [nodeGyp(), 'rebuild']
  const prefix = path.join(path.dirname(process.execPath), '..')
  if (!process.env.npm_config_nodedir &&
      fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) {
    args.push(`--nodedir=${prefix}`)
  }
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error(`threadlock: compiling the native addon failed (see above). ${reason}, ` +
      'so src/ is compiled with node-gyp, which needs Python 3, make and a C compiler.')
    process.exit(r.status || 1)
  }
}

if (process.env.THREADLOCK_FORCE_BUILD) {
  build('THREADLOCK_FORCE_BUILD is set')
} else {
  const prebuilt = prebuildLoads()
  if (prebuilt) {
    console.log(`threadlock: using ${path.relative(root, prebuilt)}, no compilation needed`)
  } else {
    build(`No prebuilt binary in prebuilds/ loads on ${process.platform}-${process.arch} ` +
      'here, or build/Release/ holds one to keep up to date')
  }
}
