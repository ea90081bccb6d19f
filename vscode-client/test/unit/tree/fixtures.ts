import type { SearchTree, TreeNode } from '../../../src/tree/types';

export function node(id: number, parent: number | null, speedup: number | null, status = 'success', extra: Partial<TreeNode> = {}): TreeNode {
  return { id, parent, kind: parent === null ? 'root' : 'code', status, speedup, runtime_ms: speedup ? 1 / speedup : null, summary: `node ${id}`, source: `v${id}\n`, ...extra };
}

/**
 *        0 (root)
 *      /   \\
 *     1     2 (failed)
 *    / \\
 *   3   4 (2.5x, best)
 *       |
 *       5 (running)
 */
export function sampleTree(): SearchTree {
  return {
    kernel: 'add_kernel',
    task_id: 't1',
    baseline_ms: 1,
    nodes: [
      node(0, null, 1),
      node(1, 0, 1.2),
      node(2, 0, null, 'compile_error'),
      node(3, 1, 0.9),
      node(4, 1, 2.5),
      node(5, 4, null, 'running'),
    ],
  };
}
