/** Messages between the extension host and the search-tree webview. */

export interface NodeDetail {
  id: number;
  title: string;
  summary: string;
  source: string;
  diff: string;
  canApply: boolean;
  /** Why "Apply" is disabled ("" when it is enabled). */
  whyNot: string;
}

export type ToWebview =
  | {
      type: 'tree';
      title: string;
      subtitle: string;
      treeSvg: string;
      /** The whole tree in small (src/tree/svg.ts's renderMinimapSvg); the webview shows it when the pane does not. */
      minimapSvg: string;
      chartSvg: string;
      empty: boolean;
      error?: string;
      running: boolean;
      /** The budget is spent: offer "Continue search (+N)". */
      continueBy?: number;
      nodeCount: number;
    }
  | { type: 'detail'; detail: NodeDetail }
  | { type: 'error'; message: string };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'select'; id: number }
  /** Open (or fold again) the folded subtree whose top node is ``id``. */
  | { type: 'fold'; id: number; open: boolean }
  | { type: 'apply'; id: number }
  | { type: 'stop' }
  | { type: 'continue' };

export function isFromWebview(m: unknown): m is FromWebview {
  if (typeof m !== 'object' || m === null) return false;
  const t = (m as { type?: unknown }).type;
  if (t === 'ready' || t === 'stop' || t === 'continue') return true;
  if (t === 'fold' && typeof (m as { open?: unknown }).open !== 'boolean') return false;
  return (t === 'select' || t === 'apply' || t === 'fold') && Number.isInteger((m as { id?: unknown }).id);
}
