'use strict'

// The type declarations of every entry point compile in a consumer project
// with no @types/node and no DOM library, and accept the AbortSignal of
// Node's types and of the DOM's. Each consumer in test/types/ is compiled by
// tsc in a temporary project outside this checkout, where the package is
// installed as node_modules/threadlock, so that nothing of this repository's
// node_modules (its @types in particular) is visible unless a case asks for
// it.
//
// Then tsd checks each entry point's declarations against its *.test-d.ts
// file (expectType / expectError), as `npx tsd` does.
//
// The entry points come from package.json's "exports": each one needs its
// two consumers, test/types/<name>.cts and <name>.mts (CommonJS and ES
// module), named in ENTRIES; an entry point without them fails the test.

const assert = require('assert')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = path.join(__dirname, '..')

// tsd's own TypeScript, so that the check uses the same TypeScript as the
// tsd tests. It runs in this process: the programs below share the source
// files of TypeScript's libraries (parsed once, never changed), which a tsc
// process per program would parse again each time.
const ts = require(require.resolve('@tsd/typescript', { paths: [path.dirname(require.resolve('tsd'))] }))
const tsd = require('tsd')
const libFiles = new Map()

const pkgJson = require('../package.json')

// The consumers of each entry point, by subpath.
const ENTRIES = {
  '.': 'index',
  './postgres': 'postgres',
  './host': 'host',
  './lockfile': 'lockfile'
}

// The subpaths of package.json's "exports" that have types, with their
// declaration files.
const exported = Object.entries(pkgJson.exports)
  .filter(([, target]) => typeof target === 'object')
  .map(([subpath, target]) => ({ subpath, types: [target.require.types, target.import.types] }))

// The package's declaration files, as package.json's "files" ships them:
// those of the entry points and those they import (named-locks.d.ts). Only
// these are copied into the consumer project, so a declaration file that
// "files" leaves out fails the compilation.
const declarationFiles = pkgJson.files.filter((f) => /\.d\.m?ts$/.test(f))
const typeFiles = ['package.json', ...declarationFiles]

// The shipped declaration files that are no entry point's own.
const sharedFiles = declarationFiles.filter((f) => !exported.some((e) => e.types.includes(`./${f}`)))

describe('types', () => {
  let dir

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-types-'))
    const pkg = path.join(dir, 'node_modules', 'threadlock')
    fs.mkdirSync(pkg, { recursive: true })
    for (const file of typeFiles) fs.copyFileSync(path.join(root, file), path.join(pkg, file))
    fs.mkdirSync(path.join(dir, 'no-types'))
    for (const file of fs.readdirSync(path.join(__dirname, 'types'))) {
      fs.copyFileSync(path.join(__dirname, 'types', file), path.join(dir, file))
    }
    fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "consumer", "private": true }\n')
  })

  after(() => {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  // Compiles `files` in the temporary project with these compiler options
  // on top of strict Node16 settings, as `tsc -p` would with such a
  // tsconfig.json; returns tsc's exit status (0, or 2 for errors) and its
  // output (file(line,col): error TSnnnn: message).
  function compile (name, files, options) {
    const json = { strict: true, noEmit: true, skipLibCheck: false, module: 'node16', moduleResolution: 'node16', ...options }
    const { options: compilerOptions, errors } = ts.convertCompilerOptionsFromJson(json, dir, `tsconfig.${name}.json`)
    assert.deepStrictEqual(errors, [], `compiler options of ${name}`)
    const host = ts.createCompilerHost(compilerOptions)
    const getSourceFile = host.getSourceFile
    const libDir = path.dirname(ts.getDefaultLibFilePath(compilerOptions))
    // Only TypeScript's own libraries are shared: every consumer and
    // declaration file is read afresh, as the control case rewrites one.
    host.getSourceFile = (fileName, languageVersion, ...rest) => {
      if (path.dirname(fileName) !== libDir) return getSourceFile.call(host, fileName, languageVersion, ...rest)
      const key = `${fileName}\0${JSON.stringify(languageVersion)}`
      if (!libFiles.has(key)) libFiles.set(key, getSourceFile.call(host, fileName, languageVersion, ...rest))
      return libFiles.get(key)
    }
    const program = ts.createProgram(files.map((f) => path.join(dir, f)), compilerOptions, host)
    const diagnostics = ts.getPreEmitDiagnostics(program)
    const output = ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => dir,
      getNewLine: () => '\n'
    }).trim()
    return { status: diagnostics.length === 0 ? 0 : 2, output }
  }

  it('has consumers for every entry point of package.json', () => {
    assert.deepStrictEqual(exported.map((e) => e.subpath).sort(), Object.keys(ENTRIES).sort())
    for (const name of Object.values(ENTRIES)) {
      for (const ext of ['cts', 'mts']) assert.ok(fs.existsSync(path.join(__dirname, 'types', `${name}.${ext}`)), `test/types/${name}.${ext}`)
    }
    for (const e of exported) {
      for (const types of e.types) assert.ok(declarationFiles.includes(types.replace(/^\.\//, '')), `${types} is not in package.json "files"`)
    }
  })

  const standalone = { lib: ['es2022'], types: [], typeRoots: ['./no-types'] }

  for (const e of exported) {
    const name = ENTRIES[e.subpath]
    const entry = path.posix.join('threadlock', e.subpath)

    it(`${entry}: compiles its consumers with "types": [], lib es2022 and no @types visible`, function () {
      this.timeout(60000)
      assert.ok(name, `no consumers for ${e.subpath}`)
      // No @types directory anywhere above the project, or the check would
      // prove less than it claims.
      for (let d = dir; ; d = path.dirname(d)) {
        assert.ok(!fs.existsSync(path.join(d, 'node_modules', '@types')), `${d}/node_modules/@types exists`)
        if (path.dirname(d) === d) break
      }
      const r = compile(`standalone-${name}`, [`${name}.cts`, `${name}.mts`], standalone)
      assert.deepStrictEqual(r, { status: 0, output: '' })
    })

    it(`${entry}: fails that compilation when its declarations name a global of the DOM or of Node`, function () {
      this.timeout(60000)
      // The same consumer against declarations that name AbortSignal, as
      // they once did: the check must catch it. The signal options are in
      // the entry point's own file or in the shared declarations it imports.
      const files = [e.types[0].replace(/^\.\//, ''), ...sharedFiles]
      const good = new Map(files.map((file) => [file, fs.readFileSync(path.join(dir, 'node_modules', 'threadlock', file), 'utf8')]))
      const broken = files.filter((file) => good.get(file).includes('signal?: AbortSignalLike'))
      assert.ok(broken.length > 0, `${files.join(', ')} have no signal option to break`)
      try {
        for (const file of broken) {
          fs.writeFileSync(path.join(dir, 'node_modules', 'threadlock', file), good.get(file).replace(/signal\?: AbortSignalLike/g, 'signal?: AbortSignal'))
        }
        const r = compile(`control-${name}`, [`${name}.cts`], standalone)
        assert.strictEqual(r.status, 2)
        const where = broken.map((file) => file.replace(/\./g, '\\.')).join('|')
        assert.match(r.output, new RegExp(`(${where})\\(\\d+,\\d+\\): error TS2304: Cannot find name 'AbortSignal'`))
      } finally {
        for (const [file, text] of good) fs.writeFileSync(path.join(dir, 'node_modules', 'threadlock', file), text)
      }
    })
  }

  it("accepts the AbortSignal of @types/node", function () {
    this.timeout(60000)
    const r = compile('node', ['signals.mts'], {
      lib: ['es2022'],
      types: ['node'],
      typeRoots: [path.join(root, 'node_modules', '@types')]
    })
    assert.deepStrictEqual(r, { status: 0, output: '' })
  })

  it("accepts the AbortSignal of the DOM library", function () {
    this.timeout(60000)
    const r = compile('dom', ['signals.mts'], {
      lib: ['es2022', 'dom'],
      types: [],
      typeRoots: ['./no-types']
    })
    assert.deepStrictEqual(r, { status: 0, output: '' })
  })

  // tsd over every entry point's declarations and its test-d file, in this
  // process and in one program for the four files, as `npx tsd` checks a
  // project's test files together. tsd type-checks its libraries with
  // every program (skipLibCheck: false: the DOM library and @types/node),
  // which was most of this file's time when each file had its own program.
  // The test-d files are modules and no declaration file augments a
  // global, so a file's diagnostics are the same alone or together. Each
  // test fails on a diagnostic in its test-d file or its declarations, and
  // on one in any file that is no test's own (package.json, the shared
  // named-locks.d.ts). tsd's own rule that the typings file is in
  // package.json "files" runs for index.d.ts here; the first test checks
  // "files" for every entry point's declarations.
  const TSD = [['index.d.ts', 'index.test-d.ts'], ['postgres.d.ts', 'postgres.test-d.ts'],
    ['host.d.ts', 'host.test-d.ts'], ['lockfile.d.ts', 'lockfile.test-d.ts']]
  const owned = new Set(TSD.flat())
  let tsdRun
  const tsdDiagnostics = () => {
    if (tsdRun === undefined) {
      tsdRun = tsd.default({ cwd: root, typingsFile: pkgJson.types, testFiles: TSD.map(([, file]) => file) })
    }
    return tsdRun
  }

  for (const [typings, file] of TSD) {
    it(`tsd: ${file} against ${typings}`, async function () {
      this.timeout(120000)
      const diagnostics = (await tsdDiagnostics())
        .map((d) => ({ ...d, fileName: path.relative(root, d.fileName) }))
        .filter((d) => d.fileName === file || d.fileName === typings || !owned.has(d.fileName))
      assert.deepStrictEqual(diagnostics.map((d) => `${d.fileName}:${d.line}:${d.column}: ${d.severity}: ${d.message}`), [])
    })
  }
})
