'use strict'

// Number formatting shared by the printed tables (run.js) and the charts
// (charts.js): three significant figures at most, with k and M suffixes.
// It loads nothing else, so that the charts can be drawn without the addon.

function fmt (x) {
  if (x === Infinity) return '∞'
  if (!Number.isFinite(x)) return String(x)
  const a = Math.abs(x)
  if (a >= 1e6) return `${(x / 1e6).toFixed(a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2)}M`
  if (a >= 1e4) return `${(x / 1e3).toFixed(a >= 1e5 ? 0 : 1)}k`
  if (a >= 100) return x.toFixed(0)
  if (a >= 10) return x.toFixed(1)
  if (a >= 1) return x.toFixed(2)
  return x.toFixed(3)
}

// A tick label: as short as the value allows (1, 0.5, 20k, 1M).
function fmtTick (x) {
  const a = Math.abs(x)
  if (a >= 1e6) return `${+(x / 1e6).toPrecision(3)}M`
  if (a >= 1e3) return `${+(x / 1e3).toPrecision(3)}k`
  return String(+x.toPrecision(3))
}

module.exports = { fmt, fmtTick }
