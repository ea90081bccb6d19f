/**
 * Places the search tree on a grid: depth gives the row; leaves take
 * consecutive columns in depth-first order (children by id) and a parent sits
 * centred over its children. Pure.
 */
/** Anything with an id and a parent: a server node, or a cluster of "nothing new" leaves (negative id). */
export interface LayoutNode {
  id: number;
  parent: number | null;
}

export interface PlacedNode {
  id: number;
  x: number; // column, may be fractional for parents
  depth: number;
}

export interface Edge {
  from: number;
  to: number;
}

export interface TreeLayout {
  nodes: PlacedNode[];
  edges: Edge[];
  columns: number; // number of leaf columns
  depth: number; // deepest row
}

/** Children in id order; clusters (negative ids) after the real children. */
const order = (a: number, b: number) => (a < 0 ? Infinity : a) - (b < 0 ? Infinity : b) || b - a;

export function layoutTree(nodes: readonly LayoutNode[]): TreeLayout {
  const ids = new Set(nodes.map((n) => n.id));
  const children = new Map<number, number[]>();
  const roots: number[] = [];
  for (const n of [...nodes].sort((a, b) => order(a.id, b.id))) {
    // A node whose parent is unknown is drawn as another root rather than dropped.
    if (n.parent === null || !ids.has(n.parent) || n.parent === n.id) roots.push(n.id);
    else children.set(n.parent, [...(children.get(n.parent) ?? []), n.id]);
  }
  const placed = new Map<number, PlacedNode>();
  const edges: Edge[] = [];
  let nextColumn = 0;
  let maxDepth = 0;

  const place = (id: number, depth: number): number => {
    maxDepth = Math.max(maxDepth, depth);
    const kids = (children.get(id) ?? []).filter((k) => !placed.has(k));
    let x: number;
    placed.set(id, { id, x: -1, depth }); // mark before recursing: guards against cycles
    if (kids.length === 0) {
      x = nextColumn++;
    } else {
      const xs = kids.map((k) => {
        edges.push({ from: id, to: k });
        return place(k, depth + 1);
      });
      x = (xs[0] + xs[xs.length - 1]) / 2;
    }
    placed.set(id, { id, x, depth });
    return x;
  };
  for (const r of roots) place(r, 0);
  // Nodes only reachable through a cycle: place them as extra roots.
  for (const n of nodes) if (!placed.has(n.id)) place(n.id, 0);

  return { nodes: [...placed.values()], edges, columns: nextColumn, depth: maxDepth };
}
