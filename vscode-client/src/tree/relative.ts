/**
 * Speedups as a kernel engineer reads them: against their own kernel (the
 * root), not against the eager PyTorch reference. The server reports the
 * latter; on the CPU interpreter it is a meaningless 0.00001×. Pure.
 */
import type { SearchTree, TreeNode } from './types';

export function relativeToBaseline(tree: SearchTree): SearchTree {
  if (!tree.nodes) return tree;
  const root = tree.nodes.find((n) => n.parent === null);
  const baseline = tree.baseline_ms ?? root?.runtime_ms ?? null;
  if (!baseline || baseline <= 0) return tree;
  const nodes: TreeNode[] = tree.nodes.map((n) => ({
    ...n,
    speedup_vs_reference: n.speedup,
    speedup: n.runtime_ms && n.runtime_ms > 0 && n.speedup !== null ? baseline / n.runtime_ms : n.speedup,
  }));
  return { ...tree, nodes };
}
