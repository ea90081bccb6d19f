import { strict as assert } from 'assert';
import { bestNode, formatSpeedup, outcome, pathToRoot } from '../../../src/tree/outcome';
import { node, sampleTree } from './fixtures';

describe('node outcome', () => {
  it('classifies root, running, failed, faster and slower', () => {
    const t = sampleTree().nodes;
    assert.deepEqual(
      t.map((n) => outcome(n)),
      ['root', 'faster', 'failed', 'slower', 'faster', 'running'],
    );
  });

  it('treats a "success" without a speedup as failed', () => {
    assert.equal(outcome(node(7, 0, null)), 'failed');
  });

  it('finds the best measured node above 1x, ties to the lowest id', () => {
    assert.equal(bestNode(sampleTree().nodes)?.id, 4);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 2), node(2, 0, 2)])?.id, 1);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 0.8)]), undefined);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 9, 'incorrect')]), undefined);
  });

  it('walks from the root to a node and survives cycles', () => {
    assert.deepEqual(pathToRoot(sampleTree().nodes, 5), [0, 1, 4, 5]);
    assert.deepEqual(pathToRoot([node(1, 2, 1), node(2, 1, 1)], 1), [2, 1]);
    assert.deepEqual(pathToRoot(sampleTree().nodes, 42), []);
  });

  it('formats speedups', () => {
    assert.equal(formatSpeedup(2.414), '2.41×');
    assert.equal(formatSpeedup(null), '—');
  });
});
