/** The server's messages about search trees (docs/SERVER.md): `stark/tree`, `stark/node`, `stark/treeChanged`, `stark/searches`. */

/** What a node turned out to be (the server decides; the view only draws it). */
export type Outcome = 'root' | 'running' | 'faster' | 'slower' | 'failed' | 'nothing_new' | 'abandoned';

export interface TreeNode {
  id: number;
  parent: number | null;
  kind: string; // root | plan_code | debug
  status: string;
  attempt?: number;
  outcome: Outcome;
  /** Against the harness reference (eager PyTorch). */
  speedup: number | null;
  /** Against the user's kernel (the root); null when it failed or is not measured. */
  gain: number | null;
  /** The gain as a short label ("2.35×"), "baseline" for the root, "" when there is none. */
  label: string;
  runtime_ms: number | null;
  summary: string;
  duplicate_of?: number | null;
  /** Its agents' prompt + completion tokens, as the CLI's table shows them ("12.3k tok"); "" without a call. */
  tokens_text?: string;
}

export interface SearchTree {
  uri?: string;
  kernel: string;
  task_id?: string | null;
  nodes: TreeNode[];
  /** Id of the best correct node (the root when nothing beats it). */
  best?: number | null;
  baseline_ms?: number | null;
  /** "your kernel", or for a KernelBench file "your Model (eager PyTorch, the reference)". */
  baseline?: string;
  /** "best 2.35× your kernel (#14)", or why there is none yet. */
  best_text?: string;
  /** Finished attempts that spent budget, as the CLI counts them. */
  attempts?: number;
  /** Finished attempts that spent none (an agent's "nothing new", a duplicate source). */
  free?: number;
  correct?: number;
  failed?: number;
  /** Timed on the CPU (Triton interpreter): not GPU timings. */
  cpu?: boolean;
  /** An LLM team's calls and tokens over the tree, as `stark show` says them; "" for the built-in team. */
  usage_text?: string;
  /** A search for this file is running, and its progress line. */
  running?: boolean;
  progress?: string | null;
  /** The budget a new or continued search gets (the setting). */
  budget?: number;
  /** Set when the server cannot give a tree (e.g. the document is not open). */
  error?: string;
}

/** `stark/node`: one node with its source and its diff against its parent. */
export interface NodeDetailReply extends TreeNode {
  source: string;
  diff: string;
  can_apply: boolean;
  why_not: string;
  gain_text: string;
  eager_text: string;
  error: string;
  profile: string;
}

export interface TreeParams {
  uri: string;
  kernel: string;
}

/** One running search, as `stark/searches` lists them. */
export interface RunningSearch {
  uri: string;
  kernel: string;
  task_id: string;
  progress: string;
  best: string | null;
  stopping: boolean;
}

export const TREE_REQUEST = 'stark/tree';
export const NODE_REQUEST = 'stark/node';
export const TREE_CHANGED_NOTIFICATION = 'stark/treeChanged';
export const SEARCHES_NOTIFICATION = 'stark/searches';
