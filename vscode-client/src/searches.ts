/**
 * What the extension knows about searches, for the status bar and "Stop":
 * which run (the server says so in `stark/searches`, after every start, stop,
 * end and rename, so a search is always named by its file's current uri) and
 * the best result of each file's tree. Pure.
 */
import type { RunningSearch, SearchTree } from './tree/types';

export interface KnownTree {
  uri: string;
  kernel: string;
  bestText: string | undefined; // "best 2.35× your kernel (#14)"
  bestGain: number | undefined;
}

export function searchKey(uri: string, kernel: string): string {
  return `${kernel}@${uri}`;
}

export class Searches {
  private runningNow: RunningSearch[] = [];
  private readonly trees = new Map<string, KnownTree>();

  /** `stark/searches`: the whole list of what runs. */
  setRunning(list: readonly RunningSearch[]): void {
    this.runningNow = [...list];
  }

  running(): RunningSearch[] {
    return [...this.runningNow];
  }

  isRunning(uri: string): boolean {
    return this.runningNow.some((s) => s.uri === uri);
  }

  treeUpdated(uri: string, tree: SearchTree): void {
    const best = tree.nodes.find((n) => n.id === tree.best && n.parent !== null);
    this.trees.set(uri, { uri, kernel: tree.kernel, bestText: best ? tree.best_text : undefined, bestGain: best?.gain ?? undefined });
  }

  /** A file removed from disk: its tree's figures are no longer shown (the server clears its diagnostics too). */
  forget(uri: string): void {
    this.trees.delete(uri);
  }

  known(): KnownTree[] {
    return [...this.trees.values()];
  }

  /** The tree of one file (the active editor's), if the extension has seen it. */
  of(uri: string | undefined): KnownTree | undefined {
    return uri === undefined ? undefined : this.trees.get(uri);
  }

  bestOverall(): KnownTree | undefined {
    let best: KnownTree | undefined;
    for (const t of this.trees.values()) {
      if (t.bestGain !== undefined && (!best || t.bestGain > (best.bestGain as number))) best = t;
    }
    return best;
  }
}

export interface StatusText {
  text: string;
  tooltip: string;
}

/**
 * The status bar's words: what runs, each search named; otherwise the active file's kernel and its best.
 * Figures of different kernels are never compared (a "best over every search" named no kernel).
 */
export function statusText(searches: Searches, activeUri?: string): StatusText {
  const running = searches.running();
  const mine = searches.of(activeUri);
  let text: string;
  if (running.length === 1) text = `$(sync~spin) STARK: ${running[0].stopping ? 'stopping' : 'optimizing'} ${running[0].kernel}`;
  else if (running.length > 1) text = `$(sync~spin) STARK: ${running.length} searches (${running.map((s) => s.kernel).join(', ')})`;
  else text = '$(rocket) STARK';
  if (!running.length && mine?.bestText) text += ` · ${mine.kernel}: ${mine.bestText.replace(/ \(#\d+\)$/, '')}`;
  const lines = [
    ...running.map((s) => `${s.kernel}: ${s.stopping ? 'stopping' : s.progress}`),
    ...searches
      .known()
      .filter((t) => !searches.isRunning(t.uri) && t.bestText)
      .map((t) => `${t.kernel}: ${t.bestText}`),
  ];
  return {
    text,
    tooltip: (lines.length ? lines.join('\n') + '\n' : 'No searches yet.\n') + 'Click to show the search tree.',
  };
}
