/**
 * Turns the server's tree into what the webview draws, and a `stark/node`
 * reply into the detail panel. Pure.
 *
 * A node's "nothing new to try" children (an agent had no new move from it:
 * no candidate, one attempt of the budget) are drawn as one small cluster
 * ("3× nothing new"), not as failed candidates: in a long search they can be
 * half of the tree. Likewise a node's failed children that led nowhere (no
 * child of their own: no repair was tried from them) are one "5×" failed
 * cluster, whose detail lists each with its error: at 200 nodes and more the
 * tree is then the attempts that mattered. A whole subtree where nothing is
 * correct and faster (fold.ts) is one folded node that says how many
 * attempts it holds and their statuses; the user opens it by clicking it
 * (``expanded``), and folds it again from its top node's "−" toggle.
 */
import { bestGainSeries } from './chart';
import { layoutTree } from './layout';
import { folds, foldOutcome, foldSummary, refoldable, type Fold } from './fold';
import type { NodeDetail, ToWebview } from './messages';
import { bestCandidate, isAttempt, isRunning, pathToRoot } from './outcome';
import { renderChartSvg, renderMinimapSvg, renderTreeSvg } from './svg';
import type { NodeDetailReply, Outcome, SearchTree, TreeNode } from './types';

export interface ViewNode {
  id: number; // a cluster's id is -(its parent's id) - 1
  parent: number | null;
  outcome: Outcome;
  label: string; // inside the circle
  title: string; // the tooltip
  best: boolean; // the best node
  onPath: boolean; // on the path from the root to the best node
  count?: number; // a cluster or a folded subtree: how many attempts it stands for
  /** A folded subtree: how many of its attempts had each outcome (drawn as a ring of slices). */
  fold?: Partial<Record<Outcome, number>>;
  /** A folded subtree: the id of its top node, and how many rows it goes below it. */
  foldTop?: number;
  foldDepth?: number;
  /** The top of a subtree the user opened: it offers to fold it again. */
  expanded?: boolean;
}

export type ClusterKind = 'nothing_new' | 'failed' | 'fold';

const KINDS: ClusterKind[] = ['nothing_new', 'failed', 'fold'];

/**
 * A cluster's id: negative, -(3p+1) for "nothing new", -(3p+2) for failed
 * leaves (p: their parent), -(3p+3) for a folded subtree (p: its top node).
 */
export const clusterId = (parent: number, kind: ClusterKind = 'nothing_new') => -(3 * parent + 1 + KINDS.indexOf(kind));

/** The parent (for a fold: the top node) and kind of a cluster's id (``clusterId``'s inverse). */
export function clusterOf(id: number): { parent: number; kind: ClusterKind } {
  const n = -id - 1;
  return { parent: Math.floor(n / 3), kind: KINDS[n % 3] };
}

/** The options a tree is drawn with: which folded subtrees the user opened (their top nodes). */
export interface ViewOptions {
  expanded?: ReadonlySet<number>;
}

/** The subtrees that fold, and every node they hide. */
function folded(tree: SearchTree, path: Set<number>, opts: ViewOptions): { folds: Map<number, Fold>; hidden: Set<number> } {
  const f = folds(tree.nodes, path, opts.expanded);
  return { folds: f, hidden: new Set([...f.values()].flatMap((x) => x.ids)) };
}

/** Each parent's children of ``kind`` that are drawn as one cluster (two or more of them). */
function clusters(tree: SearchTree, kind: ClusterKind, keep: Set<number>, hidden: Set<number> = new Set()): Map<number, TreeNode[]> {
  const parents = new Set(tree.nodes.map((n) => n.parent));
  const groups = new Map<number, TreeNode[]>();
  for (const n of tree.nodes) {
    if (n.parent === null || n.outcome !== kind || keep.has(n.id) || hidden.has(n.id)) continue;
    if (kind === 'failed' && parents.has(n.id)) continue; // a failure the Debug agent worked from stays drawn
    groups.set(n.parent, [...(groups.get(n.parent) ?? []), n]);
  }
  for (const [parent, group] of groups) if (group.length < 2) groups.delete(parent);
  return groups;
}

function title(n: TreeNode): string {
  const what = n.parent === null ? 'your kernel (the baseline)' : n.outcome.replace('_', ' ');
  const fig = n.label && n.label !== 'baseline' ? ` · ${n.label}` : '';
  return `#${n.id} ${n.kind.replace('_', ' + ')} · ${what}${fig}${n.summary ? `\n${n.summary}` : ''}`;
}

function bestPath(tree: SearchTree): Set<number> {
  const best = bestCandidate(tree.nodes, tree.best);
  return new Set(best ? pathToRoot(tree.nodes, best.id) : []);
}

/** "#3 and what was tried from it (2 levels)", "#6, #9 and what was tried from them (up to 3 levels)". */
function foldFrom(f: Fold): string {
  if (f.tops.length === 1) return `#${f.root} and what was tried from it (${f.depth + 1} levels)`;
  return `${f.tops.map((t) => `#${t}`).join(', ')} and what was tried from them (up to ${f.depth + 1} levels)`;
}

/**
 * The top nodes a click on the folded node of ``top`` opens: every subtree it holds (folds merged under
 * one parent open together); ``[top]`` when no fold starts there.
 */
export function foldTops(tree: SearchTree, top: number, opts: ViewOptions = {}): number[] {
  return folded(tree, bestPath(tree), opts).folds.get(top)?.tops ?? [top];
}

/**
 * The folded subtrees the user opened (``expanded``, their top nodes), as a click opens them and a "−"
 * folds them again: a folded node that holds several subtrees of one parent opens them all, and the "−"
 * of any of them folds them all back into that one node.
 */
export class OpenFolds {
  /** The top nodes opened, as ``ViewOptions.expanded`` takes them. */
  readonly expanded = new Set<number>();
  private readonly together = new Map<number, number[]>();

  open(tree: SearchTree | undefined, top: number): void {
    const tops = tree ? foldTops(tree, top, { expanded: this.expanded }) : [top];
    for (const t of tops) {
      this.expanded.add(t);
      this.together.set(t, tops);
    }
  }

  close(top: number): void {
    for (const t of this.together.get(top) ?? [top]) {
      this.expanded.delete(t);
      this.together.delete(t);
    }
  }

  clear(): void {
    this.expanded.clear();
    this.together.clear();
  }
}

export function viewNodes(tree: SearchTree, opts: ViewOptions = {}): ViewNode[] {
  const best = bestCandidate(tree.nodes, tree.best);
  const path = bestPath(tree);
  const { folds: subtrees, hidden } = folded(tree, path, opts);
  const nothingNew = clusters(tree, 'nothing_new', path, hidden);
  const failed = clusters(tree, 'failed', path, hidden);
  const inCluster = new Set([...nothingNew.values(), ...failed.values()].flat().map((n) => n.id));
  const toggles = refoldable(tree.nodes, path, opts.expanded);
  const out: ViewNode[] = [];
  for (const n of tree.nodes) {
    if (inCluster.has(n.id) || hidden.has(n.id)) continue; // drawn as its parent's cluster, or in a fold
    out.push({
      id: n.id,
      parent: n.parent,
      outcome: n.outcome,
      label: n.parent === null ? 'base' : n.outcome === 'nothing_new' ? '·' : n.label || '',
      title: title(n),
      best: n.id === best?.id,
      onPath: path.has(n.id),
      ...(toggles.has(n.id) ? { expanded: true } : {}),
    });
  }
  for (const f of subtrees.values()) {
    out.push({
      id: clusterId(f.root, 'fold'),
      parent: f.parent,
      outcome: foldOutcome(f),
      label: `${f.ids.length}`,
      title: `${foldSummary(f)}\n${foldFrom(f)}, none of it faster. Click to open.`,
      best: false,
      onPath: false,
      count: f.ids.length,
      fold: f.outcomes,
      foldTop: f.root,
      foldDepth: f.depth,
    });
  }
  for (const [parent, group] of failed) {
    out.push({
      id: clusterId(parent, 'failed'),
      parent,
      outcome: 'failed',
      label: `${group.length}×`,
      title: `${group.length} failed attempts from #${parent}, none worked from further: #${group.map((g) => g.id).join(', #')}`,
      best: false,
      onPath: false,
      count: group.length,
    });
  }
  for (const [parent, group] of nothingNew) {
    out.push({
      id: clusterId(parent),
      parent,
      outcome: 'nothing_new',
      label: `${group.length}×`,
      title: `${group.length} attempts from #${parent} found nothing new to try (no candidate was made): #${group.map((g) => g.id).join(', #')}`,
      best: false,
      onPath: false,
      count: group.length,
    });
  }
  return out;
}

const CPU_NOTE = 'CPU interpreter: for checking, not speed'; // speedups.CPU_NOTE on the server

export function treeMessage(tree: SearchTree, fileLabel: string, opts: ViewOptions = {}): ToWebview {
  const attempts = tree.attempts ?? tree.nodes.filter(isAttempt).length;
  const running = tree.running ?? tree.nodes.some(isRunning);
  const baselineMs = tree.baseline_ms ?? tree.nodes.find((n) => n.parent === null)?.runtime_ms;
  const parts = [
    typeof baselineMs === 'number' ? `${tree.baseline ?? 'your kernel'}: ${baselineMs.toPrecision(4)} ms` : '',
    `${attempts} attempt${attempts === 1 ? '' : 's'}${typeof tree.correct === 'number' ? `, ${tree.correct} correct` : ''}` +
      (tree.free ? `, ${tree.free} free (nothing new, or duplicates)` : ''),
    tree.best_text ?? '',
    running ? `running: ${tree.progress ?? ''}` : '',
    tree.cpu && !(tree.best_text ?? '').includes(CPU_NOTE) ? CPU_NOTE : '', // said once: the best's figure may say it
    tree.usage_text ?? '',
  ].filter(Boolean);
  const nodes = viewNodes(tree, opts);
  const layout = layoutTree(nodes);
  const spent = !running && tree.nodes.length > 0 && typeof tree.budget === 'number' && attempts >= tree.budget;
  return {
    type: 'tree',
    title: `${tree.kernel} — ${fileLabel}`,
    subtitle: parts.join(' · '),
    treeSvg: renderTreeSvg(nodes, layout),
    minimapSvg: renderMinimapSvg(nodes, layout),
    chartSvg: renderChartSvg(bestGainSeries(tree.nodes), tree.baseline ?? 'your kernel'),
    empty: tree.nodes.length === 0,
    error: tree.error,
    running,
    continueBy: spent ? tree.budget : undefined,
    nodeCount: tree.nodes.length,
  };
}

/** The detail panel for a node (from `stark/node`), or for a cluster of "nothing new" attempts. */
export function nodeDetail(reply: NodeDetailReply): NodeDetail {
  const runtime = typeof reply.runtime_ms === 'number' ? ` · ${reply.runtime_ms.toPrecision(4)} ms` : '';
  const figure = reply.parent === null ? 'the baseline' : reply.gain_text || reply.outcome.replace('_', ' ');
  return {
    id: reply.id,
    title: `#${reply.id} ${reply.kind.replace('_', ' + ')} · ${figure}${runtime}${reply.tokens_text ? ` · ${reply.tokens_text}` : ''}`,
    summary: [reply.summary, reply.eager_text ? `against the reference: ${reply.eager_text}` : '', reply.error, reply.profile]
      .filter((x) => x)
      .join('\n'),
    source: reply.source,
    diff: reply.diff,
    canApply: reply.can_apply,
    whyNot: reply.why_not,
  };
}

export function clusterDetail(tree: SearchTree, id: number, opts: ViewOptions = {}): NodeDetail | undefined {
  const { parent, kind } = clusterOf(id);
  const path = bestPath(tree);
  const { folds: subtrees, hidden } = folded(tree, path, opts);
  if (kind === 'fold') {
    const f = subtrees.get(parent);
    if (!f) return undefined;
    const byId = new Map(tree.nodes.map((n) => [n.id, n]));
    return {
      id,
      title: f.tops.length === 1 ? `${f.ids.length} attempts from #${f.root} on, folded`
        : `${f.ids.length} attempts in ${f.tops.length} subtrees from #${f.parent}, folded`,
      summary: (f.tops.length === 1
        ? `${foldSummary(f)}.\nNothing under #${f.root} was faster, so the subtree is drawn as one node; click it to open it:\n`
        : `${foldSummary(f)}.\nNothing under ${f.tops.map((t) => `#${t}`).join(', ')} was faster, so these ${f.tops.length} subtrees of ` +
          `#${f.parent} are drawn as one node; click it to open them:\n`) +
        f.ids.map((i) => byId.get(i)).filter((g): g is TreeNode => !!g)
          .map((g) => `#${g.id} (from #${g.parent}) ${g.outcome === 'failed' ? g.status.replace(/_/g, ' ') : g.outcome.replace('_', ' ')}` +
            `${g.label ? ` ${g.label}` : ''}: ${g.summary.split('\n')[0]}`)
          .join('\n'),
      source: '',
      diff: '(a folded subtree: open it to see each attempt\'s diff)',
      canApply: false,
      whyNot: 'nothing in it is faster',
    };
  }
  const group = clusters(tree, kind, path, hidden).get(parent) ?? [];
  if (group.length === 0) return undefined;
  if (kind === 'failed') {
    return {
      id,
      title: `${group.length} failed attempts from #${parent}`,
      summary: `None of these led to a repair or a further move, so they are drawn as one:\n` +
        group.map((g) => `#${g.id} ${g.status.replace('_', ' ')}: ${g.summary.split('\n')[0]}`).join('\n'),
      source: '',
      diff: '(failed attempts: open one with "stark show --node N" for its diff and error)',
      canApply: false,
      whyNot: 'failed attempts cannot be applied',
    };
  }
  return {
    id,
    title: `${group.length} attempts from #${parent}: nothing new to try`,
    summary: `The agents had no move from #${parent} that the tree did not already hold, so no candidate was made ` +
      `(attempts #${group.map((g) => g.id).join(', #')}). The search then expands other nodes.`,
    source: '',
    diff: '(no candidate: nothing to compare)',
    canApply: false,
    whyNot: 'no candidate was made',
  };
}
