/** The `stark/tree` response and the `stark/treeChanged` notification (server contract). */

export interface TreeNode {
  id: number;
  parent: number | null;
  kind: string; // root | plan | code | debug | ...
  status: string; // e.g. success | failed | running
  speedup: number | null;
  runtime_ms: number | null;
  summary: string;
  source: string;
}

export interface SearchTree {
  kernel: string;
  task_id: string;
  baseline_ms: number | null;
  nodes: TreeNode[];
}

export interface TreeParams {
  uri: string;
  kernel: string;
}

export const TREE_REQUEST = 'stark/tree';
export const TREE_CHANGED_NOTIFICATION = 'stark/treeChanged';
