'use strict'

// `npm run prebuild`, and `npm pack` / `npm publish` through the prepack
// hook: compile the addon for this machine with prebuildify into
// prebuilds/<platform>-<arch>/threadlock.<libc>.node, then check that the
// file loads, so that a package never ships a binary that does not. Node's
// headers are taken from the running node's installation when it has them
// (as scripts/install.js does).
//
// On Linux x64 it then cross-builds prebuilds/win32-x64/threadlock.node and
// prebuilds/linux-arm64/threadlock.glibc.node (scripts/cross.js) and loads
// each in the real Node of its platform, under wine and under qemu; this
// needs the Debian packages that scripts/cross.js names and fetches those
// two Node binaries from the npm registry once. THREADLOCK_PREBUILD_TARGETS
// (comma-separated, e.g. "linux-x64") limits the prebuilds to those named.

const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const host = `${os.platform()}-${os.arch()}`
const targets = process.env.THREADLOCK_PREBUILD_TARGETS
  ? process.env.THREADLOCK_PREBUILD_TARGETS.split(',').map((t) => t.trim()).filter(Boolean)
  : host === 'linux-x64' ? ['linux-x64', 'win32-x64', 'linux-arm64'] : [host]

function run (args, env) {
  const r = spawnSync(process.execPath, args, { cwd: root, env, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error(`threadlock: prebuild failed: node ${args.join(' ')}`)
    process.exit(r.status || 1)
  }
}

// This machine's prebuild, made by prebuildify with node-gyp.
function prebuildHost () {
  const env = { ...process.env }
  const prefix = path.join(path.dirname(process.execPath), '..')
  if (!env.npm_config_nodedir && fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) {
    env.npm_config_nodedir = prefix
  }

  run([require.resolve('prebuildify/bin.js'), '--napi', '--strip', '--tag-libc'], env)

  // The file prebuildify just wrote (the newest one: prebuilds/ may also hold
  // binaries gathered from other machines) must load here and answer.
  const dir = path.join(root, 'prebuilds', host)
  const made = fs.readdirSync(dir)
    .filter((f) => f.endsWith('.node'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0]
  run(['-e', `
    const binding = require(${JSON.stringify(made)})
    if (typeof binding.register !== 'function') throw new Error('not the threadlock addon')
  `], process.env)

  // prebuildify moved the binary out of build/Release/; a copy goes back, so
  // that the checkout goes on loading the binary of its own sources from there.
  fs.mkdirSync(path.join(root, 'build', 'Release'), { recursive: true })
  fs.copyFileSync(made, path.join(root, 'build', 'Release', 'threadlock.node'))
  console.log(`threadlock: prebuilt ${path.relative(root, made)}`)
}

// The other platforms' prebuilds, each checked in its own Node.
function crossBuilds () {
  const cross = require('./cross')
  for (const tuple of targets.filter((t) => t !== host)) {
    if (!cross.TARGETS[tuple] || host !== 'linux-x64') {
      console.error(`threadlock: prebuild failed: ${tuple} is not built on ${host} ` +
        `(cross-builds run on linux-x64 for ${Object.keys(cross.TARGETS).join(', ')})`)
      process.exit(1)
    }
    const file = path.join(root, 'prebuilds', tuple, cross.TARGETS[tuple].prebuild)
    try {
      cross.build(tuple, file)
      const where = cross.check(tuple, file)
      console.log(`threadlock: prebuilt ${path.relative(root, file)}, loads in ${where}`)
    } catch (err) {
      if (!err.cross) throw err
      console.error(`threadlock: prebuild failed: ${err.message}\n` +
        'THREADLOCK_PREBUILD_TARGETS=linux-x64 packs only this machine\'s prebuild.')
      process.exit(1)
    }
  }
}

if (targets.includes(host)) prebuildHost()
crossBuilds()
