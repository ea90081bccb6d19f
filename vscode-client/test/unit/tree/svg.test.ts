import { strict as assert } from 'assert';
import { bestGainSeries } from '../../../src/tree/chart';
import { layoutTree } from '../../../src/tree/layout';
import { COMPACT_AT, escapeXml, foldRing, renderChartSvg, renderMinimapSvg, renderTreeSvg } from '../../../src/tree/svg';
import { viewNodes } from '../../../src/tree/view-model';
import { bigTree, node, sampleTree } from './fixtures';

function draw(t = sampleTree()) {
  const nodes = viewNodes(t);
  return renderTreeSvg(nodes, layoutTree(nodes));
}

describe('svg rendering', () => {
  it('draws one group per node, coloured by outcome, best path marked', () => {
    const svg = draw();
    assert.equal((svg.match(/<g class="node/g) ?? []).length, 6);
    assert.match(svg, /<g class="node faster best best-node" data-id="4"/);
    assert.equal((svg.match(/best-node/g) ?? []).length, 1);
    assert.match(svg, /<g class="node failed" data-id="2"/);
    assert.match(svg, /<g class="node root best" data-id="0"/);
    assert.equal((svg.match(/class="edge best"/g) ?? []).length, 2); // 0-1 and 1-4
    assert.match(svg, />2\.50×</);
    assert.match(svg, /viewBox="0 0 \d+ \d+"/); // the webview pans and zooms it
  });

  it('escapes text from the server', () => {
    const t = sampleTree();
    t.nodes = [node(0, null, 1, 'root'), node(1, 0, 2, 'faster', { summary: '<script>alert(1)</script>' })];
    const svg = draw(t);
    assert.equal(svg.includes('<script>'), false);
    assert.match(svg, /&lt;script&gt;/);
    assert.equal(escapeXml(`a"b'c&`), 'a&quot;b&#39;c&amp;');
  });

  it('draws a 200-node tree compactly: small nodes, nothing-new attempts clustered', () => {
    const t = bigTree(200);
    const nodes = viewNodes(t);
    assert.ok(nodes.length < 120 && nodes.length > COMPACT_AT, String(nodes.length)); // 100 nothing-new leaves in 10 clusters
    const svg = draw(t);
    assert.match(svg, /class="tree compact"/);
    const [, w] = svg.match(/viewBox="0 0 (\d+) (\d+)"/) ?? [];
    assert.ok(Number(w) < 4000, w); // fits a few screens wide before any zoom
    assert.equal((svg.match(/class="node nothing-new cluster"/g) ?? []).length, 10); // the root and nodes 1-9
    assert.match(svg, /<title>\d+ attempts from #1 found nothing new to try/);
  });

  it("draws a folded subtree as a ring of its outcomes' shares with its count inside", () => {
    const ring = foldRing({ failed: 3, slower: 1 }, 50, 40, 10);
    const slices = [...ring.matchAll(/<circle class="slice ([a-z-]+)" [^>]*stroke-dasharray="([\d.]+) ([\d.]+)"/g)];
    assert.deepEqual(slices.map((m) => m[1]), ['failed', 'slower']);
    const circ = 2 * Math.PI * 7.8;
    assert.ok(Math.abs(Number(slices[0][2]) - circ * 0.75) < 0.01 && Math.abs(Number(slices[1][2]) - circ * 0.25) < 0.01);
    assert.ok(Math.abs(Number(slices[0][2]) + Number(slices[0][3]) - circ) < 0.02); // one dash a turn
    assert.match(ring, /<circle class="hole"/);
    const t = sampleTree();
    t.nodes.push(node(6, 2, null, 'failed', { kind: 'debug' }));
    const svg = draw(t);
    assert.match(svg, /<g class="node failed folded" data-id="-9" data-fold-top="2" data-fold-extent="70" tabindex="0" role="button" aria-label="[^"]*\(folded: press Enter to open\)" aria-expanded="false">/);
    assert.match(svg, /<text class="count" [^>]*>2<\/text>/);
  });

  it('draws the minimap: every node a dot of its outcome, the best path over the edges, the view rectangle', () => {
    const t = bigTree(200);
    const nodes = viewNodes(t);
    const layout = layoutTree(nodes);
    const mini = renderMinimapSvg(nodes, layout);
    const tree = renderTreeSvg(nodes, layout);
    assert.equal(mini.match(/viewBox="[^"]+"/)?.[0], tree.match(/viewBox="[^"]+"/)?.[0]); // the same units as the tree
    const dots = [...mini.matchAll(/<path class="mini-dot ([a-z -]+)" d="([^"]+)"/g)];
    const count = dots.filter((m) => !m[1].includes('best-node')).reduce((a, m) => a + (m[2].match(/h0/g) ?? []).length, 0);
    assert.equal(count, nodes.length);
    assert.ok(dots.some((m) => m[1] === 'faster best') && dots.some((m) => m[1] === 'root best'));
    assert.equal(dots.filter((m) => m[1].includes('best-node')).length, 1);
    assert.match(mini, /<path class="mini-path" d="M[^"]+"/);
    assert.match(mini, /<rect class="mini-view" [^>]*vector-effect="non-scaling-stroke"\/>/);
    assert.doesNotMatch(mini, /<text|<title/); // no text from the server in it
  });

  it('draws the chart as a step line with labelled, separate ticks', () => {
    const svg = renderChartSvg(bestGainSeries(sampleTree().nodes), 'your kernel');
    assert.match(svg, /<path class="curve" d="M[^"]*H[^"]*V/);
    assert.match(svg, /attempts · best so far, × your kernel/);
    assert.match(svg, />1\.00×</);
    assert.match(svg, />2\.50×</);
    const ys = [...svg.matchAll(/<text class="tick" x="\d+" y="([\d.]+)" text-anchor="end">/g)].map((m) => Number(m[1]));
    ys.sort((a, b) => a - b).slice(1).forEach((y, i) => assert.ok(y - ys[i] >= 12, `overlapping labels at ${ys}`));
  });
});
