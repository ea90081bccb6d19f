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
 * tree is then the attempts that mattered.
 */
import { bestGainSeries } from './chart';
import { layoutTree } from './layout';
import type { NodeDetail, ToWebview } from './messages';
import { bestCandidate, isAttempt, isRunning, pathToRoot } from './outcome';
import { renderChartSvg, renderTreeSvg } from './svg';
import type { NodeDetailReply, Outcome, SearchTree, TreeNode } from './types';

export interface ViewNode {
  id: number; // a cluster's id is -(its parent's id) - 1
  parent: number | null;
  outcome: Outcome;
  label: string; // inside the circle
  title: string; // the tooltip
  best: boolean; // the best node
  onPath: boolean; // on the path from the root to the best node
  count?: number; // a cluster: how many attempts it stands for
}

export type ClusterKind = 'nothing_new' | 'failed';

/** A cluster's id: negative, odd for "nothing new", even for failed leaves. */
export const clusterId = (parent: number, kind: ClusterKind = 'nothing_new') =>
  kind === 'nothing_new' ? -(2 * parent + 1) : -(2 * parent + 2);

/** The parent and kind of a cluster's id (``clusterId``'s inverse). */
export function clusterOf(id: number): { parent: number; kind: ClusterKind } {
  const n = -id;
  return n % 2 === 1 ? { parent: (n - 1) / 2, kind: 'nothing_new' } : { parent: (n - 2) / 2, kind: 'failed' };
}

/** Each parent's children of ``kind`` that are drawn as one cluster (two or more of them). */
function clusters(tree: SearchTree, kind: ClusterKind, keep: Set<number>): Map<number, TreeNode[]> {
  const parents = new Set(tree.nodes.map((n) => n.parent));
  const groups = new Map<number, TreeNode[]>();
  for (const n of tree.nodes) {
    if (n.parent === null || n.outcome !== kind || keep.has(n.id)) continue;
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

export function viewNodes(tree: SearchTree): ViewNode[] {
  const best = bestCandidate(tree.nodes, tree.best);
  const path = bestPath(tree);
  const nothingNew = clusters(tree, 'nothing_new', path);
  const failed = clusters(tree, 'failed', path);
  const inCluster = new Set([...nothingNew.values(), ...failed.values()].flat().map((n) => n.id));
  const out: ViewNode[] = [];
  for (const n of tree.nodes) {
    if (inCluster.has(n.id)) continue; // drawn as its parent's cluster
    out.push({
      id: n.id,
      parent: n.parent,
      outcome: n.outcome,
      label: n.parent === null ? 'base' : n.outcome === 'nothing_new' ? '·' : n.label || '',
      title: title(n),
      best: n.id === best?.id,
      onPath: path.has(n.id),
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

export function treeMessage(tree: SearchTree, fileLabel: string): ToWebview {
  const attempts = tree.attempts ?? tree.nodes.filter(isAttempt).length;
  const running = tree.running ?? tree.nodes.some(isRunning);
  const baselineMs = tree.baseline_ms ?? tree.nodes.find((n) => n.parent === null)?.runtime_ms;
  const parts = [
    typeof baselineMs === 'number' ? `${tree.baseline ?? 'your kernel'}: ${baselineMs.toPrecision(4)} ms` : '',
    `${attempts} attempt${attempts === 1 ? '' : 's'}${typeof tree.correct === 'number' ? `, ${tree.correct} correct` : ''}` +
      (tree.free ? `, ${tree.free} free (nothing new, or duplicates)` : ''),
    tree.best_text ?? '',
    running ? `running: ${tree.progress ?? ''}` : '',
    tree.cpu ? 'CPU interpreter: for checking, not speed' : '',
    tree.usage_text ?? '',
  ].filter(Boolean);
  const nodes = viewNodes(tree);
  const spent = !running && tree.nodes.length > 0 && typeof tree.budget === 'number' && attempts >= tree.budget;
  return {
    type: 'tree',
    title: `${tree.kernel} — ${fileLabel}`,
    subtitle: parts.join(' · '),
    treeSvg: renderTreeSvg(nodes, layoutTree(nodes)),
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

export function clusterDetail(tree: SearchTree, id: number): NodeDetail | undefined {
  const { parent, kind } = clusterOf(id);
  const group = clusters(tree, kind, bestPath(tree)).get(parent) ?? [];
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
