/**
 * How a node turned out, for colouring, and which node is best. Pure.
 *
 * Speedups are the server's: against the harness reference, so the user's own
 * kernel (the root) has a speedup too and may be far below 1×. "Faster" means
 * faster than the root; "best" is the correct node with the highest speedup,
 * as the server's `best` field.
 */
import type { TreeNode } from './types';

export type Outcome = 'root' | 'running' | 'failed' | 'faster' | 'slower';

const RUNNING = /^(running|pending|queued|evaluating|generating|started)$/i;
const FAILED = /(fail|error|incorrect|wrong|timeout|crash|invalid|mismatch|abandoned)/i;

export function isRunning(n: Pick<TreeNode, 'status'>): boolean {
  return RUNNING.test(n.status);
}

/** A finished, correct node with a speedup (the root included). */
export function isMeasured(n: TreeNode): boolean {
  return !isRunning(n) && !FAILED.test(n.status) && typeof n.speedup === 'number' && n.speedup > 0;
}

/** The root's speedup (the user's kernel against the reference), 1 when unknown. */
export function baselineSpeedup(nodes: readonly TreeNode[]): number {
  const root = nodes.find((n) => n.parent === null);
  return root && isMeasured(root) ? (root.speedup as number) : 1;
}

export function outcome(n: TreeNode, baseline = 1): Outcome {
  if (n.parent === null) return 'root';
  if (isRunning(n)) return 'running';
  if (!isMeasured(n)) return 'failed';
  return (n.speedup as number) > baseline ? 'faster' : 'slower';
}

/**
 * The correct node with the highest speedup, root included; ties go to the
 * lowest id. `serverBest` (the tree's `best` id) wins when it names a node.
 */
export function bestNode(nodes: readonly TreeNode[], serverBest?: number | null): TreeNode | undefined {
  if (typeof serverBest === 'number') {
    const named = nodes.find((n) => n.id === serverBest);
    if (named) return named;
  }
  let best: TreeNode | undefined;
  for (const n of [...nodes].sort((a, b) => a.id - b.id)) {
    if (isMeasured(n) && (!best || (n.speedup as number) > (best.speedup as number))) best = n;
  }
  return best;
}

/** The best node when it is a candidate (not the user's kernel), else undefined. */
export function bestCandidate(nodes: readonly TreeNode[], serverBest?: number | null): TreeNode | undefined {
  const b = bestNode(nodes, serverBest);
  return b && b.parent !== null ? b : undefined;
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

/** `2.41×`; below 0.1× two significant digits (`0.0013×`), since on the Triton
 * interpreter a kernel can be thousands of times slower than the reference. */
export function formatSpeedup(x: number | null | undefined): string {
  if (typeof x !== 'number' || !(x > 0)) return '—';
  return `${x >= 0.1 ? x.toFixed(2) : Number(x.toPrecision(2)).toString()}×`;
}
