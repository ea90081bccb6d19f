import type { Outcome, SearchTree, TreeNode } from '../../../src/tree/types';

export function node(id: number, parent: number | null, gain: number | null, outcome: Outcome = 'faster', extra: Partial<TreeNode> = {}): TreeNode {
  const label = parent === null ? 'baseline' : gain === null ? '' : `${gain.toFixed(2)}×`;
  return {
    id, parent, kind: parent === null ? 'root' : 'plan_code', status: outcome === 'failed' ? 'compile_error' : 'ok', outcome,
    speedup: gain, gain, label, runtime_ms: gain ? 1 / gain : null, summary: `node ${id}`, ...extra,
  };
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
    baseline: 'your kernel',
    best: 4,
    best_text: 'best 2.50× your kernel (#4)',
    attempts: 3,
    correct: 2,
    budget: 30,
    nodes: [
      node(0, null, 1, 'root'),
      node(1, 0, 1.2),
      node(2, 0, null, 'failed'),
      node(3, 1, 0.9, 'slower'),
      node(4, 1, 2.5),
      node(5, 4, null, 'running'),
    ],
  };
}

/** A search of many attempts, half of them "nothing new to try" under a few nodes. */
export function bigTree(count = 200): SearchTree {
  const nodes = [node(0, null, 1, 'root')];
  for (let i = 1; i < count; i++) {
    const parent = i < 10 ? 0 : 1 + (i % 9);
    nodes.push(i % 2 ? node(i, parent, null, 'nothing_new') : node(i, parent, 1 + i / 1000, 'faster'));
  }
  return { kernel: 'k', best: count - 2, nodes, attempts: count - 1, budget: count - 1 };
}
