import { strict as assert } from 'assert';
import { relativeToBaseline } from '../../../src/tree/relative';
import type { SearchTree } from '../../../src/tree/types';

const tree = (): SearchTree => ({
  kernel: 'k',
  nodes: [
    { id: 1, parent: null, kind: 'root', status: 'ok', speedup: 0.001, runtime_ms: 100, summary: '', source: '' },
    { id: 2, parent: 1, kind: 'plan_code', status: 'ok', speedup: 0.004, runtime_ms: 25, summary: '', source: '' },
    { id: 3, parent: 1, kind: 'plan_code', status: 'incorrect', speedup: null, runtime_ms: null, summary: '', source: '' },
  ],
});

describe('speedups against the user kernel', () => {
  it('divides the root runtime by each node runtime and keeps the reference figure', () => {
    const t = relativeToBaseline(tree());
    assert.deepEqual(t.nodes.map((n) => n.speedup), [1, 4, null]);
    assert.deepEqual(t.nodes.map((n) => n.speedup_vs_reference), [0.001, 0.004, null]);
  });

  it('prefers the server baseline when it sends one', () => {
    assert.equal(relativeToBaseline({ ...tree(), baseline_ms: 50 }).nodes[1].speedup, 2);
  });

  it('leaves a tree without a measured root alone', () => {
    const t = tree();
    t.nodes[0].runtime_ms = null;
    assert.deepEqual(relativeToBaseline(t).nodes.map((n) => n.speedup), [0.001, 0.004, null]);
  });
});
