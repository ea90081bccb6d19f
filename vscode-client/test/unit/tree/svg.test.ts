import { strict as assert } from 'assert';
import { bestSpeedupSeries } from '../../../src/tree/chart';
import { layoutTree } from '../../../src/tree/layout';
import { escapeXml, renderChartSvg, renderTreeSvg } from '../../../src/tree/svg';
import { node, sampleTree } from './fixtures';

describe('svg rendering', () => {
  it('draws one group per node, coloured by outcome, best path marked', () => {
    const nodes = sampleTree().nodes;
    const svg = renderTreeSvg(nodes, layoutTree(nodes));
    assert.equal((svg.match(/<g class="node/g) ?? []).length, 6);
    assert.match(svg, /<g class="node faster best best-node" data-id="4"/);
    assert.equal((svg.match(/best-node/g) ?? []).length, 1);
    assert.match(svg, /<g class="node failed" data-id="2"/);
    assert.match(svg, /<g class="node root best" data-id="0"/);
    assert.equal((svg.match(/class="edge best"/g) ?? []).length, 2); // 0-1 and 1-4
    assert.match(svg, />2\.50×</);
  });

  it('escapes text from the server', () => {
    const nodes = [node(0, null, 1), node(1, 0, 2, 'success', { summary: '<script>alert(1)</script>' })];
    const svg = renderTreeSvg(nodes, layoutTree(nodes));
    assert.equal(svg.includes('<script>'), false);
    assert.match(svg, /&lt;script&gt;/);
    assert.equal(escapeXml(`a"b'c&`), 'a&quot;b&#39;c&amp;');
  });

  it('draws the chart as a step line ending at the best', () => {
    const svg = renderChartSvg(bestSpeedupSeries(sampleTree().nodes));
    assert.match(svg, /<path class="curve" d="M[^"]*H[^"]*V/);
    assert.match(svg, /4 attempts/);
  });
});
