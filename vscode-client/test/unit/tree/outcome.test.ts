import { strict as assert } from 'assert';
import { bestCandidate, bestNode, isAttempt, pathToRoot } from '../../../src/tree/outcome';
import { node, sampleTree } from './fixtures';

describe('tree outcome helpers', () => {
  it("takes the best from the server's best id", () => {
    const t = sampleTree();
    assert.equal(bestNode(t.nodes, t.best)?.id, 4);
    assert.equal(bestCandidate(t.nodes, 0), undefined); // the root: nothing beats it
    assert.equal(bestNode(t.nodes, null), undefined);
  });

  it('counts finished attempts, a "nothing new" one too', () => {
    const t = sampleTree();
    assert.deepEqual(t.nodes.filter(isAttempt).map((n) => n.id), [1, 2, 3, 4]);
    assert.equal(isAttempt(node(9, 1, null, 'nothing_new')), true);
    assert.equal(isAttempt(node(9, 1, null, 'abandoned')), false);
  });

  it('walks the path to the root and survives cycles', () => {
    assert.deepEqual(pathToRoot(sampleTree().nodes, 5), [0, 1, 4, 5]);
    assert.deepEqual(pathToRoot([node(1, 2, 1), node(2, 1, 1)], 1), [2, 1]);
  });
});
