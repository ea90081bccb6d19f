/**
 * Data for the "best so far against attempts" chart, and its axis ticks. Pure.
 *
 * Attempts are the finished non-root nodes in id order (the order the search
 * made them; a "nothing new" used an attempt too; stopped ones are left out).
 * The curve is the best gain so far, against the user's kernel: it starts at
 * 1 (the user's kernel) with 0 attempts, and a failed attempt does not raise it.
 */
import { isAttempt } from './outcome';
import type { TreeNode } from './types';

export interface ChartPoint {
  attempt: number;
  best: number;
  nodeId: number | null;
}

export function bestGainSeries(nodes: readonly TreeNode[]): ChartPoint[] {
  let best = 1;
  const points: ChartPoint[] = [{ attempt: 0, best, nodeId: null }];
  let attempt = 0;
  for (const n of [...nodes].sort((a, b) => a.id - b.id)) {
    if (!isAttempt(n)) continue;
    attempt++;
    if (typeof n.gain === 'number' && n.gain > best) best = n.gain;
    points.push({ attempt, best, nodeId: n.id });
  }
  return points;
}

/**
 * Tick values for an axis from `lo` to `hi` whose labels do not overlap: at
 * most one per `minGap` pixels of an axis `length` pixels long. `keep` (e.g.
 * the baseline 1×) always stays; a tick too close to it goes.
 */
export function ticks(lo: number, hi: number, length: number, minGap: number, keep: number[] = []): number[] {
  const px = (v: number) => ((v - lo) / (hi - lo || 1)) * length;
  const out: number[] = [];
  const candidates = [...keep, lo, hi, ...niceSteps(lo, hi)];
  for (const v of candidates) {
    if (v < lo || v > hi) continue;
    if (out.some((t) => Math.abs(px(t) - px(v)) < minGap)) continue;
    out.push(v);
  }
  return out.sort((a, b) => a - b);
}

function niceSteps(lo: number, hi: number): number[] {
  const span = hi - lo;
  if (!(span > 0)) return [];
  const raw = span / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}
