/**
 * Renders the search tree and the speedup chart as inline SVG strings. Pure.
 * Every piece of text from the server is escaped.
 */
import type { ChartPoint } from './chart';
import type { TreeLayout } from './layout';
import { baselineSpeedup, bestNode, formatSpeedup, outcome, pathToRoot } from './outcome';
import type { TreeNode } from './types';

export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const COL = 84;
const ROW = 70;
const R = 22;
const PAD = 30;

export function renderTreeSvg(nodes: readonly TreeNode[], layout: TreeLayout, serverBest?: number | null): string {
  const best = bestNode(nodes, serverBest);
  const baseline = baselineSpeedup(nodes);
  const onPath = new Set(best ? pathToRoot(nodes, best.id) : []);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const pos = new Map(layout.nodes.map((p) => [p.id, { cx: PAD + R + p.x * COL, cy: PAD + R + p.depth * ROW }]));
  const width = PAD * 2 + R * 2 + Math.max(0, layout.columns - 1) * COL;
  const height = PAD * 2 + R * 2 + layout.depth * ROW;

  const edges = layout.edges.map((e) => {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) return '';
    const cls = onPath.has(e.from) && onPath.has(e.to) ? 'edge best' : 'edge';
    return `<line class="${cls}" x1="${a.cx}" y1="${a.cy}" x2="${b.cx}" y2="${b.cy}"/>`;
  });
  const circles = layout.nodes.map((p) => {
    const n = byId.get(p.id);
    const c = pos.get(p.id);
    if (!n || !c) return '';
    const cls = ['node', outcome(n, baseline), onPath.has(n.id) ? 'best' : '', n.id === best?.id ? 'best-node' : '']
      .filter(Boolean)
      .join(' ');
    const label = n.parent === null ? 'base' : formatSpeedup(n.speedup);
    const title = `#${n.id} ${n.kind} ${n.status} ${formatSpeedup(n.speedup)}\n${n.summary}`;
    return (
      `<g class="${cls}" data-id="${n.id}" tabindex="0" role="button" aria-label="${escapeXml(`node ${n.id} ${label}`)}">` +
      `<title>${escapeXml(title)}</title>` +
      `<circle cx="${c.cx}" cy="${c.cy}" r="${R}"/>` +
      `<text x="${c.cx}" y="${c.cy + 4}" text-anchor="middle">${escapeXml(label)}</text>` +
      `<text class="id" x="${c.cx}" y="${c.cy + R + 12}" text-anchor="middle">#${n.id}</text>` +
      `</g>`
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="tree" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    edges.join('') +
    circles.join('') +
    `</svg>`
  );
}

export function renderChartSvg(points: readonly ChartPoint[], width = 360, height = 180): string {
  const base = points[0]?.best ?? 1;
  const left = 54;
  const bottom = 28;
  const top = 12;
  const right = 12;
  const maxX = Math.max(1, ...points.map((p) => p.attempt));
  const maxY = Math.max(...points.map((p) => p.best), base * 1.5, 0.01) * 1.05;
  const sx = (x: number) => left + (x / maxX) * (width - left - right);
  const sy = (y: number) => height - bottom - (y / maxY) * (height - top - bottom);
  // A step line: the best only changes at an attempt.
  let d = '';
  points.forEach((p, i) => {
    if (i === 0) d += `M${sx(p.attempt).toFixed(1)},${sy(p.best).toFixed(1)}`;
    else d += `H${sx(p.attempt).toFixed(1)}V${sy(p.best).toFixed(1)}`;
  });
  const last = points[points.length - 1];
  const yTicks = [...new Set([base, maxY / 1.05])];
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<line class="axis" x1="${left}" y1="${sy(0)}" x2="${width - right}" y2="${sy(0)}"/>` +
    `<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${sy(0)}"/>` +
    `<line class="baseline" x1="${left}" y1="${sy(base).toFixed(1)}" x2="${width - right}" y2="${sy(base).toFixed(1)}"/>` +
    `<text class="tick" x="${left - 4}" y="${(sy(0) + 4).toFixed(1)}" text-anchor="end">0</text>` +
    yTicks.map((v) => `<text class="tick" x="${left - 4}" y="${(sy(v) + 4).toFixed(1)}" text-anchor="end">${formatSpeedup(v)}</text>`).join('') +
    `<text class="tick" x="${sx(maxX)}" y="${height - 8}" text-anchor="end">${maxX} attempts</text>` +
    `<path class="curve" d="${d}"/>` +
    (last ? `<circle class="last" cx="${sx(last.attempt).toFixed(1)}" cy="${sy(last.best).toFixed(1)}" r="3"/>` : '') +
    `</svg>`
  );
}
