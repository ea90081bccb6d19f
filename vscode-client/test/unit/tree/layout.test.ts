import { strict as assert } from 'assert';
import { layoutTree } from '../../../src/tree/layout';
import { node, sampleTree } from './fixtures';

describe('tree layout', () => {
  it('puts leaves in depth-first columns and parents over their children', () => {
    const l = layoutTree(sampleTree().nodes);
    const at = (id: number) => l.nodes.find((n) => n.id === id);
    assert.deepEqual(
      [3, 5, 2].map((id) => at(id)?.x),
      [0, 1, 2],
    );
    assert.equal(at(4)?.x, 1); // over its only child 5
    assert.equal(at(1)?.x, 0.5); // between 3 (0) and 4 (1)
    assert.equal(at(0)?.x, 1.25); // between 1 (0.5) and 2 (2)
    assert.deepEqual(
      [0, 1, 3, 5].map((id) => at(id)?.depth),
      [0, 1, 2, 3],
    );
    assert.equal(l.columns, 3);
    assert.equal(l.depth, 3);
    assert.equal(l.edges.length, 5);
  });

  it('does not depend on the order of the nodes', () => {
    const a = layoutTree(sampleTree().nodes);
    const b = layoutTree([...sampleTree().nodes].reverse());
    const key = (l: typeof a) => l.nodes.map((n) => `${n.id}:${n.x}:${n.depth}`).sort();
    assert.deepEqual(key(a), key(b));
  });

  it('draws nodes with unknown parents as extra roots and places every node once', () => {
    const l = layoutTree([node(0, null, 1), node(1, 0, 1), node(7, 99, 2)]);
    assert.equal(l.nodes.length, 3);
    assert.equal(l.nodes.find((n) => n.id === 7)?.depth, 0);
  });

  it('terminates on a parent cycle', () => {
    const l = layoutTree([node(1, 2, 1), node(2, 1, 1)]);
    assert.equal(l.nodes.length, 2);
  });

  it('lays out an empty tree', () => {
    assert.deepEqual(layoutTree([]), { nodes: [], edges: [], columns: 0, depth: 0 });
  });
});
