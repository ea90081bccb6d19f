import { strict as assert } from 'assert';
import { bestGainSeries, ticks } from '../../../src/tree/chart';
import { node, sampleTree } from './fixtures';

describe('best-so-far chart data', () => {
  it('starts at your kernel (1×) and steps up at each better attempt', () => {
    const pts = bestGainSeries(sampleTree().nodes);
    assert.deepEqual(pts.map((p) => [p.attempt, p.best]), [[0, 1], [1, 1.2], [2, 1.2], [3, 1.2], [4, 2.5]]);
  });

  it('counts a "nothing new" attempt without raising the curve', () => {
    const pts = bestGainSeries([node(0, null, 1, 'root'), node(1, 0, null, 'nothing_new'), node(2, 0, 1.5)]);
    assert.deepEqual(pts.map((p) => p.best), [1, 1, 1.5]);
  });

  it('keeps tick labels apart, and the baseline always', () => {
    const t = ticks(0, 1.65, 140, 14, [1, 1.02]);
    assert.ok(t.includes(1) && !t.includes(1.02), String(t)); // 1.02 would sit on top of 1
    const px = t.map((v) => (v / 1.65) * 140).sort((a, b) => a - b);
    px.slice(1).forEach((p, i) => assert.ok(p - px[i] >= 14, String(t)));
  });
});
