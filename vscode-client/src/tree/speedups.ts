/**
 * The ratio format of `stark_lsp/speedups.py`, for the numbers the view makes
 * itself (the chart's axis ticks); every node's figure comes from the server
 * already labelled. Same rules: three significant digits up to 1000×, two
 * below 0.1×, `<0.0001×` and `>1000×` past the ends, never `0.00×` nor an
 * exponent. Pure.
 */
export function ratioText(x: number | null | undefined, sign = '×'): string {
  if (typeof x !== 'number' || Number.isNaN(x)) return '-';
  if (!Number.isFinite(x) || x > 1000) return `>1000${sign}`;
  if (x < 0.0001) return `<0.0001${sign}`;
  if (x >= 100) return `${x.toFixed(0)}${sign}`;
  if (x >= 10) return `${x.toFixed(1)}${sign}`;
  if (x >= 0.1) return `${x.toFixed(2)}${sign}`;
  const digits = 1 - Math.floor(Math.log10(x)); // two significant digits, fixed point
  return `${x.toFixed(digits)}${sign}`;
}
