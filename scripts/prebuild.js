'use strict'

// `npm run prebuild`, and `npm pack` / `npm publish` through the prepack
// hook: compile the addon for this machine with prebuildify into
// prebuilds/<platform>-<arch>/threadlock.<libc>.node, then check that the
// file loads, so that a package never ships a binary that does not. Node's
// headers are taken from the running node's installation when it has them
// (as scripts/install.js does), so this works offline.

const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')

function run (args, env) {
  const r = spawnSync(process.execPath, args, { cwd: root, env, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error(`threadlock: prebuild failed: node ${args.join(' ')}`)
    process.exit(r.status || 1)
  }
}

const env = { ...process.env }
const prefix = path.join(path.dirname(process.execPath), '..')
if (!env.npm_config_nodedir && fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) {
  env.npm_config_nodedir = prefix
}

run([require.resolve('prebuildify/bin.js'), '--napi', '--strip', '--tag-libc'], env)

// The file prebuildify just wrote (the newest one: prebuilds/ may also hold
// binaries gathered from other machines) must load here and answer.
const dir = path.join(root, 'prebuilds', `${os.platform()}-${os.arch()}`)
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
