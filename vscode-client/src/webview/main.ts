/**
 * Script of the search-tree webview (runs in the browser sandbox, bundled to
 * dist/webview.js). Draws what the host sends; reports clicks back.
 *
 * Pan and zoom move the tree's viewBox: drag to pan, wheel (or +/-) to zoom
 * about the pointer, "Fit" (or 0) to see it all. The view stays where the
 * user put it while the tree grows; until then it follows the whole tree, or,
 * where the whole tree would draw its nodes smaller than MIN_NODE_PX (a search
 * of a few hundred attempts), the best node at a size that can be read.
 */
import type { FromWebview, NodeDetail, ToWebview } from '../tree/messages';

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void };

const vscode = acquireVsCodeApi();
const $ = (id: string) => document.getElementById(id) as HTMLElement;
let selected: number | undefined;

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}
let view: Box | undefined; // undefined: follow the tree (autoBox)
let natural: Box = { x: 0, y: 0, w: 1, h: 1 };
const MIN_NODE_PX = 9; // a node's radius on screen below which the tree opens zoomed in, not fitted

/** The view while the user has not moved it: the whole tree, or a legible part of it around the best node. */
function autoBox(): Box {
  const s = svg();
  const pane = $('tree-pane').getBoundingClientRect();
  const circle = s?.querySelector('.best-node circle') ?? s?.querySelector('.root circle') ?? s?.querySelector('circle');
  const r = Number(circle?.getAttribute('r')) || 0;
  const fit = Math.min(pane.width / natural.w, pane.height / natural.h) || 1;
  if (!circle || !r || r * fit >= MIN_NODE_PX || !pane.width || !pane.height) return natural;
  const k = MIN_NODE_PX / r; // pixels per tree unit
  const w = Math.min(natural.w, pane.width / k);
  const h = Math.min(natural.h, pane.height / k);
  const cx = Number(circle.getAttribute('cx'));
  const cy = Number(circle.getAttribute('cy'));
  const x = Math.max(natural.x, Math.min(natural.x + natural.w - w, cx - w / 2));
  const y = Math.max(natural.y, Math.min(natural.y + natural.h - h, cy - h / 2));
  return { x, y, w, h };
}

const current = (): Box => view ?? autoBox();

function svg(): SVGSVGElement | null {
  return $('tree').querySelector('svg');
}

function applyView(): void {
  const s = svg();
  if (!s) return;
  const b = current();
  s.setAttribute('viewBox', `${b.x} ${b.y} ${b.w} ${b.h}`);
  $('zoom-level').textContent = b.w !== natural.w || b.h !== natural.h ? `${Math.round((natural.w / b.w) * 100)}%` : '';
}

/** Pixels per tree unit at the current view (the SVG keeps its aspect ratio, "meet"). */
function scale(): number {
  const pane = $('tree-pane').getBoundingClientRect();
  const b = current();
  return Math.min(pane.width / b.w, pane.height / b.h) || 1;
}

function zoom(factor: number, clientX?: number, clientY?: number): void {
  const b = { ...current() };
  const pane = $('tree-pane').getBoundingClientRect();
  const s = scale();
  // the tree point under the pointer (or the middle of what is shown) stays put
  const offX = (pane.width - b.w * s) / 2; // "xMidYMid meet": centred both ways
  const offY = (pane.height - b.h * s) / 2;
  const tx = clientX === undefined ? b.x + b.w / 2 : b.x + (clientX - pane.left - offX) / s;
  const ty = clientY === undefined ? b.y + b.h / 2 : b.y + (clientY - pane.top - offY) / s;
  const w = Math.min(natural.w * 4, Math.max(natural.w / 40, b.w / factor));
  const h = (b.h * w) / b.w;
  view = { x: tx - ((tx - b.x) * w) / b.w, y: ty - ((ty - b.y) * h) / b.h, w, h };
  applyView();
}

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

/** Below this height the chart folds away when a node is opened: the detail comes first. */
const ROOM_FOR_BOTH_PX = 520;

function showDetail(d: NodeDetail): void {
  const aside = document.querySelector('aside');
  if (aside && aside.clientHeight < ROOM_FOR_BOTH_PX) ($('chart-box') as HTMLDetailsElement).open = false;
  $('detail-placeholder').classList.add('hidden');
  $('detail-body').classList.remove('hidden');
  $('detail-title').textContent = d.title;
  $('detail-summary').textContent = d.summary;
  renderDiff($('detail-diff'), d.diff);
  $('detail-source').textContent = d.source || '(no source)';
  const apply = $('apply') as HTMLButtonElement;
  apply.disabled = !d.canApply;
  apply.setAttribute('aria-disabled', String(!d.canApply));
  apply.title = d.canApply ? 'Apply this candidate to the file (undo brings yours back)' : d.whyNot;
  apply.dataset.id = String(d.id);
  $('why-not').textContent = d.canApply ? '' : d.whyNot;
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const m = event.data;
  if (m.type === 'tree') {
    $('title').textContent = m.title;
    $('subtitle').textContent = m.error ?? (m.empty ? 'No search yet: run "STARK: Optimize kernel at cursor".' : m.subtitle);
    // The SVG is built by the extension from escaped text (src/tree/svg.ts).
    $('tree').innerHTML = m.treeSvg;
    const s = svg();
    if (s) natural = { x: 0, y: 0, w: Number(s.dataset.width) || 1, h: Number(s.dataset.height) || 1 };
    applyView();
    $('chart').innerHTML = m.chartSvg;
    $('stop').classList.toggle('hidden', !m.running);
    const cont = $('continue');
    cont.classList.toggle('hidden', !m.continueBy);
    cont.textContent = m.continueBy ? `Continue search (+${m.continueBy})` : 'Continue search';
    highlightSelection();
    if (selected !== undefined) vscode.postMessage({ type: 'select', id: selected });
  } else if (m.type === 'detail') {
    showDetail(m.detail);
  } else if (m.type === 'error') {
    $('subtitle').textContent = m.message;
  }
});

$('tree').addEventListener('click', (e) => {
  if (dragged) return;
  const g = (e.target as Element).closest('.node');
  if (g) select(Number(g.getAttribute('data-id')));
});
$('tree').addEventListener('keydown', (e) => {
  const g = (e.target as Element).closest('.node');
  if (g && (e.key === 'Enter' || e.key === ' ')) select(Number(g.getAttribute('data-id')));
});
document.addEventListener('keydown', (e) => {
  if ((e.target as Element).closest('pre, details')) return;
  if (e.key === '+' || e.key === '=') zoom(1.25);
  else if (e.key === '-') zoom(1 / 1.25);
  else if (e.key === '0') {
    view = { ...natural };
    applyView();
  }
});

// pan: drag with the mouse anywhere in the pane
let drag: { x: number; y: number; box: Box } | undefined;
let dragged = false;
$('tree-pane').addEventListener('mousedown', (e) => {
  if (e.button !== 0) return;
  drag = { x: e.clientX, y: e.clientY, box: { ...current() } };
  dragged = false;
});
window.addEventListener('mousemove', (e) => {
  if (!drag) return;
  const dx = e.clientX - drag.x;
  const dy = e.clientY - drag.y;
  if (!dragged && Math.abs(dx) + Math.abs(dy) < 4) return; // a click, not a drag
  dragged = true;
  $('tree-pane').classList.add('dragging');
  const s = scale();
  view = { ...drag.box, x: drag.box.x - dx / s, y: drag.box.y - dy / s };
  applyView();
});
window.addEventListener('mouseup', () => {
  drag = undefined;
  $('tree-pane').classList.remove('dragging');
  setTimeout(() => (dragged = false), 0);
});
$('tree-pane').addEventListener(
  'wheel',
  (e) => {
    e.preventDefault();
    zoom(Math.pow(1.2, -e.deltaY / 100), e.clientX, e.clientY);
  },
  { passive: false },
);
$('fit').addEventListener('click', () => {
  view = { ...natural }; // the whole tree, however small its nodes; the view then stays there
  applyView();
});
$('zoom-in').addEventListener('click', () => zoom(1.25));
$('zoom-out').addEventListener('click', () => zoom(1 / 1.25));
$('apply').addEventListener('click', () => {
  const id = Number(($('apply') as HTMLButtonElement).dataset.id);
  if (Number.isInteger(id)) vscode.postMessage({ type: 'apply', id });
});
$('stop').addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
$('continue').addEventListener('click', () => vscode.postMessage({ type: 'continue' }));
vscode.postMessage({ type: 'ready' });
