/**
 * Renders the search tree and the "best so far" chart as inline SVG strings. Pure.
 * Every piece of text from the server is escaped.
 *
 * The tree's SVG has a viewBox and fills its pane: the webview fits it, and
 * pans and zooms by moving that viewBox, so a tree of 200 nodes is as usable
 * as one of 5. Past ``COMPACT_AT`` nodes the circles are smaller and only the
 * best path carries its figure inside; every node keeps its tooltip.
 *
 * A folded subtree (fold.ts) is a ring of its outcomes' shares with its
 * number of attempts inside; the top of a subtree the user opened carries a
 * small "−" toggle that folds it again.
 */
import { ticks, type ChartPoint } from './chart';
import type { TreeLayout } from './layout';
import { ratioText } from './speedups';
import type { Outcome } from './types';
import type { ViewNode } from './view-model';

export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

export const COMPACT_AT = 40;
const FULL = { col: 84, row: 70, r: 22, pad: 30 };
const COMPACT = { col: 34, row: 54, r: 11, pad: 20 };

export function treeGeometry(count: number): typeof FULL {
  return count > COMPACT_AT ? COMPACT : FULL;
}

/** The order a fold's ring shows its outcomes in, clockwise from the top. */
const RING: Outcome[] = ['failed', 'slower', 'abandoned', 'nothing_new'];

/** A folded subtree's ring: one dashed stroke per outcome, its share of the circle. */
export function foldRing(counts: Partial<Record<Outcome, number>>, cx: number, cy: number, r: number): string {
  const total = RING.reduce((a, o) => a + (counts[o] ?? 0), 0);
  const rm = r * 0.78; // the ring's middle: from 0.56 r to r
  const circ = 2 * Math.PI * rm;
  let start = 0;
  const slices: string[] = [];
  for (const o of RING) {
    const k = counts[o] ?? 0;
    if (!k || !total) continue;
    const len = (k / total) * circ;
    slices.push(
      `<circle class="slice ${o.replace('_', '-')}" cx="${cx}" cy="${cy}" r="${rm.toFixed(2)}" stroke-width="${(r * 0.44).toFixed(2)}" ` +
        `stroke-dasharray="${len.toFixed(2)} ${(circ - len).toFixed(2)}" stroke-dashoffset="${(-start + circ / 4).toFixed(2)}"/>`,
    );
    start += len;
  }
  return (
    `<circle class="fold-back" cx="${cx}" cy="${cy}" r="${r}"/>` +
    slices.join('') +
    `<circle class="hole" cx="${cx}" cy="${cy}" r="${(r * 0.56).toFixed(2)}"/>`
  );
}

/** Where each node's centre is drawn, and the whole drawing's size (tree units: the SVG's viewBox). */
export function placement(count: number, layout: TreeLayout): { pos: Map<number, { cx: number; cy: number }>; width: number; height: number } {
  const g = treeGeometry(count);
  const pos = new Map(layout.nodes.map((p) => [p.id, { cx: g.pad + g.r + p.x * g.col, cy: g.pad + g.r + p.depth * g.row }]));
  const width = g.pad * 2 + g.r * 2 + Math.max(0, layout.columns - 1) * g.col;
  const height = g.pad * 2 + g.r * 2 + layout.depth * g.row;
  return { pos, width, height };
}

/**
 * The minimap: the whole tree in the same units as the tree's SVG, each node
 * a dot coloured by its outcome (a zero-length stroke with round caps, a few
 * pixels wide whatever the minimap's scale), the best path a line over the
 * faint edges, and ``rect.mini-view``, which the webview moves to show what
 * the pane shows. The webview sizes it (minimap.ts).
 */
export function renderMinimapSvg(nodes: readonly ViewNode[], layout: TreeLayout): string {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const { pos, width, height } = placement(nodes.length, layout);
  const f = (v: number) => String(Math.round(v * 10) / 10);
  let edges = '';
  let path = '';
  for (const e of layout.edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) continue;
    const seg = `M${f(a.cx)},${f(a.cy)}L${f(b.cx)},${f(b.cy)}`;
    if (byId.get(e.from)?.onPath && byId.get(e.to)?.onPath) path += seg;
    else edges += seg;
  }
  const dots = new Map<string, string>();
  let best = '';
  for (const p of layout.nodes) {
    const n = byId.get(p.id);
    const c = pos.get(p.id);
    if (!n || !c) continue;
    const cls = `${n.outcome.replace('_', '-')}${n.onPath ? ' best' : ''}`;
    dots.set(cls, (dots.get(cls) ?? '') + `M${f(c.cx)},${f(c.cy)}h0`);
    if (n.best) best = `<path class="mini-dot best-node" d="M${f(c.cx)},${f(c.cy)}h0"/>`;
  }
  const ne = ' vector-effect="non-scaling-stroke"';
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="minimap-svg" viewBox="0 0 ${width} ${height}" preserveAspectRatio="xMidYMid meet" aria-hidden="true">` +
    `<rect class="mini-back" x="0" y="0" width="${width}" height="${height}"/>` +
    (edges ? `<path class="mini-edge" d="${edges}"${ne}/>` : '') +
    (path ? `<path class="mini-path" d="${path}"${ne}/>` : '') +
    [...dots].map(([cls, d]) => `<path class="mini-dot ${cls}" d="${d}"${ne}/>`).join('') +
    best.replace('"/>', `"${ne}/>`) +
    `<rect class="mini-view" x="0" y="0" width="${width}" height="${height}"${ne}/>` +
    `</svg>`
  );
}

export function renderTreeSvg(nodes: readonly ViewNode[], layout: TreeLayout): string {
  const g = treeGeometry(nodes.length);
  const compact = g === COMPACT;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const { pos, width, height } = placement(nodes.length, layout);

  const edges = layout.edges.map((e) => {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) return '';
    const onPath = byId.get(e.from)?.onPath && byId.get(e.to)?.onPath;
    return `<line class="${onPath ? 'edge best' : 'edge'}" x1="${a.cx}" y1="${a.cy}" x2="${b.cx}" y2="${b.cy}"/>`;
  });
  const circles = layout.nodes.map((p) => {
    const n = byId.get(p.id);
    const c = pos.get(p.id);
    if (!n || !c) return '';
    const kind = n.fold ? 'folded' : n.count ? 'cluster' : '';
    const cls = ['node', n.outcome.replace('_', '-'), n.onPath ? 'best' : '', n.best ? 'best-node' : '', kind, n.expanded ? 'expanded' : '']
      .filter(Boolean)
      .join(' ');
    const r = n.outcome === 'nothing_new' && !n.count ? g.r * 0.55 : g.r;
    const inside = !compact || n.onPath || n.count || n.outcome === 'root';
    const label = inside && n.label
      ? `<text${n.fold ? ' class="count"' : ''} x="${c.cx}" y="${c.cy + (compact ? 3 : 4)}" text-anchor="middle">${escapeXml(n.label)}</text>`
      : '';
    const id = n.id >= 0 && !compact ? `<text class="id" x="${c.cx}" y="${c.cy + g.r + 12}" text-anchor="middle">#${n.id}</text>` : '';
    const shape = n.fold ? foldRing(n.fold, c.cx, c.cy, r) : `<circle cx="${c.cx}" cy="${c.cy}" r="${r}"/>`;
    // the toggle that folds an opened subtree again: a small button on its top node's upper right
    const tr = g.r * 0.6;
    const tx = c.cx + g.r * 0.95;
    const ty = c.cy - g.r * 0.95;
    const toggle = n.expanded
      ? `<g class="fold-toggle" data-fold="${n.id}" tabindex="0" role="button" aria-label="Fold the subtree under #${n.id}">` +
        `<title>Fold the subtree under #${n.id} again</title>` +
        `<circle cx="${tx.toFixed(2)}" cy="${ty.toFixed(2)}" r="${tr.toFixed(2)}"/>` +
        `<path d="M${(tx - tr * 0.55).toFixed(2)},${ty.toFixed(2)}H${(tx + tr * 0.55).toFixed(2)}"/></g>`
      : '';
    const aria = `${n.title.split('\n')[0]}${n.fold ? ' (folded: press Enter to open)' : ''}`;
    return (
      `<g class="${cls}" data-id="${n.id}"${n.foldTop !== undefined ? ` data-fold-top="${n.foldTop}" data-fold-extent="${(n.foldDepth ?? 0) * g.row}"` : ''}` +
      ` tabindex="0" role="button" ` +
      `aria-label="${escapeXml(aria)}"` +
      `${n.fold ? ' aria-expanded="false"' : n.expanded ? ' aria-expanded="true"' : ''}>` +
      `<title>${escapeXml(n.title)}</title>` +
      shape +
      label +
      id +
      `</g>` +
      toggle
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="tree${compact ? ' compact' : ''}" viewBox="0 0 ${width} ${height}" ` +
    `data-width="${width}" data-height="${height}" preserveAspectRatio="xMidYMid meet">` +
    edges.join('') +
    circles.join('') +
    `</svg>`
  );
}

const CHART = { width: 360, height: 190, left: 56, right: 14, top: 12, bottom: 40, tickGap: 14 };

export function renderChartSvg(points: readonly ChartPoint[], baseline: string): string {
  const { width, height, left, right, top, bottom } = CHART;
  const maxX = Math.max(1, ...points.map((p) => p.attempt));
  const maxY = Math.max(1.5, ...points.map((p) => p.best)) * 1.1;
  const plotH = height - top - bottom;
  const sx = (x: number) => left + (x / maxX) * (width - left - right);
  const sy = (y: number) => height - bottom - (y / maxY) * plotH;
  // a step line: the best only changes at an attempt
  let d = '';
  points.forEach((p, i) => {
    if (i === 0) d += `M${sx(p.attempt).toFixed(1)},${sy(p.best).toFixed(1)}`;
    else d += `H${sx(p.attempt).toFixed(1)}V${sy(p.best).toFixed(1)}`;
  });
  const last = points[points.length - 1];
  const best = Math.max(...points.map((p) => p.best));
  const yTicks = ticks(0, maxY, plotH, CHART.tickGap, best > 1 ? [1, best] : [1]);
  const yLabels = yTicks
    .map((v) => `<text class="tick" x="${left - 5}" y="${(sy(v) + 3.5).toFixed(1)}" text-anchor="end">${v === 0 ? '0' : ratioText(v)}</text>`)
    .join('');
  const xTicks = ticks(0, maxX, width - left - right, 28).filter((v) => Number.isInteger(v));
  const xLabels = xTicks
    .map((v) => `<text class="tick" x="${sx(v).toFixed(1)}" y="${height - bottom + 14}" text-anchor="middle">${v}</text>`)
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<line class="axis" x1="${left}" y1="${sy(0)}" x2="${width - right}" y2="${sy(0)}"/>` +
    `<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${sy(0)}"/>` +
    `<line class="baseline" x1="${left}" y1="${sy(1).toFixed(1)}" x2="${width - right}" y2="${sy(1).toFixed(1)}"/>` +
    yLabels +
    xLabels +
    `<text class="caption" x="${(left + width - right) / 2}" y="${height - 6}" text-anchor="middle">attempts · best so far, × ${escapeXml(baseline)}</text>` +
    `<path class="curve" d="${d}"/>` +
    (last ? `<circle class="last" cx="${sx(last.attempt).toFixed(1)}" cy="${sy(last.best).toFixed(1)}" r="3"/>` : '') +
    `</svg>`
  );
}
