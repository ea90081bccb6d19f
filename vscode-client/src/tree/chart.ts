/**
 * Data for the "best speedup against attempts" chart. Pure.
 *
 * Attempts are the finished non-root nodes in id order (the order the search
 * made them; abandoned ones are left out); a failed attempt counts but does
 * not raise the curve. The curve
 * starts at the user's kernel (the root's speedup; 1× when unknown) with 0 attempts.
 */
import { baselineSpeedup, isMeasured, isRunning } from './outcome';
import type { TreeNode } from './types';

export interface ChartPoint {
  attempt: number;
  best: number;
  nodeId: number | null;
}

export function bestSpeedupSeries(nodes: readonly TreeNode[]): ChartPoint[] {
  let best = baselineSpeedup(nodes);
  const points: ChartPoint[] = [{ attempt: 0, best, nodeId: null }];
  let attempt = 0;
  for (const n of [...nodes].sort((a, b) => a.id - b.id)) {
    if (n.parent === null || isRunning(n) || /abandoned/i.test(n.status)) continue;
    attempt++;
    if (isMeasured(n) && (n.speedup as number) > best) best = n.speedup as number;
    points.push({ attempt, best, nodeId: n.id });
  }
  return points;
}
