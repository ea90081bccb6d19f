/**
 * How a node turned out, for colouring, and which node is best. Pure.
 */
import type { TreeNode } from './types';

export type Outcome = 'root' | 'running' | 'failed' | 'faster' | 'slower';

const RUNNING = /^(running|pending|queued|evaluating|generating|started)$/i;
const FAILED = /(fail|error|incorrect|wrong|timeout|crash|invalid|mismatch)/i;

export function isRunning(n: Pick<TreeNode, 'status'>): boolean {
  return RUNNING.test(n.status);
}

export function outcome(n: TreeNode): Outcome {
  if (n.parent === null || n.kind === 'root') return 'root';
  if (isRunning(n)) return 'running';
  if (FAILED.test(n.status) || n.speedup === null || !(n.speedup > 0)) return 'failed';
  return n.speedup > 1 ? 'faster' : 'slower';
}

/** A finished, correct node with a speedup (the root counts: it is the baseline). */
export function isMeasured(n: TreeNode): boolean {
  return !isRunning(n) && !FAILED.test(n.status) && typeof n.speedup === 'number' && n.speedup > 0;
}

/** The measured non-root node with the highest speedup above 1, or undefined. Ties: lowest id. */
export function bestNode(nodes: readonly TreeNode[]): TreeNode | undefined {
  let best: TreeNode | undefined;
  for (const n of nodes) {
    if (n.parent === null || !isMeasured(n) || (n.speedup as number) <= 1) continue;
    if (!best || (n.speedup as number) > (best.speedup as number) || (n.speedup === best.speedup && n.id < best.id)) best = n;
  }
  return best;
}

/** Ids from the root down to `id` (inclusive). Stops on a missing parent or a cycle. */
export function pathToRoot(nodes: readonly TreeNode[], id: number): number[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const path: number[] = [];
  const seen = new Set<number>();
  let cur = byId.get(id);
  while (cur && !seen.has(cur.id)) {
    seen.add(cur.id);
    path.unshift(cur.id);
    cur = cur.parent === null ? undefined : byId.get(cur.parent);
  }
  return path;
}

export function formatSpeedup(x: number | null | undefined): string {
  return typeof x === 'number' && x > 0 ? `${x.toFixed(2)}×` : '—';
}
