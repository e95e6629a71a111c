'use strict'

// Draws the results of `npm run bench` (the JSON that bench/run.js writes)
// as two SVG charts:
//
//   ratios.svg     every metric of the main table as threadlock / anchor on
//                  a log axis around 1, one bar per metric, grouped by row;
//   contended.svg  throughput and share against the number of threads on
//                  the contended lock, for threadlock's default policy, its
//                  { fifo: true } policy and the V8 blog's lock.
//
// Run alone it re-renders the charts of a saved run without measuring:
//
//   node bench/charts.js [results.json] [--out=DIR]
//
// (default: docs/bench/results.json, written next to it). Nothing here loads
// the addon.
//
// The JSON (format 1):
//   meta     { date, node, platform, arch, cores, cpu, memGiB, commit,
//              command, quick, loadStart, loadEnd, seconds }
//   table    [{ id, workload, anchor, metric, higher, target, absolute,
//              threadlock, anchorValue, ratio, ok, error }]; threadlock and
//              anchorValue are { median, min, max, n } or null, target is
//              the ratio target, absolute a target on threadlock's own
//              value, ok true / false / null (no verdict)
//   threads  { durationMs, rounds, shapes: { A: text, ... }, series:
//              { impl: label }, points: [{ shape, threads, values:
//              { impl: { throughput, share, longestMs, p99Us } } }] }
// Infinity (a share when a thread got nothing) is stored as "Infinity".

const fs = require('fs')
const path = require('path')
const { fmt, fmtTick } = require('./format')
const svg = require('./svg')

const FORMAT = 1
const DOCS = path.join(__dirname, '..', 'docs', 'bench')

// JSON with Infinity kept (as a string) and NaN as null.
function stringify (results) {
  return JSON.stringify(results, (k, v) => {
    if (typeof v !== 'number' || Number.isFinite(v)) return v
    if (Number.isNaN(v)) return null
    return v > 0 ? 'Infinity' : '-Infinity'
  }, 2) + '\n'
}

function parse (text) {
  const results = JSON.parse(text, (k, v) => (v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v))
  if (results === null || typeof results !== 'object' || results.format !== FORMAT) {
    throw new TypeError(`charts: not a bench results file of format ${FORMAT}`)
  }
  return results
}

// One line saying where the numbers come from.
function caption (meta) {
  const load = meta.loadStart && meta.loadEnd ? `load average ${meta.loadStart[0]} → ${meta.loadEnd[0]}` : null
  return [
    meta.command,
    meta.date ? meta.date.slice(0, 10) : null,
    `node ${meta.node}`,
    `${meta.platform} ${meta.arch}`,
    `${meta.cores} cores (${meta.cpu})`,
    load,
    meta.commit ? `threadlock ${meta.commit}` : null,
    meta.seconds ? `${meta.seconds} s` : null
  ].filter(Boolean).join(CAPTION_SEP)
}

const CAPTION_SEP = ' · '

const BETTER = '#2166ac'
const WORSE = '#d6604d'
const GREY = '#6b7280'
const GRID = '#e5e7eb'
const INK = '#111827'

// Chart 1: the ratios.

function renderRatios (results) {
  const rows = results.table
  if (!Array.isArray(rows) || rows.length === 0) return null
  const W = 980
  const pad = 16
  const barH = 18
  const headH = 22
  // Group the metrics by row id, in table order.
  const groups = []
  for (const r of rows) {
    const g = groups[groups.length - 1]
    if (g && g.id === r.id) g.items.push(r)
    else groups.push({ id: r.id, workload: r.workload, anchor: r.anchor, items: [r] })
  }
  // A target on threadlock's own value (share) is not a ratio: say it.
  const label = (r) => `${r.metric}${r.higher ? ' ↑' : ''}${r.absolute !== null && r.absolute !== undefined ? ` (target: threadlock ≤ ${r.absolute})` : ''}`
  const labelW = Math.max(...rows.map((r) => svg.textWidth(label(r), 12))) + 28
  const valueW = 130
  const x0 = pad + labelW
  const x1 = W - pad - valueW
  const finite = rows.filter((r) => typeof r.ratio === 'number' && r.ratio > 0 && Number.isFinite(r.ratio))
  const marks = [1, ...finite.map((r) => r.ratio), ...rows.filter((r) => r.target).map((r) => r.target)]
  const [lo, hi] = svg.decadeBounds(Math.min(...marks) / 1.2, Math.max(...marks) * 1.2)
  const x = svg.logScale(lo, hi, x0, x1)
  const ticks = svg.logTicks(lo, hi)

  const out = []
  let y = 28
  out.push(svg.text(pad, y, 'threadlock ÷ its anchor, per benchmark row (same run)', { 'font-size': 16, 'font-weight': 'bold', fill: INK }))
  y += 20
  out.push(svg.text(pad, y, 'Log scale. Left of 1: threadlock\'s value is lower than the anchor\'s; right: higher. ↑ marks metrics where higher is better.', { fill: GREY }))
  y += 22
  // Legend.
  let lx = pad
  for (const [color, name] of [[BETTER, 'threadlock better'], [WORSE, 'threadlock worse']]) {
    out.push(svg.rect(lx, y - 10, 14, 11, { fill: color }))
    out.push(svg.text(lx + 20, y, name))
    lx += 30 + svg.textWidth(name, 12)
  }
  out.push(svg.line(lx + 6, y - 12, lx + 6, y + 3, { stroke: INK, 'stroke-width': 2 }))
  out.push(svg.text(lx + 14, y, 'target (ratio)'))
  lx += 30 + svg.textWidth('target (ratio)', 12)
  out.push(svg.text(lx, y, 'pass / MISS: the row\'s target in bench/README.md', { fill: GREY }))
  y += 26

  const axis = (ay, above) => {
    const parts = [svg.line(x0, ay, x1, ay, { stroke: GREY })]
    for (const t of ticks) {
      parts.push(svg.line(x(t), ay, x(t), ay + (above ? -4 : 4), { stroke: GREY }))
      parts.push(svg.text(x(t), ay + (above ? -7 : 15), t === 1 ? '1 = anchor' : fmtTick(t), {
        'text-anchor': 'middle', fill: t === 1 ? INK : GREY, 'font-weight': t === 1 ? 'bold' : undefined
      }))
    }
    return parts
  }
  const plotTop = y
  out.push(...axis(plotTop, true))
  out.push(svg.text(x1 + 24, plotTop - 7, 'ratio', { fill: GREY }))
  y += 4
  const body = []
  for (const g of groups) {
    body.push(svg.rect(pad, y, W - 2 * pad, headH, { fill: '#f3f4f6' }))
    // One text element, so that the anchor's name follows the workload
    // wherever the font ends it.
    body.push(svg.el('text', { x: pad + 4, y: y + 15, fill: INK },
      svg.el('tspan', { 'font-weight': 'bold' }, svg.esc(g.id)),
      svg.el('tspan', { dx: 10 }, svg.esc(g.workload)),
      svg.el('tspan', { dx: 10, fill: GREY }, svg.esc(`vs ${g.anchor}`))))
    y += headH
    for (const r of g.items) {
      const mid = y + barH / 2
      body.push(svg.text(pad + 16, mid + 4, label(r), { fill: INK }))
      let value
      if (r.error) {
        value = 'error'
      } else if (typeof r.ratio === 'number' && r.ratio > 0) {
        const better = r.higher ? r.ratio > 1 : r.ratio < 1
        const color = r.ratio === 1 ? GREY : better ? BETTER : WORSE
        const xa = x(1)
        const xb = x(r.ratio)
        body.push(svg.rect(Math.min(xa, xb), mid - 6, Math.max(1, Math.abs(xb - xa)), 12, {
          class: 'bar', fill: color, 'data-row': r.id
        }))
        if (r.target) body.push(svg.line(x(r.target), mid - 8, x(r.target), mid + 8, { stroke: INK, 'stroke-width': 2 }))
        value = fmt(r.ratio)
      } else {
        value = 'n/a'
      }
      body.push(svg.text(x1 + 24, mid + 4, value, { fill: INK, 'font-weight': 'bold' }))
      if (r.ok !== null && r.ok !== undefined) {
        body.push(svg.text(x1 + 76, mid + 4, r.ok ? 'pass' : 'MISS', { fill: r.ok ? GREY : WORSE }))
      }
      y += barH
    }
  }
  const plotBottom = y + 4
  // Grid and the line at 1 first, so that bars and headers cover them.
  for (const t of ticks) {
    out.push(svg.line(x(t), plotTop, x(t), plotBottom, { stroke: GRID }))
  }
  out.push(svg.line(x(1), plotTop, x(1), plotBottom, { class: 'one', stroke: INK, 'stroke-width': 1.5 }))
  out.push(...body)
  out.push(...axis(plotBottom, false))
  y = plotBottom + 36
  for (const l of svg.wrap(caption(results.meta), W - 2 * pad, 11, CAPTION_SEP)) {
    out.push(svg.text(pad, y, l, { 'font-size': 11, fill: GREY }))
    y += 15
  }
  return svg.svgDocument(W, y + 4, 'threadlock against its anchors, ratio per benchmark row', out)
}

// Chart 2: the contended lock against thread count.

const SERIES_STYLE = {
  threadlock: { color: '#2166ac', shape: 'circle', dash: null },
  fifo: { color: '#7b3294', shape: 'square', dash: '6 3' },
  blog: { color: '#e08214', shape: 'triangle', dash: '2 3' }
}
const FALLBACK_STYLE = [{ color: '#1b7837', shape: 'diamond', dash: '8 3 2 3' }]

function styleOf (impl, k) {
  return SERIES_STYLE[impl] || FALLBACK_STYLE[k % FALLBACK_STYLE.length]
}

// One panel: `metric` of every series against threads, log axes.
function panel (out, box, title, points, impls, metric, yLabel, floor, ref) {
  const { left, top, width, height } = box
  const pl = left + 56
  const pr = left + width - 12
  const pt = top + 26
  const pb = top + height - 40
  const threads = [...new Set(points.map((p) => p.threads))].sort((a, b) => a - b)
  const values = []
  for (const p of points) for (const impl of impls) values.push(p.values[impl] && p.values[impl][metric])
  const finite = values.filter((v) => typeof v === 'number' && Number.isFinite(v) && v > 0)
  const hasInf = values.some((v) => v === Infinity)
  const vlo = floor !== undefined ? floor : Math.min(...finite) / 1.3
  const vhi = Math.max(floor !== undefined ? floor * 2 : 0, ...finite) * (hasInf ? 1.6 : 1.3)
  const yTicks = svg.logTicks(vlo, vhi)
  const y = svg.logScale(vlo, vhi, pb, pt)
  const x = threads.length > 1
    ? svg.logScale(threads[0], threads[threads.length - 1], pl + 14, pr - 14)
    : () => (pl + pr) / 2
  out.push(svg.text(left, top + 12, title, { 'font-weight': 'bold', fill: INK }))
  for (const t of yTicks) {
    out.push(svg.line(pl, y(t), pr, y(t), { stroke: GRID }))
    out.push(svg.text(pl - 6, y(t) + 4, fmtTick(t), { 'text-anchor': 'end', fill: GREY }))
  }
  for (const n of threads) {
    out.push(svg.line(x(n), pb, x(n), pb + 4, { stroke: GREY }))
    out.push(svg.text(x(n), pb + 17, String(n), { 'text-anchor': 'middle', fill: GREY }))
  }
  if (ref !== null && ref > vlo && ref < vhi) {
    out.push(svg.line(pl, y(ref), pr, y(ref), { stroke: INK, 'stroke-dasharray': REF_DASH }))
  }
  out.push(svg.rect(pl, pt, pr - pl, pb - pt, { fill: 'none', stroke: GREY }))
  out.push(svg.text((pl + pr) / 2, pb + 33, 'threads (main + workers)', { 'text-anchor': 'middle', fill: GREY }))
  out.push(svg.text(left + 12, (pt + pb) / 2, yLabel, {
    'text-anchor': 'middle', fill: GREY, transform: `rotate(-90 ${left + 12} ${(pt + pb) / 2})`
  }))
  impls.forEach((impl, k) => {
    const st = styleOf(impl, k)
    const pts = []
    for (const p of [...points].sort((a, b) => a.threads - b.threads)) {
      const v = p.values[impl] && p.values[impl][metric]
      if (typeof v !== 'number' || !(v > 0)) continue
      pts.push([x(p.threads), v === Infinity ? pt : y(v), v])
    }
    if (pts.length === 0) return
    out.push(svg.polyline(pts.map(([px, py]) => [px, py]), {
      class: 'series', 'data-series': impl, stroke: st.color, 'stroke-width': 2, 'stroke-dasharray': st.dash
    }))
    for (const [px, py, v] of pts) {
      out.push(svg.marker(st.shape, px, py, 4, { fill: st.color }))
      // Inside the frame, left of the marker: the right edge is often near.
      if (v === Infinity) {
        out.push(svg.text(px - 8, py + 16, '∞ (a thread got nothing)', {
          'text-anchor': 'end', fill: st.color, 'font-weight': 'bold', stroke: '#ffffff', 'stroke-width': 3, 'paint-order': 'stroke'
        }))
      }
    }
  })
}

// The share that rows 5a-5c hold threadlock's default policy to.
const SHARE_TARGET = 1.5
const REF_DASH = '1 3'

function renderContended (results) {
  const t = results.threads
  if (!t || !Array.isArray(t.points) || t.points.length === 0) return null
  const W = 980
  const pad = 16
  const impls = Object.keys(t.series)
  const shapes = Object.keys(t.shapes).filter((s) => t.points.some((p) => p.shape === s))
  const out = []
  let y = 28
  out.push(svg.text(pad, y, 'Contended lock: throughput and fairness against the number of threads', { 'font-size': 16, 'font-weight': 'bold', fill: INK }))
  y += 20
  out.push(svg.text(pad, y, `Medians of ${t.rounds} rounds of ${t.durationMs} ms each, the implementations alternating within each round. Log axes.`, { fill: GREY }))
  y += 16
  for (const s of shapes) {
    for (const l of svg.wrap(`Shape ${s}: ${t.shapes[s]}`, W - 2 * pad, 12)) {
      out.push(svg.text(pad, y, l, { fill: GREY }))
      y += 16
    }
  }
  y += 8
  // The legend, flowing onto more lines when it must.
  let lx = pad
  const entry = (name, lineAttrs, shape, color) => {
    const w = 38 + svg.textWidth(name, 12)
    if (lx > pad && lx + w > W - pad) {
      lx = pad
      y += 20
    }
    out.push(svg.line(lx, y - 4, lx + 30, y - 4, lineAttrs))
    if (shape) out.push(svg.marker(shape, lx + 15, y - 4, 4, { fill: color }))
    out.push(svg.text(lx + 38, y, name, { fill: INK }))
    lx += w + 28
  }
  impls.forEach((impl, k) => {
    const st = styleOf(impl, k)
    entry(t.series[impl], { stroke: st.color, 'stroke-width': 2, 'stroke-dasharray': st.dash }, st.shape, st.color)
  })
  entry(`fairness target: ${SHARE_TARGET}`, { stroke: INK, 'stroke-dasharray': REF_DASH })
  y += 14
  const colW = (W - 2 * pad) / Math.max(1, shapes.length)
  const panelH = 270
  const metrics = [
    ['throughput', 'Throughput (operations per second, all threads)', 'ops/s', undefined, null],
    ['share', 'Fairness (busiest thread ÷ least busy; 1 is equal)', 'max ÷ min', 1,
      SHARE_TARGET]
  ]
  for (const [metric, name, yLabel, floor, ref] of metrics) {
    shapes.forEach((s, k) => {
      panel(out, { left: pad + k * colW, top: y, width: colW - (k < shapes.length - 1 ? 24 : 0), height: panelH },
        `${name}, shape ${s}`, t.points.filter((p) => p.shape === s), impls, metric, yLabel, floor, ref)
    })
    y += panelH + 10
  }
  y += 10
  for (const l of svg.wrap(caption(results.meta), W - 2 * pad, 11, CAPTION_SEP)) {
    out.push(svg.text(pad, y, l, { 'font-size': 11, fill: GREY }))
    y += 15
  }
  return svg.svgDocument(W, y + 4, 'Contended lock: throughput and fairness against thread count', out)
}

// Writes results.json (unless `json` is false) and the charts into `dir`;
// returns the paths written.
function writeAll (results, dir, { json = true } = {}) {
  fs.mkdirSync(dir, { recursive: true })
  const written = []
  const put = (name, content) => {
    if (content === null) return
    const file = path.join(dir, name)
    fs.writeFileSync(file, content)
    written.push(file)
  }
  if (json) put('results.json', stringify(results))
  put('ratios.svg', renderRatios(results))
  put('contended.svg', renderContended(results))
  return written
}

function main (argv) {
  let file = path.join(DOCS, 'results.json')
  let out = null
  for (const a of argv) {
    if (a.startsWith('--out=')) out = a.slice(6)
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/charts.js [results.json] [--out=DIR]\n')
      return 0
    } else if (a.startsWith('-')) {
      process.stderr.write(`charts: unknown option ${a}\n`)
      return 2
    } else file = a
  }
  let results
  try {
    results = parse(fs.readFileSync(file, 'utf8'))
  } catch (err) {
    process.stderr.write(`charts: ${file}: ${err.message}\n`)
    return 1
  }
  const written = writeAll(results, out === null ? path.dirname(file) : out, { json: false })
  process.stdout.write(written.length ? `wrote ${written.join(', ')}\n` : 'charts: nothing to draw in that file\n')
  return 0
}

if (require.main === module) process.exitCode = main(process.argv.slice(2))

module.exports = { FORMAT, DOCS, stringify, parse, caption, renderRatios, renderContended, writeAll, main }
