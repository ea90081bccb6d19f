/**
 * Script of the search-tree webview (runs in the browser sandbox, bundled to
 * dist/webview.js). Draws what the host sends; reports clicks back.
 *
 * Pan and zoom move the tree's viewBox: drag to pan, wheel (or +/-) to zoom
 * about the pointer, "Fit" (or 0) to see it all. The view stays where the
 * user put it while the tree grows; until then it follows the whole tree, or,
 * where the whole tree would draw its nodes smaller than MIN_NODE_PX (a search
 * of a few hundred attempts), the best node at a size that can be read.
 *
 * While the pane shows only part of the tree, a minimap in its corner shows
 * all of it and a rectangle for the part shown: click or drag in it (or focus
 * it and use the arrow keys) to move the view. A folded subtree opens when
 * clicked, and its top node's "−" folds it again (the host redraws the tree);
 * the node clicked stays where it was on screen (moved up only as far as the
 * opened rows need).
 */
import type { FromWebview, NodeDetail, ToWebview } from '../tree/messages';
import { anchorView, centreOn, minimapFor, minimapPoint, panBy, revealBelow, type Box } from '../tree/minimap';

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void };

const vscode = acquireVsCodeApi();
const $ = (id: string) => document.getElementById(id) as HTMLElement;
let selected: number | undefined;

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
  updateMinimap(b);
}

/** Shows the minimap while the pane does not show the whole tree, its rectangle on what it shows. */
function updateMinimap(b: Box): void {
  const box = $('minimap');
  const pane = $('tree-pane').getBoundingClientRect();
  const m = box.firstElementChild ? minimapFor(b, natural, { w: pane.width, h: pane.height }) : undefined;
  if (!m) {
    if (box === document.activeElement) ($('tree-pane').querySelector('.node') as HTMLElement | null)?.focus();
    box.classList.add('hidden');
    return;
  }
  box.classList.remove('hidden');
  box.style.width = `${m.size.w}px`;
  box.style.height = `${m.size.h}px`;
  const rect = box.querySelector('.mini-view');
  if (!rect) return;
  rect.setAttribute('x', String(m.rect.x));
  rect.setAttribute('y', String(m.rect.y));
  rect.setAttribute('width', String(m.rect.w));
  rect.setAttribute('height', String(m.rect.h));
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

/**
 * A fold being opened or closed: its top node, where it was (pane pixels) in the view it was in, and
 * how far the opened subtree goes below its top (tree units).
 */
let anchor: { top: number; at: { x: number; y: number }; box: Box; extent: number } | undefined;

function fold(top: number, open: boolean, el: Element): void {
  const pane = $('tree-pane').getBoundingClientRect();
  const r = (el.querySelector('circle') ?? el).getBoundingClientRect();
  const extent = open ? Number(el.getAttribute('data-fold-extent')) || 0 : 0;
  anchor = { top, at: { x: r.left + r.width / 2 - pane.left, y: r.top + r.height / 2 - pane.top }, box: { ...current() }, extent };
  if (open) {
    selected = top; // its detail shows once it is drawn
    highlightSelection();
  }
  vscode.postMessage({ type: 'fold', id: top, open });
}

/**
 * After a fold opened or closed: the view that keeps its node where it was, moved up if the opened
 * subtree would go past the pane's bottom edge.
 */
function keepAnchor(): void {
  const a = anchor;
  anchor = undefined;
  const s = svg();
  const el = s?.querySelector(`[data-id="${a?.top}"] circle, [data-fold-top="${a?.top}"] circle`);
  if (!a || !el) return;
  const pane = $('tree-pane').getBoundingClientRect();
  const size = { w: pane.width, h: pane.height };
  const p = { x: Number(el.getAttribute('cx')), y: Number(el.getAttribute('cy')) };
  view = anchorView(a.box, size, p, a.at);
  if (a.extent > 0) view = revealBelow(view, size, p.y, a.extent, 2 * (Number(el.getAttribute('r')) || 10));
  const g = el.closest('[data-id]') as HTMLElement | null;
  g?.focus({ preventScroll: true });
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
    $('minimap').innerHTML = m.minimapSvg;
    const s = svg();
    if (s) natural = { x: 0, y: 0, w: Number(s.dataset.width) || 1, h: Number(s.dataset.height) || 1 };
    if (anchor) keepAnchor();
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

/** A click or Enter on the tree: fold a subtree again, open a folded one, or select a node. */
function activate(target: Element): boolean {
  const toggle = target.closest('.fold-toggle');
  if (toggle) {
    const top = Number(toggle.getAttribute('data-fold'));
    const node = svg()?.querySelector(`.node[data-id="${top}"]`);
    fold(top, false, node ?? toggle);
    return true;
  }
  const g = target.closest('.node');
  if (!g) return false;
  if (g.hasAttribute('data-fold-top')) fold(Number(g.getAttribute('data-fold-top')), true, g);
  else select(Number(g.getAttribute('data-id')));
  return true;
}
$('tree').addEventListener('click', (e) => {
  if (!dragged) activate(e.target as Element);
});
$('tree').addEventListener('keydown', (e) => {
  if ((e.key === 'Enter' || e.key === ' ') && activate(e.target as Element)) e.preventDefault();
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

// the minimap: click or drag to centre the view there; arrow keys move it, Home goes to the best node
let miniDrag = false;
function miniMove(e: MouseEvent): void {
  const s = $('minimap').querySelector('svg');
  if (!s) return;
  view = centreOn(current(), minimapPoint(e.clientX, e.clientY, s.getBoundingClientRect(), natural));
  applyView();
}
$('minimap').addEventListener('mousedown', (e) => {
  if (e.button !== 0) return;
  e.stopPropagation(); // not a pan of the tree
  e.preventDefault();
  miniDrag = true;
  miniMove(e);
});
$('minimap').addEventListener('click', (e) => e.stopPropagation());
$('minimap').addEventListener(
  'wheel',
  (e) => {
    e.preventDefault();
    e.stopPropagation();
    zoom(Math.pow(1.2, -e.deltaY / 100)); // about the middle of the view
  },
  { passive: false },
);
$('minimap').addEventListener('keydown', (e) => {
  const step: Record<string, [number, number]> = { ArrowLeft: [-0.25, 0], ArrowRight: [0.25, 0], ArrowUp: [0, -0.25], ArrowDown: [0, 0.25] };
  if (e.key in step) {
    view = panBy(current(), ...step[e.key]);
  } else if (e.key === 'Home') {
    const c = svg()?.querySelector('.best-node circle') ?? svg()?.querySelector('.root circle');
    if (!c) return;
    view = centreOn(current(), { x: Number(c.getAttribute('cx')), y: Number(c.getAttribute('cy')) });
  } else return;
  e.preventDefault();
  applyView();
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
  if (miniDrag) {
    miniMove(e);
    return;
  }
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
  miniDrag = false;
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
window.addEventListener('resize', () => applyView());
vscode.postMessage({ type: 'ready' });
