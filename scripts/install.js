'use strict'

// npm install hook: use a prebuilt binary from prebuilds/ when one matches
// this platform and loads, and there is no build/Release/ binary to keep up
// to date; otherwise build from source with node-gyp. Either way it says
// which: the prebuild it took, or why it compiles; and when compiling fails
// too, the error names the platform, what was tried and what to install.
// When Node's headers sit next to the running node (distribution packages
// and the official tarballs both put them in <prefix>/include/node),
// node-gyp is pointed at them so that the build works offline.

const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const prebuilds = path.join(root, 'prebuilds')
const tuple = `${process.platform}-${process.arch}`

// A path inside the package, with forward slashes on every platform.
function rel (file) {
  return path.relative(root, file).split(path.sep).join('/')
}

// This machine as node-gyp-build sees it: platform, architecture and, on
// Linux, the C library, which picks between glibc and musl prebuilds.
function platformName () {
  if (process.platform !== 'linux') return tuple
  const musl = fs.existsSync('/etc/alpine-release') ||
    !(process.report && process.report.getReport().header.glibcVersionRuntime)
  return `${tuple} (${musl ? 'musl' : 'glibc'})`
}

function shipped () {
  if (!fs.existsSync(prebuilds)) return []
  return fs.readdirSync(prebuilds).filter((dir) =>
    fs.readdirSync(path.join(prebuilds, dir)).some((f) => f.endsWith('.node')))
}

// Asks node-gyp-build, in a fresh process, which prebuild it picks for this
// machine and whether that file loads. Returns { file } for a prebuild that
// loads, otherwise { reason } saying why none is used.
function tryPrebuild () {
  if (fs.existsSync(path.join(root, 'build', 'Release'))) {
    return { reason: 'build/Release/ exists (a checkout or an earlier build), so it is rebuilt from src/' }
  }
  const have = shipped()
  if (have.length === 0) return { reason: 'this package has no prebuilds/' }
  const probe = spawnSync(process.execPath, ['-e', `
    const load = require('node-gyp-build')
    let file
    try { file = load.resolve(${JSON.stringify(root)}) } catch (err) {
      console.log(JSON.stringify({})); process.exit(0)
    }
    try { require(file); console.log(JSON.stringify({ file })) } catch (err) {
      console.log(JSON.stringify({ file, error: String(err && err.message).split('\\n')[0] }))
    }
  `], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  let answer = null
  try {
    answer = JSON.parse(probe.stdout.trim().split('\n').pop())
  } catch {
    // No answer: the probe itself failed, said below.
  }
  if (!answer) {
    return { reason: `checking the prebuilds failed: ${(probe.stderr || '').trim().split('\n')[0] || `exit status ${probe.status}`}` }
  }
  if (!answer.file || !answer.file.startsWith(prebuilds + path.sep)) {
    return { reason: `no prebuild matches ${platformName()}; this package has prebuilds for ${have.join(', ')}` }
  }
  if (answer.error) return { reason: `${rel(answer.file)} does not load here: ${answer.error}` }
  return { file: answer.file }
}

// What to install for a build from source, per platform.
function toolsHint () {
  switch (process.platform) {
    case 'darwin':
      return 'the Xcode command-line tools (`xcode-select --install`: clang and make) and Python 3'
    case 'win32':
      return 'Visual Studio Build Tools with the "Desktop development with C++" workload and ' +
        'Python 3 (builds from source on Windows are not tested; the package ships a win32-x64 prebuild)'
    case 'linux':
      return 'Python 3, make and a C compiler (Debian, Ubuntu: `apt-get install python3 make gcc`; ' +
        'Alpine: `apk add build-base python3`; Fedora: `dnf install python3 make gcc`)'
    default:
      return 'Python 3, make and a C compiler'
  }
}

function nodeGyp () {
  if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp
  const bundled = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules',
    'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
  if (fs.existsSync(bundled)) return bundled
  return require.resolve('node-gyp/bin/node-gyp.js')
}

function build (reason) {
  console.log(`threadlock: compiling src/ with node-gyp: ${reason}`)
  let gyp
  try {
    gyp = nodeGyp()
  } catch {
    gyp = null
  }
  const args = [gyp, 'rebuild']
  const prefix = path.join(path.dirname(process.execPath), '..')
  if (!process.env.npm_config_nodedir &&
      fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) {
    args.push(`--nodedir=${prefix}`)
  }
  const r = gyp ? spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' }) : { status: 1 }
  if (r.status !== 0) {
    console.error(`threadlock: no native addon for ${platformName()}, Node ${process.version}.\n` +
      `  Tried the prebuilt binaries: ${reason}.\n` +
      `  Tried compiling src/ with node-gyp: ${gyp ? 'it failed (see above)' : 'node-gyp was not found'}.\n` +
      `  To compile, install ${toolsHint()}, then run npm install again.`)
    process.exit(r.status || 1)
  }
}

if (process.env.THREADLOCK_FORCE_BUILD) {
  build('THREADLOCK_FORCE_BUILD is set')
} else {
  const prebuilt = tryPrebuild()
  if (prebuilt.file) {
    console.log(`threadlock: using ${rel(prebuilt.file)}, no compilation needed`)
  } else {
    build(prebuilt.reason)
  }
}
