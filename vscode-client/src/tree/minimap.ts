/**
 * The tree view's geometry: what part of the tree the pane shows, the
 * minimap's size and its rectangle, a click in the minimap as a point of the
 * tree, and the view that keeps a node where it was on screen. Pure (the
 * webview, src/webview/main.ts, reads the sizes from the page and calls these).
 *
 * The tree's SVG keeps its aspect ratio ("xMidYMid meet"): the pane shows its
 * viewBox centred and scaled to fit, and a bit more of the tree on the sides
 * where the pane's shape differs from the viewBox's.
 */

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Size {
  w: number;
  h: number;
}

/** A rectangle on the page (a DOMRect's fields). */
export interface ClientRect {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The largest minimap, in CSS pixels, and the share of the pane it may take each way. */
export const MINIMAP = { maxW: 180, maxH: 120, minSide: 36, paneShareW: 0.32, paneShareH: 0.36, minRectPx: 8 };

/** Pixels per tree unit when ``box`` is drawn in ``pane`` ("meet": the whole box fits). */
export function fitScale(box: Size, pane: Size): number {
  const s = Math.min(pane.w / box.w, pane.h / box.h);
  return Number.isFinite(s) && s > 0 ? s : 1;
}

/** The part of the tree the pane shows for the viewBox ``view``: the viewBox, widened to the pane's shape. */
export function visibleBox(view: Box, pane: Size): Box {
  const s = fitScale(view, pane);
  const w = pane.w / s;
  const h = pane.h / s;
  return { x: view.x - (w - view.w) / 2, y: view.y - (h - view.h) / 2, w, h };
}

/** Whether ``outer`` holds ``inner`` (within half a tree unit). */
export function contains(outer: Box, inner: Box, slack = 0.5): boolean {
  return (
    outer.x <= inner.x + slack &&
    outer.y <= inner.y + slack &&
    outer.x + outer.w >= inner.x + inner.w - slack &&
    outer.y + outer.h >= inner.y + inner.h - slack
  );
}

/**
 * The minimap's size in pixels: the tree's shape within the largest minimap
 * and a share of the pane; a side never below ``minSide`` (a long, flat tree
 * is then centred in a strip that can still be clicked). Undefined: the pane
 * is too small to spare the room.
 */
export function minimapSize(tree: Size, pane: Size, m = MINIMAP): Size | undefined {
  const maxW = Math.min(m.maxW, pane.w * m.paneShareW);
  const maxH = Math.min(m.maxH, pane.h * m.paneShareH);
  if (maxW < m.minSide || maxH < m.minSide || !(tree.w > 0) || !(tree.h > 0)) return undefined;
  const s = Math.min(maxW / tree.w, maxH / tree.h);
  return { w: Math.round(Math.max(m.minSide, tree.w * s)), h: Math.round(Math.max(m.minSide, tree.h * s)) };
}

/**
 * The minimap for the tree ``natural`` seen through ``view`` in ``pane``:
 * its size in pixels and the rectangle of what the pane shows (tree units,
 * kept inside the tree), or undefined when the pane shows the whole tree (or
 * has no room for a minimap).
 */
export function minimapFor(view: Box, natural: Box, pane: Size): { size: Size; rect: Box } | undefined {
  if (!(pane.w > 0) || !(pane.h > 0)) return undefined;
  const seen = visibleBox(view, pane);
  if (contains(seen, natural)) return undefined;
  const size = minimapSize(natural, pane);
  if (!size) return undefined;
  const min = MINIMAP.minRectPx / fitScale(natural, size); // a rectangle a few pixels wide at least, to be seen
  return { size, rect: growRect(clampRect(seen, natural), min, natural) };
}

/** ``r`` grown about its centre to at least ``min`` each way, then moved (not cut) to lie in ``bounds``. */
export function growRect(r: Box, min: number, bounds: Box): Box {
  const w = Math.min(bounds.w, Math.max(r.w, min));
  const h = Math.min(bounds.h, Math.max(r.h, min));
  const x = Math.min(bounds.x + bounds.w - w, Math.max(bounds.x, r.x + r.w / 2 - w / 2));
  const y = Math.min(bounds.y + bounds.h - h, Math.max(bounds.y, r.y + r.h / 2 - h / 2));
  return { x, y, w, h };
}

/**
 * ``r`` cut to ``bounds``; a rectangle wholly outside keeps a sliver on the
 * nearest edge, so the minimap still says where the view went.
 */
export function clampRect(r: Box, bounds: Box): Box {
  const x0 = Math.min(Math.max(r.x, bounds.x), bounds.x + bounds.w);
  const y0 = Math.min(Math.max(r.y, bounds.y), bounds.y + bounds.h);
  const x1 = Math.max(Math.min(r.x + r.w, bounds.x + bounds.w), bounds.x);
  const y1 = Math.max(Math.min(r.y + r.h, bounds.y + bounds.h), bounds.y);
  return { x: x0, y: y0, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0) };
}

/**
 * The tree point under a pointer at (clientX, clientY) over the minimap that
 * occupies ``rect`` on the page and draws ``natural`` ("meet", centred);
 * outside the drawing, the nearest point of the tree.
 */
export function minimapPoint(clientX: number, clientY: number, rect: ClientRect, natural: Box): { x: number; y: number } {
  const s = fitScale(natural, { w: rect.width, h: rect.height });
  const offX = (rect.width - natural.w * s) / 2;
  const offY = (rect.height - natural.h * s) / 2;
  const x = natural.x + (clientX - rect.left - offX) / s;
  const y = natural.y + (clientY - rect.top - offY) / s;
  return {
    x: Math.min(natural.x + natural.w, Math.max(natural.x, x)),
    y: Math.min(natural.y + natural.h, Math.max(natural.y, y)),
  };
}

/** ``view`` moved so that its centre is ``p`` (its size kept). */
export function centreOn(view: Box, p: { x: number; y: number }): Box {
  return { x: p.x - view.w / 2, y: p.y - view.h / 2, w: view.w, h: view.h };
}

/** ``view`` moved by a share of its size (the minimap's arrow keys). */
export function panBy(view: Box, dx: number, dy: number): Box {
  return { ...view, x: view.x + dx * view.w, y: view.y + dy * view.h };
}

/**
 * The view of ``view``'s size that shows the tree point ``p`` at the pane
 * point ``at`` (pixels from the pane's top left): after a subtree is folded
 * or opened, the node the user clicked stays under the pointer.
 */
export function anchorView(view: Box, pane: Size, p: { x: number; y: number }, at: { x: number; y: number }): Box {
  const s = fitScale(view, pane);
  const offX = (pane.w - view.w * s) / 2;
  const offY = (pane.h - view.h * s) / 2;
  return { x: p.x - (at.x - offX) / s, y: p.y - (at.y - offY) / s, w: view.w, h: view.h };
}

/**
 * ``view`` moved up just enough to show the rows from ``top`` to ``top +
 * extent`` (tree units, ``margin`` around them) in ``pane``, when they do not
 * fit below: a subtree just opened near the pane's bottom edge. The top row
 * never leaves the view.
 */
export function revealBelow(view: Box, pane: Size, top: number, extent: number, margin: number): Box {
  const seen = visibleBox(view, pane);
  const over = top + extent + margin - (seen.y + seen.h);
  const room = top - margin - seen.y; // how far it can move before the top row leaves
  const dy = Math.min(over, room);
  return dy > 0 ? { ...view, y: view.y + dy } : view;
}
