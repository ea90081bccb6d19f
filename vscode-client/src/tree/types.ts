/** The `stark/tree` response and the `stark/treeChanged` notification (server contract). */

export interface TreeNode {
  id: number;
  parent: number | null;
  kind: string; // root | plan | code | debug | ...
  status: string; // e.g. success | failed | running
  /** Against the user's kernel once the client has read it (see relative.ts); the server sends it against the reference. */
  speedup: number | null;
  /** The server's figure, against the eager PyTorch reference. */
  speedup_vs_reference?: number | null;
  runtime_ms: number | null;
  summary: string;
  source: string;
  attempt?: number;
  error?: string;
  /** One line of Nsight Compute figures when the search profiled this node. */
  profile?: string;
}

export interface SearchTree {
  kernel: string;
  task_id?: string;
  /** The root's runtime; when absent the root node's runtime_ms is used. */
  baseline_ms?: number | null;
  nodes: TreeNode[];
  /** Server extras: a search for this file is running, and its progress line. */
  running?: boolean;
  progress?: string | null;
  /** Id of the best correct node (the root when nothing beats it). */
  best?: number | null;
  /** Set when the server cannot give a tree (e.g. the document is not open). */
  error?: string;
}

export interface TreeParams {
  uri: string;
  kernel: string;
}

export const TREE_REQUEST = 'stark/tree';
export const TREE_CHANGED_NOTIFICATION = 'stark/treeChanged';
