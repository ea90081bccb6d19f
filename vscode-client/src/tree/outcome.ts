/**
 * Reading a tree as the server drew it: its best node, the path to it, what
 * counts as an attempt. The outcome of each node (faster, slower, failed,
 * nothing new, ...) comes from the server. Pure.
 */
import type { Outcome, TreeNode } from './types';

export function isRunning(n: Pick<TreeNode, 'outcome'>): boolean {
  return n.outcome === 'running';
}

/** A finished attempt: it used one unit of the budget (a "nothing new" did too). */
export function isAttempt(n: TreeNode): boolean {
  return n.parent !== null && n.outcome !== 'running' && n.outcome !== 'abandoned';
}

/** The server's best node, when it names one in the tree. */
export function bestNode(nodes: readonly TreeNode[], serverBest?: number | null): TreeNode | undefined {
  return typeof serverBest === 'number' ? nodes.find((n) => n.id === serverBest) : undefined;
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

/** The legend: what each outcome is called and drawn as. */
export const OUTCOME_LABELS: Record<Outcome, string> = {
  root: 'your kernel',
  faster: 'faster',
  slower: 'not faster',
  failed: 'failed',
  nothing_new: 'nothing new to try',
  running: 'running',
  abandoned: 'stopped',
};
