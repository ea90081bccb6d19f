import { strict as assert } from 'assert';
import { bestSpeedupSeries } from '../../../src/tree/chart';
import { sampleTree } from './fixtures';

describe('speedup chart data', () => {
  it('counts finished attempts in id order and keeps the best so far', () => {
    assert.deepEqual(
      bestSpeedupSeries(sampleTree().nodes).map((p) => [p.attempt, p.best]),
      [
        [0, 1],
        [1, 1.2],
        [2, 1.2], // failed attempt: counted, does not raise the curve
        [3, 1.2],
        [4, 2.5],
      ],
    );
  });

  it("starts at the user kernel's speedup", () => {
    const nodes = sampleTree().nodes.slice(0, 2);
    nodes[0].speedup = 0.01;
    nodes[1].speedup = 0.04;
    assert.deepEqual(bestSpeedupSeries(nodes).map((p) => p.best), [0.01, 0.04]);
  });

  it('starts at 1x with no tree', () => {
    assert.deepEqual(bestSpeedupSeries([]), [{ attempt: 0, best: 1, nodeId: null }]);
  });
});
