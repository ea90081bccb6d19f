/**
 * Script of the search-tree webview (runs in the browser sandbox, bundled to
 * dist/webview.js). Draws what the host sends; reports clicks back.
 */
import type { FromWebview, ToWebview } from '../tree/messages';

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void };

const vscode = acquireVsCodeApi();
const $ = (id: string) => document.getElementById(id) as HTMLElement;
let selected: number | undefined;

function highlightSelection(): void {
  document.querySelectorAll('#tree .node').forEach((g) => {
    g.classList.toggle('selected', Number(g.getAttribute('data-id')) === selected);
  });
}

function select(id: number): void {
  selected = id;
  highlightSelection();
  vscode.postMessage({ type: 'select', id });
}

function renderDiff(pre: HTMLElement, diff: string): void {
  pre.textContent = '';
  for (const line of diff.split('\n')) {
    const span = document.createElement('span');
    span.className = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : '';
    span.textContent = line + '\n';
    pre.appendChild(span);
  }
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const m = event.data;
  if (m.type === 'tree') {
    $('title').textContent = m.title;
    $('subtitle').textContent = m.error ?? (m.empty ? 'No search yet: run "STARK: Optimize kernel at cursor".' : m.subtitle);
    // The SVG is built by the extension from escaped text (src/tree/svg.ts).
    $('tree').innerHTML = m.treeSvg;
    $('chart').innerHTML = m.chartSvg;
    highlightSelection();
    if (selected !== undefined) vscode.postMessage({ type: 'select', id: selected });
  } else if (m.type === 'detail') {
    const d = m.detail;
    $('detail').classList.remove('hidden');
    $('detail-title').textContent = d.title;
    $('detail-summary').textContent = d.summary;
    renderDiff($('detail-diff'), d.diff);
    $('detail-source').textContent = d.source;
    const apply = $('apply') as HTMLButtonElement;
    apply.disabled = !d.canApply;
    apply.dataset.id = String(d.id);
  } else if (m.type === 'error') {
    $('subtitle').textContent = m.message;
  }
});

$('tree').addEventListener('click', (e) => {
  const g = (e.target as Element).closest('.node');
  if (g) select(Number(g.getAttribute('data-id')));
});
$('tree').addEventListener('keydown', (e) => {
  const g = (e.target as Element).closest('.node');
  if (g && (e.key === 'Enter' || e.key === ' ')) select(Number(g.getAttribute('data-id')));
});
$('apply').addEventListener('click', () => {
  const id = Number(($('apply') as HTMLButtonElement).dataset.id);
  if (Number.isInteger(id)) vscode.postMessage({ type: 'apply', id });
});
vscode.postMessage({ type: 'ready' });
