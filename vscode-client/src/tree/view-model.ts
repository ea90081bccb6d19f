/**
 * Turns a `stark/tree` answer into what the webview shows. Pure.
 */
import { bestSpeedupSeries } from './chart';
import { diffLines, formatDiff } from './diff';
import { layoutTree } from './layout';
import type { NodeDetail, ToWebview } from './messages';
import { baselineSpeedup, bestCandidate, formatSpeedup, isMeasured, isRunning } from './outcome';
import { renderChartSvg, renderTreeSvg } from './svg';
import type { SearchTree } from './types';

export function treeMessage(tree: SearchTree, fileLabel: string): ToWebview {
  const best = bestCandidate(tree.nodes, tree.best);
  const root = tree.nodes.find((n) => n.parent === null);
  const yours = root && isMeasured(root) ? ` · your kernel ${formatSpeedup(baselineSpeedup(tree.nodes))}` : '';
  const attempts = tree.nodes.filter((n) => n.parent !== null && !isRunning(n) && n.status !== 'abandoned').length;
  const running = tree.running ?? tree.nodes.some(isRunning);
  const baselineMs = tree.baseline_ms ?? tree.nodes.find((n) => n.parent === null)?.runtime_ms;
  const baseline = typeof baselineMs === 'number' ? `baseline ${baselineMs.toFixed(3)} ms · ` : '';
  const subtitle =
    `${baseline}${attempts} attempt${attempts === 1 ? '' : 's'} · ` +
    (best ? `best ${formatSpeedup(best.speedup)} (#${best.id})` : 'nothing faster yet') +
    yours +
    (running ? ` · running${tree.progress ? `: ${tree.progress}` : ''}` : '');
  return {
    type: 'tree',
    title: `${tree.kernel} — ${fileLabel}`,
    subtitle,
    treeSvg: renderTreeSvg(tree.nodes, layoutTree(tree.nodes), tree.best),
    chartSvg: renderChartSvg(bestSpeedupSeries(tree.nodes)),
    empty: tree.nodes.length === 0,
    error: tree.error,
  };
}

export function nodeDetail(tree: SearchTree, id: number): NodeDetail | undefined {
  const n = tree.nodes.find((x) => x.id === id);
  if (!n) return undefined;
  const parent = n.parent === null ? undefined : tree.nodes.find((x) => x.id === n.parent);
  const runtime = typeof n.runtime_ms === 'number' ? ` · ${n.runtime_ms.toFixed(3)} ms` : '';
  return {
    id: n.id,
    title: `#${n.id} ${n.kind} · ${n.status} · ${formatSpeedup(n.speedup)}${runtime}`,
    summary: [n.summary, n.error, n.profile].filter((x) => x).join('\n'),
    source: n.source,
    diff: parent ? formatDiff(diffLines(parent.source, n.source)) || '(same source as the parent)' : '(root: the original kernel)',
    canApply: n.parent !== null && isMeasured(n),
  };
}
