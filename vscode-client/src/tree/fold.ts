/**
 * Which subtrees of the search tree fold into one node. Pure.
 *
 * A subtree folds when nothing in it is correct and faster: every node in it
 * failed, was not faster, found nothing new, or was stopped; none is running,
 * on the best path (the root is, so the root never folds), or opened by the
 * user (``expanded``: the user clicked its folded node). Only the topmost such
 * subtree folds (an ancestor that could fold too folds instead), and only one
 * of two attempts or more: a lone failed leaf is its parent's "N×" cluster
 * (view-model.ts) or itself. Folds that hang from the same parent are one
 * folded node (at 200 attempts a parent has many small dead ends: one node says
 * how many, not a row of them). The folded node says how many attempts it holds
 * and their statuses; clicking it opens its subtrees, and each top node then
 * offers to fold its own again.
 */
import type { Outcome, TreeNode } from './types';

/** What a folded subtree may hold. */
export const FOLDABLE: ReadonlySet<Outcome> = new Set<Outcome>(['failed', 'slower', 'nothing_new', 'abandoned']);

/** The fewest attempts a subtree folds with: one alone is drawn as itself. */
export const MIN_FOLD = 2;

export interface Fold {
  /** The subtree's top node (of several merged under one parent: the first). */
  root: number;
  /** The top node of each subtree it holds, by id: several when folds under one parent are merged. */
  tops: number[];
  /** Its parent: where the folded node hangs. */
  parent: number;
  /** Every node in the subtree, its top first (depth-first, children by id). */
  ids: number[];
  /** How many of them had each outcome. */
  outcomes: Partial<Record<Outcome, number>>;
  /** The failed ones' statuses ("compile_error", ...), most frequent first. */
  failures: [string, number][];
  /** How many levels it goes below its top (1 or more). */
  depth: number;
}

function childrenOf(nodes: readonly TreeNode[]): Map<number, TreeNode[]> {
  const ids = new Set(nodes.map((n) => n.id));
  const kids = new Map<number, TreeNode[]>();
  for (const n of [...nodes].sort((a, b) => a.id - b.id)) {
    if (n.parent === null || n.parent === n.id || !ids.has(n.parent)) continue;
    kids.set(n.parent, [...(kids.get(n.parent) ?? []), n]);
  }
  return kids;
}

/** Whether each node's whole subtree may fold: every node in it ``may(n)`` (post-order, iterative; a cycle never folds). */
function cleanSubtrees(nodes: readonly TreeNode[], kids: Map<number, TreeNode[]>, may: (n: TreeNode) => boolean): Map<number, boolean> {
  const clean = new Map<number, boolean>();
  const visiting = new Set<number>();
  const stack: [TreeNode, boolean][] = nodes.map((n) => [n, false]);
  while (stack.length) {
    const [n, done] = stack.pop() as [TreeNode, boolean];
    if (clean.has(n.id)) continue;
    const children = kids.get(n.id) ?? [];
    if (!done) {
      if (visiting.has(n.id)) {
        clean.set(n.id, false); // a cycle
        continue;
      }
      visiting.add(n.id);
      stack.push([n, true]);
      for (const c of children) if (!clean.has(c.id)) stack.push([c, false]);
      continue;
    }
    clean.set(n.id, may(n) && children.every((c) => clean.get(c.id) === true));
  }
  return clean;
}

const mayFold = (keep: ReadonlySet<number>) => (n: TreeNode) => n.parent !== null && FOLDABLE.has(n.outcome) && !keep.has(n.id);

/**
 * The subtrees that fold, by their top node's id. ``keep``: nodes that are
 * never folded, nor any subtree that holds them (the best path);
 * ``expanded``: top nodes the user opened (their whole subtree stays open).
 */
export function folds(
  nodes: readonly TreeNode[],
  keep: ReadonlySet<number> = new Set(),
  expanded: ReadonlySet<number> = new Set(),
): Map<number, Fold> {
  const kids = childrenOf(nodes);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const may = mayFold(keep);
  const clean = cleanSubtrees(nodes, kids, (n) => may(n) && !expanded.has(n.id));

  // nodes at or under an expanded top: open, never folded again until it is closed
  const open = (n: TreeNode): boolean => {
    const seen = new Set<number>();
    for (let cur: TreeNode | undefined = n; cur && !seen.has(cur.id); cur = cur.parent === null ? undefined : byId.get(cur.parent)) {
      if (expanded.has(cur.id)) return true;
      seen.add(cur.id);
    }
    return false;
  };

  const out = new Map<number, Fold>();
  for (const n of nodes) {
    if (!clean.get(n.id) || n.parent === null) continue;
    if (clean.get(n.parent) === true) continue; // its parent's subtree folds: that one is the top
    if ((kids.get(n.id) ?? []).length === 0) continue; // alone: not worth a fold (MIN_FOLD)
    if (open(n)) continue;
    const ids: number[] = [];
    const outcomes: Partial<Record<Outcome, number>> = {};
    const failures = new Map<string, number>();
    let depth = 0;
    const walk: [TreeNode, number][] = [[n, 0]];
    while (walk.length) {
      const [m, d] = walk.pop() as [TreeNode, number];
      ids.push(m.id);
      depth = Math.max(depth, d);
      outcomes[m.outcome] = (outcomes[m.outcome] ?? 0) + 1;
      if (m.outcome === 'failed') failures.set(m.status, (failures.get(m.status) ?? 0) + 1);
      for (const c of [...(kids.get(m.id) ?? [])].reverse()) walk.push([c, d + 1]);
    }
    if (ids.length < MIN_FOLD) continue;
    out.set(n.id, {
      root: n.id,
      tops: [n.id],
      parent: n.parent,
      ids,
      outcomes,
      failures: [...failures].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      depth,
    });
  }
  return mergedByParent(out);
}

/** The folds that hang from one parent, as one (keyed by its first top); a fold alone under its parent as it is. */
function mergedByParent(single: Map<number, Fold>): Map<number, Fold> {
  const byParent = new Map<number, Fold[]>();
  for (const f of [...single.values()].sort((a, b) => a.root - b.root)) byParent.set(f.parent, [...(byParent.get(f.parent) ?? []), f]);
  const out = new Map<number, Fold>();
  for (const group of byParent.values()) {
    const [first] = group;
    if (group.length === 1) {
      out.set(first.root, first);
      continue;
    }
    const outcomes: Partial<Record<Outcome, number>> = {};
    const failures = new Map<string, number>();
    for (const f of group) {
      for (const [o, k] of Object.entries(f.outcomes) as [Outcome, number][]) outcomes[o] = (outcomes[o] ?? 0) + k;
      for (const [st, k] of f.failures) failures.set(st, (failures.get(st) ?? 0) + k);
    }
    out.set(first.root, {
      root: first.root,
      tops: group.map((f) => f.root),
      parent: first.parent,
      ids: group.flatMap((f) => f.ids),
      outcomes,
      failures: [...failures].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      depth: Math.max(...group.map((f) => f.depth)),
    });
  }
  return out;
}

const OUTCOME_WORDS: Partial<Record<Outcome, string>> = {
  failed: 'failed',
  slower: 'not faster',
  nothing_new: 'nothing new',
  abandoned: 'stopped',
};

/** The outcome that most of a fold's attempts had (its colour), failed first on a tie. */
export function foldOutcome(f: Fold): Outcome {
  let best: Outcome = 'failed';
  for (const o of ['failed', 'slower', 'abandoned', 'nothing_new'] as Outcome[]) {
    if ((f.outcomes[o] ?? 0) > (f.outcomes[best] ?? 0)) best = o;
  }
  return best;
}

/** "7 attempts: 4 failed (3 compile error, 1 incorrect), 2 not faster, 1 nothing new". */
export function foldSummary(f: Fold): string {
  const parts: string[] = [];
  for (const o of ['failed', 'slower', 'nothing_new', 'abandoned'] as Outcome[]) {
    const k = f.outcomes[o];
    if (!k) continue;
    const why = o === 'failed' && f.failures.length ? ` (${f.failures.map(([s, c]) => `${c} ${s.replace(/_/g, ' ')}`).join(', ')})` : '';
    parts.push(`${k} ${OUTCOME_WORDS[o]}${why}`);
  }
  return `${f.ids.length} attempt${f.ids.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

/**
 * The opened tops (of ``expanded``) that would fold again if closed: they
 * carry the "−" toggle. One whose subtree has since got a faster node, or is
 * now on the best path, does not.
 */
export function refoldable(
  nodes: readonly TreeNode[],
  keep: ReadonlySet<number> = new Set(),
  expanded: ReadonlySet<number> = new Set(),
): Set<number> {
  if (expanded.size === 0) return new Set();
  const kids = childrenOf(nodes);
  const clean = cleanSubtrees(nodes, kids, mayFold(keep));
  return new Set([...expanded].filter((id) => clean.get(id) === true && (kids.get(id) ?? []).length > 0));
}
