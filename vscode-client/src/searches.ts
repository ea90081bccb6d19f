/**
 * What the extension knows about searches: which are running and the best
 * speedup of each, for the status bar. Pure.
 *
 * A search counts as running from the moment the user starts it until the
 * server's tree shows no running node after at least one attempt finished,
 * or the user stops it.
 */
import { bestCandidate, formatSpeedup, isRunning } from './tree/outcome';
import type { SearchTree } from './tree/types';

export interface SearchState {
  uri: string;
  kernel: string;
  running: boolean;
  best: number | undefined;
  bestNodeId: number | undefined;
}

export function searchKey(uri: string, kernel: string): string {
  return `${kernel}@${uri}`;
}

export class Searches {
  private readonly states = new Map<string, SearchState>();
  private readonly pendingStart = new Set<string>();

  get(uri: string, kernel: string): SearchState | undefined {
    return this.states.get(searchKey(uri, kernel));
  }

  all(): SearchState[] {
    return [...this.states.values()];
  }

  private ensure(uri: string, kernel: string): SearchState {
    const k = searchKey(uri, kernel);
    let s = this.states.get(k);
    if (!s) {
      s = { uri, kernel, running: false, best: undefined, bestNodeId: undefined };
      this.states.set(k, s);
    }
    return s;
  }

  started(uri: string, kernel: string): void {
    this.ensure(uri, kernel).running = true;
    this.pendingStart.add(searchKey(uri, kernel));
  }

  stopped(uri: string, kernel: string): void {
    this.ensure(uri, kernel).running = false;
    this.pendingStart.delete(searchKey(uri, kernel));
  }

  /** The optimize request returned; if the server's tree says nothing runs, the search is over. */
  requestFinished(uri: string, kernel: string, tree: SearchTree | undefined): void {
    this.pendingStart.delete(searchKey(uri, kernel));
    if (tree) this.treeUpdated(uri, tree);
  }

  treeUpdated(uri: string, tree: SearchTree): void {
    const s = this.ensure(uri, tree.kernel);
    const best = bestCandidate(tree.nodes, tree.best);
    s.best = best?.speedup ?? undefined;
    s.bestNodeId = best?.id;
    const anyRunning = tree.running ?? tree.nodes.some(isRunning);
    const k = searchKey(uri, tree.kernel);
    // While the start request is in flight the tree may not show running nodes yet.
    s.running = anyRunning || this.pendingStart.has(k);
  }

  runningCount(): number {
    return this.all().filter((s) => s.running).length;
  }

  bestOverall(): SearchState | undefined {
    let best: SearchState | undefined;
    for (const s of this.all()) if (s.best !== undefined && (!best || s.best > (best.best as number))) best = s;
    return best;
  }
}

export interface StatusText {
  text: string;
  tooltip: string;
}

export function statusText(searches: Searches): StatusText {
  const running = searches.runningCount();
  const best = searches.bestOverall();
  const parts: string[] = [running > 0 ? `$(sync~spin) STARK: ${running} running` : '$(rocket) STARK'];
  if (best?.best !== undefined) parts.push(`best ${formatSpeedup(best.best)}`);
  const tooltipLines = searches
    .all()
    .map((s) => `${s.kernel}: ${s.running ? 'running' : 'idle'}${s.best !== undefined ? `, best ${formatSpeedup(s.best)}` : ''}`);
  return {
    text: parts.join(' · '),
    tooltip: (tooltipLines.length ? tooltipLines.join('\n') + '\n' : 'No searches yet.\n') + 'Click to show the search tree.',
  };
}
