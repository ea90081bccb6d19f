/**
 * Renders the search tree and the "best so far" chart as inline SVG strings. Pure.
 * Every piece of text from the server is escaped.
 *
 * The tree's SVG has a viewBox and fills its pane: the webview fits it, and
 * pans and zooms by moving that viewBox, so a tree of 200 nodes is as usable
 * as one of 5. Past ``COMPACT_AT`` nodes the circles are smaller and only the
 * best path carries its figure inside; every node keeps its tooltip.
 */
import { ticks, type ChartPoint } from './chart';
import type { TreeLayout } from './layout';
import { ratioText } from './speedups';
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

export function renderTreeSvg(nodes: readonly ViewNode[], layout: TreeLayout): string {
  const g = treeGeometry(nodes.length);
  const compact = g === COMPACT;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const pos = new Map(layout.nodes.map((p) => [p.id, { cx: g.pad + g.r + p.x * g.col, cy: g.pad + g.r + p.depth * g.row }]));
  const width = g.pad * 2 + g.r * 2 + Math.max(0, layout.columns - 1) * g.col;
  const height = g.pad * 2 + g.r * 2 + layout.depth * g.row;

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
    const cls = ['node', n.outcome.replace('_', '-'), n.onPath ? 'best' : '', n.best ? 'best-node' : '', n.count ? 'cluster' : '']
      .filter(Boolean)
      .join(' ');
    const r = n.outcome === 'nothing_new' && !n.count ? g.r * 0.55 : g.r;
    const inside = !compact || n.onPath || n.count || n.outcome === 'root';
    const label = inside && n.label ? `<text x="${c.cx}" y="${c.cy + (compact ? 3 : 4)}" text-anchor="middle">${escapeXml(n.label)}</text>` : '';
    const id = n.id >= 0 && !compact ? `<text class="id" x="${c.cx}" y="${c.cy + g.r + 12}" text-anchor="middle">#${n.id}</text>` : '';
    return (
      `<g class="${cls}" data-id="${n.id}" tabindex="0" role="button" aria-label="${escapeXml(n.title.split('\n')[0])}">` +
      `<title>${escapeXml(n.title)}</title>` +
      `<circle cx="${c.cx}" cy="${c.cy}" r="${r}"/>` +
      label +
      id +
      `</g>`
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
