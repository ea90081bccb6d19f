/**
 * Data for the "best speedup against attempts" chart. Pure.
 *
 * Attempts are the finished non-root nodes in id order (the order the search
 * made them; abandoned ones are left out); a failed attempt counts but does
 * not raise the curve. The curve
 * starts at the baseline (1×) with 0 attempts.
 */
import { isMeasured, isRunning } from './outcome';
import type { TreeNode } from './types';

export interface ChartPoint {
  attempt: number;
  best: number;
  nodeId: number | null;
}

export function bestSpeedupSeries(nodes: readonly TreeNode[]): ChartPoint[] {
  const points: ChartPoint[] = [{ attempt: 0, best: 1, nodeId: null }];
  let best = 1;
  let attempt = 0;
  for (const n of [...nodes].sort((a, b) => a.id - b.id)) {
    if (n.parent === null || isRunning(n) || n.status === 'abandoned') continue;
    attempt++;
    if (isMeasured(n) && (n.speedup as number) > best) best = n.speedup as number;
    points.push({ attempt, best, nodeId: n.id });
  }
  return points;
}
