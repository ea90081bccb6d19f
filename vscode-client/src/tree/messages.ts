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
  | { type: 'apply'; id: number }
  | { type: 'stop' }
  | { type: 'continue' };

export function isFromWebview(m: unknown): m is FromWebview {
  if (typeof m !== 'object' || m === null) return false;
  const t = (m as { type?: unknown }).type;
  if (t === 'ready' || t === 'stop' || t === 'continue') return true;
  return (t === 'select' || t === 'apply') && Number.isInteger((m as { id?: unknown }).id);
}
