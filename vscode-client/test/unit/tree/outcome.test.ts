import { strict as assert } from 'assert';
import { baselineSpeedup, bestCandidate, bestNode, formatSpeedup, outcome, pathToRoot } from '../../../src/tree/outcome';
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

  it('finds the correct node with the highest speedup, root included, ties to the lowest id', () => {
    assert.equal(bestNode(sampleTree().nodes)?.id, 4);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 2), node(2, 0, 2)])?.id, 1);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 0.8)])?.id, 0);
    assert.equal(bestNode([node(0, null, 1), node(1, 0, 9, 'incorrect')])?.id, 0);
    assert.equal(bestNode([]), undefined);
  });

  it("follows the server's best id when it names a node", () => {
    assert.equal(bestNode(sampleTree().nodes, 1)?.id, 1);
    assert.equal(bestNode(sampleTree().nodes, 77)?.id, 4);
  });

  it('has no best candidate when nothing beats the user kernel', () => {
    assert.equal(bestCandidate([node(0, null, 1), node(1, 0, 0.8)]), undefined);
    assert.equal(bestCandidate(sampleTree().nodes)?.id, 4);
  });

  it('measures "faster" against the user kernel, whose speedup against the reference may be tiny', () => {
    // Triton interpreter on CPU: the user kernel is 0.01x the torch reference.
    const nodes = [node(1, null, 0.01), node(2, 1, 0.04), node(3, 1, 0.005), node(4, 1, null, 'compile_error')];
    const base = baselineSpeedup(nodes);
    assert.equal(base, 0.01);
    assert.deepEqual(nodes.map((n) => outcome(n, base)), ['root', 'faster', 'slower', 'failed']);
    assert.equal(bestCandidate(nodes)?.id, 2);
    assert.equal(baselineSpeedup([node(1, null, null, 'running')]), 1);
  });

  it('walks from the root to a node and survives cycles', () => {
    assert.deepEqual(pathToRoot(sampleTree().nodes, 5), [0, 1, 4, 5]);
    assert.deepEqual(pathToRoot([node(1, 2, 1), node(2, 1, 1)], 1), [2, 1]);
    assert.deepEqual(pathToRoot(sampleTree().nodes, 42), []);
  });

  it('formats speedups', () => {
    assert.equal(formatSpeedup(2.414), '2.41×');
    assert.equal(formatSpeedup(0.1), '0.10×');
    assert.equal(formatSpeedup(0.0012345), '0.0012×');
    assert.equal(formatSpeedup(null), '—');
    assert.equal(formatSpeedup(0), '—');
  });
});
