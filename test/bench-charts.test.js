'use strict'

// The bench's charts (bench/charts.js, bench/svg.js), drawn from a small
// fixture of results (test/fixtures/bench-results.json) without running the
// bench: the SVG must be well-formed XML and show every row and series of
// the data, so that a change to the writer cannot break the charts quietly.

const assert = require('assert')
const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { XMLValidator } = require('fast-xml-parser')
const charts = require('../bench/charts')

const FIXTURE = path.join(__dirname, 'fixtures', 'bench-results.json')
const CLI = path.join(__dirname, '..', 'bench', 'charts.js')

function load () {
  return charts.parse(fs.readFileSync(FIXTURE, 'utf8'))
}

function assertWellFormed (svgText) {
  const v = XMLValidator.validate(svgText)
  assert.strictEqual(v, true, v === true ? '' : `not well-formed: ${JSON.stringify(v.err)}`)
  assert.match(svgText, /^<\?xml [^>]*\?>\n<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+(\.\d+)?" height="\d+(\.\d+)?"/)
}

// The values of attribute `name` on elements whose class is `cls`, in order.
function attrsOf (svgText, cls, name) {
  const re = new RegExp(`<[a-z]+ [^>]*class="${cls}"[^>]*>`, 'g')
  return (svgText.match(re) || []).map((tag) => {
    const m = new RegExp(` ${name}="([^"]*)"`).exec(tag)
    return m === null ? null : m[1]
  })
}

function unescape (s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&')
}

// The text content of every <text> and <tspan>, unescaped.
function texts (svgText) {
  return [...svgText.matchAll(/<(?:text|tspan)\b[^>]*>([^<]*)/g)].map((m) => unescape(m[1])).filter((t) => t !== '')
}

describe('bench charts', () => {
  it('keeps Infinity through results.json and refuses other files', () => {
    const results = load()
    const inf = results.threads.points[1].values.fifo.share
    assert.strictEqual(inf, Infinity)
    const again = charts.parse(charts.stringify(results))
    assert.deepStrictEqual(again, results)
    assert.throws(() => charts.parse('{"format": 999}'), TypeError)
    assert.throws(() => charts.parse('[]'), TypeError)
  })

  it('draws the ratios: a bar per measured ratio, every row and metric labelled', () => {
    const results = load()
    const out = charts.renderRatios(results)
    assertWellFormed(out)
    const measured = results.table.filter((r) => typeof r.ratio === 'number')
    assert.deepStrictEqual(attrsOf(out, 'bar', 'data-row'), measured.map((r) => r.id))
    const words = texts(out)
    for (const r of results.table) {
      assert.ok(words.includes(r.id), `row ${r.id} is not labelled`)
      assert.ok(words.includes(r.workload), `workload of row ${r.id} is missing`)
      assert.ok(words.some((w) => w.startsWith(r.metric)), `metric ${r.metric} of row ${r.id} is missing`)
    }
    // The values printed beside the bars, n/a without an anchor, and the
    // verdicts.
    for (const v of ['0.003', '1.38', '0.773', '64.1', 'n/a', 'error']) assert.ok(words.includes(v), v)
    assert.strictEqual(words.filter((w) => w === 'pass').length, 3)
    assert.strictEqual(words.filter((w) => w === 'MISS').length, 1)
    // The line at 1 and the caption of the run.
    assert.strictEqual(attrsOf(out, 'one', 'x1').length, 1)
    const caption = words.find((w) => w.startsWith('npm run bench'))
    assert.ok(caption, 'no caption')
    for (const part of ['2026-01-02', 'node v20.0.0-fixture', '2 cores (Fixture CPU)', 'threadlock abc1234']) {
      assert.ok(caption.includes(part), `caption lacks ${part}: ${caption}`)
    }
  })

  it('places the bars on a log axis around 1, left for ratios below 1', () => {
    const out = charts.renderRatios(load())
    const one = Number(attrsOf(out, 'one', 'x1')[0])
    const bars = [...out.matchAll(/<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*class="bar"/g)]
      .map((m) => ({ x: Number(m[1]), w: Number(m[2]) }))
    assert.strictEqual(bars.length, 4)
    const [r1, r5a, r5aShare, r5rw] = bars
    // 0.003 and 0.773 end at 1 from the left; 1.38 and 64 start there.
    assert.ok(Math.abs(r1.x + r1.w - one) < 0.02 && Math.abs(r5aShare.x + r5aShare.w - one) < 0.02)
    assert.ok(Math.abs(r5a.x - one) < 0.02 && Math.abs(r5rw.x - one) < 0.02)
    // Log scale: 0.003125 is 2.5 decades below 1, 64.09 is 1.8 above.
    const decade = r1.w / -Math.log10(0.003125)
    assert.ok(Math.abs(r5rw.w - decade * Math.log10(64.09)) < 0.5)
    assert.ok(Math.abs(r5a.w - decade * Math.log10(1.378)) < 0.5)
  })

  it('draws the contended lock: every series in every panel, thread counts, ∞', () => {
    const results = load()
    const out = charts.renderContended(results)
    assertWellFormed(out)
    const series = attrsOf(out, 'series', 'data-series')
    // Two shapes × two metrics = four panels, one line per series in each.
    for (const impl of Object.keys(results.threads.series)) {
      assert.strictEqual(series.filter((s) => s === impl).length, 4, impl)
    }
    assert.strictEqual(series.length, 12)
    const words = texts(out)
    for (const label of Object.values(results.threads.series)) assert.ok(words.includes(label), label)
    for (const shape of ['A', 'C']) {
      assert.ok(words.some((w) => w.startsWith('Throughput') && w.endsWith(`shape ${shape}`)), shape)
      assert.ok(words.some((w) => w.startsWith('Fairness') && w.endsWith(`shape ${shape}`)), shape)
      assert.ok(words.includes(`Shape ${shape}: ${results.threads.shapes[shape]}`), shape)
    }
    assert.ok(words.filter((w) => w === '2').length >= 4 && words.filter((w) => w === '8').length >= 4)
    assert.strictEqual(words.filter((w) => w.startsWith('∞')).length, 1)
  })

  it('leaves a chart out when its section did not run', () => {
    const results = load()
    delete results.threads
    assert.strictEqual(charts.renderContended(results), null)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-charts-'))
    try {
      const written = charts.writeAll(results, dir).map((f) => path.basename(f))
      assert.deepStrictEqual(written, ['results.json', 'ratios.svg'])
      results.table = []
      assert.strictEqual(charts.renderRatios(results), null)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('re-renders a saved run from the command line (node bench/charts.js)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threadlock-charts-'))
    try {
      const r = spawnSync(process.execPath, [CLI, FIXTURE, `--out=${dir}`], { encoding: 'utf8' })
      assert.strictEqual(r.status, 0, r.stderr)
      const results = load()
      assert.strictEqual(fs.readFileSync(path.join(dir, 'ratios.svg'), 'utf8'), charts.renderRatios(results))
      assert.strictEqual(fs.readFileSync(path.join(dir, 'contended.svg'), 'utf8'), charts.renderContended(results))
      assert.ok(!fs.existsSync(path.join(dir, 'results.json')), 'the saved run is not rewritten')
      const bad = spawnSync(process.execPath, [CLI, path.join(dir, 'missing.json')], { encoding: 'utf8' })
      assert.strictEqual(bad.status, 1)
      assert.match(bad.stderr, /^charts: .*missing\.json: /)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
