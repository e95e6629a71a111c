'use strict'

// A small SVG writer for the benchmark charts (charts.js): elements as
// strings, log scales with their ticks, and an estimate of text widths.
// There is no font engine in Node, so widths are estimated from the
// character count with a generous average advance; layouts leave room by
// that estimate instead of measuring.

const FONT = 'DejaVu Sans, Verdana, Arial, Helvetica, sans-serif'

// Average advance of a character as a fraction of the font size. Verdana
// and DejaVu Sans, the widest of FONT, average about 0.58 on our labels.
const ADVANCE = 0.62
const BOLD_ADVANCE = 0.68

function esc (s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;')
    .replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

// Coordinates with two decimals at most keep the files small and stable.
function num (x) {
  return Number.isInteger(x) ? String(x) : String(Math.round(x * 100) / 100)
}

function attrs (a) {
  let out = ''
  for (const [k, v] of Object.entries(a)) {
    if (v === undefined || v === null || v === false) continue
    out += ` ${k}="${typeof v === 'number' ? num(v) : esc(v)}"`
  }
  return out
}

// An element; `children` are strings of markup (already escaped).
function el (name, a = {}, ...children) {
  const body = children.flat().filter((c) => c !== null && c !== undefined && c !== '')
  return body.length === 0
    ? `<${name}${attrs(a)}/>`
    : `<${name}${attrs(a)}>${body.join('')}</${name}>`
}

function text (x, y, s, a = {}) {
  return el('text', { x, y, ...a }, esc(s))
}

function line (x1, y1, x2, y2, a = {}) {
  return el('line', { x1, y1, x2, y2, ...a })
}

function rect (x, y, width, height, a = {}) {
  return el('rect', { x, y, width: Math.max(0, width), height: Math.max(0, height), ...a })
}

function polyline (points, a = {}) {
  return el('polyline', { points: points.map(([x, y]) => `${num(x)},${num(y)}`).join(' '), fill: 'none', ...a })
}

// A point marker of the given shape centred at (x, y).
function marker (shape, x, y, r, a = {}) {
  if (shape === 'square') return rect(x - r, y - r, 2 * r, 2 * r, a)
  if (shape === 'triangle') {
    const h = r * 1.2
    return el('path', { d: `M${num(x)},${num(y - h)}L${num(x + h)},${num(y + h * 0.8)}L${num(x - h)},${num(y + h * 0.8)}Z`, ...a })
  }
  if (shape === 'diamond') {
    const h = r * 1.3
    return el('path', { d: `M${num(x)},${num(y - h)}L${num(x + h)},${num(y)}L${num(x)},${num(y + h)}L${num(x - h)},${num(y)}Z`, ...a })
  }
  return el('circle', { cx: x, cy: y, r, ...a })
}

function textWidth (s, size, bold = false) {
  return [...String(s)].length * size * (bold ? BOLD_ADVANCE : ADVANCE)
}

// Splits `s` at each `sep` into lines no wider than `width` (a part wider
// than that gets a line of its own).
function wrap (s, width, size, sep = ' ') {
  const lines = []
  let cur = ''
  for (const word of String(s).split(sep)) {
    const next = cur === '' ? word : `${cur}${sep}${word}`
    if (cur !== '' && textWidth(next, size) > width) {
      lines.push(cur)
      cur = word
    } else {
      cur = next
    }
  }
  if (cur !== '') lines.push(cur)
  return lines
}

// The 1-2-5 ticks (or 1-1.5-2-3-5-7 when the range is short) in [lo, hi].
function logTicks (lo, hi) {
  const pick = (steps) => {
    const out = []
    for (let e = Math.floor(Math.log10(lo)) - 1; e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of steps) {
        const v = Number((m * 10 ** e).toPrecision(3))
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v)
      }
    }
    return out
  }
  const decades = pick([1])
  if (decades.length >= 5) return decades
  const coarse = pick([1, 2, 5])
  return coarse.length >= 4 ? coarse : pick([1, 1.5, 2, 3, 5, 7])
}

// Widens [lo, hi] outwards to decade bounds.
function decadeBounds (lo, hi) {
  return [10 ** Math.floor(Math.log10(lo) + 1e-9), 10 ** Math.ceil(Math.log10(hi) - 1e-9)]
}

// Maps [lo, hi] (both > 0) onto [r0, r1] logarithmically; values outside
// are clamped to the ends.
function logScale (lo, hi, r0, r1) {
  const a = Math.log(lo)
  const span = Math.log(hi) - a || 1
  const f = (v) => {
    const t = (Math.log(Math.min(Math.max(v, lo), hi)) - a) / span
    return r0 + t * (r1 - r0)
  }
  f.lo = lo
  f.hi = hi
  return f
}

// A whole document: a white background (the charts are shown on dark pages
// too), the font, a title for screen readers, then the body.
function svgDocument (width, height, title, body) {
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + el('svg', {
    xmlns: 'http://www.w3.org/2000/svg',
    width,
    height,
    viewBox: `0 0 ${num(width)} ${num(height)}`,
    role: 'img',
    'font-family': FONT,
    'font-size': 12
  }, el('title', {}, esc(title)), rect(0, 0, width, height, { fill: '#ffffff' }), body) + '\n'
}

module.exports = {
  esc,
  el,
  text,
  line,
  rect,
  polyline,
  marker,
  textWidth,
  wrap,
  logTicks,
  decadeBounds,
  logScale,
  svgDocument
}
