import { strict as assert } from 'assert';
import { isFromWebview } from '../../../src/tree/messages';
import type { NodeDetailReply } from '../../../src/tree/types';
import { clusterDetail, clusterId, clusterOf, foldTops, nodeDetail, OpenFolds, treeMessage, viewNodes } from '../../../src/tree/view-model';
import { node, sampleTree } from './fixtures';

function reply(extra: Partial<NodeDetailReply> = {}): NodeDetailReply {
  return {
    ...node(4, 1, 2.5), source: 'v4\n', diff: '@@ -1 +1 @@\n-v1\n+v4', can_apply: true, why_not: '',
    gain_text: '2.50× your kernel', eager_text: '3.10× eager', error: '', profile: '', ...extra,
  };
}

describe('tree view model', () => {
  it("summarises the search in the header with the server's labelled figures", () => {
    const m = treeMessage({ ...sampleTree(), running: true, progress: 'attempt 3/30 · best 2.50× your kernel (#4)' }, 'k.py');
    assert.equal(m.type, 'tree');
    if (m.type !== 'tree') return;
    assert.equal(m.title, 'add_kernel — k.py');
    assert.equal(m.subtitle, 'your kernel: 1.000 ms · 3 attempts, 2 correct · best 2.50× your kernel (#4) · running: attempt 3/30 · best 2.50× your kernel (#4)');
    assert.equal(m.running, true);
    assert.equal(m.continueBy, undefined);
  });

  it('counts attempts as the CLI does, the free ones apart', () => {
    const m = treeMessage({ ...sampleTree(), attempts: 200, free: 26, correct: 145 }, 'k.py');
    assert.match(m.type === 'tree' ? m.subtitle : '', /· 200 attempts, 145 correct, 26 free \(nothing new, or duplicates\) ·/);
  });

  it('offers to continue when the budget is spent and nothing runs', () => {
    const m = treeMessage({ ...sampleTree(), running: false, budget: 3 }, 'k.py');
    assert.equal(m.type === 'tree' && m.continueBy, 3);
  });

  it("names an LLM team's tokens in the header and on a node, as the CLI says them", () => {
    const usage = 'agents, whole tree: 14 calls, 45.2k prompt + 3.1k completion tokens';
    const m = treeMessage({ ...sampleTree(), usage_text: usage }, 'k.py');
    assert.ok(m.type === 'tree' && m.subtitle.endsWith(` · ${usage}`));
    assert.match(nodeDetail(reply({ tokens_text: '12.3k tok' })).title, / · 12\.3k tok$/);
    assert.doesNotMatch(nodeDetail(reply()).title, /tok/); // the built-in team: no calls, nothing said
    const builtin = treeMessage({ ...sampleTree(), usage_text: '' }, 'k.py');
    assert.doesNotMatch(builtin.type === 'tree' ? builtin.subtitle : '', /tokens/);
  });

  it('says CPU timings are not GPU timings', () => {
    const m = treeMessage({ ...sampleTree(), cpu: true }, 'k.py');
    assert.match(m.type === 'tree' ? m.subtitle : '', /CPU interpreter: for checking, not speed/);
    // said once, where the best's figure already says it (the bigtree e2e's header said it twice)
    const best = '2.78× your kernel (CPU interpreter: for checking, not speed) (#59)';
    const once = treeMessage({ ...sampleTree(), cpu: true, best_text: `best ${best}` }, 'k.py');
    const subtitle = once.type === 'tree' ? once.subtitle : '';
    assert.equal(subtitle.split('CPU interpreter').length - 1, 1, subtitle);
  });

  it('draws "nothing new" attempts as one cluster per parent, not as failed candidates', () => {
    const t = sampleTree();
    // (#8 under the best, #4: under #3, not faster, the two would be a folded subtree)
    t.nodes.push(node(6, 1, null, 'nothing_new'), node(7, 1, null, 'nothing_new'), node(8, 4, null, 'nothing_new'));
    const v = viewNodes(t);
    const cluster = v.find((n) => n.id === clusterId(1));
    assert.equal(cluster?.count, 2);
    assert.equal(cluster?.outcome, 'nothing_new');
    assert.equal(v.find((n) => n.id === 8)?.outcome, 'nothing_new'); // alone: drawn as itself, small
    assert.equal(v.some((n) => n.id === 6 || n.id === 7), false);
    const d = clusterDetail(t, clusterId(1));
    assert.equal(d?.canApply, false);
    assert.match(d?.summary ?? '', /#6, #7/);
  });

  it('draws failed attempts that led nowhere as one cluster per parent, and keeps those a repair started from', () => {
    const t = sampleTree();
    t.nodes.push(node(6, 1, null, 'failed'), node(7, 1, null, 'failed', { status: 'runtime_error', summary: 'oob\nmore' }),
      node(8, 1, null, 'failed'), node(9, 8, 1.1, 'faster', { kind: 'debug' }));
    const v = viewNodes(t);
    const cluster = v.find((n) => n.id === clusterId(1, 'failed'));
    assert.equal(cluster?.count, 2); // #6 and #7; #8 has the Debug agent's child, so it stays drawn
    assert.equal(cluster?.outcome, 'failed');
    assert.equal(v.some((n) => n.id === 6 || n.id === 7), false);
    assert.ok(v.some((n) => n.id === 8) && v.some((n) => n.id === 9));
    assert.ok(v.some((n) => n.id === 2)); // alone under the root: drawn as itself
    const d = clusterDetail(t, clusterId(1, 'failed'));
    assert.equal(d?.canApply, false);
    assert.match(d?.summary ?? '', /#7 runtime error: oob$/m);
    assert.doesNotMatch(d?.summary ?? '', /#8/);
    for (const parent of [0, 1, 7, 1234]) {
      for (const kind of ['nothing_new', 'failed', 'fold'] as const) assert.deepEqual(clusterOf(clusterId(parent, kind)), { parent, kind });
    }
    const ids = [0, 1, 2, 3].flatMap((p) => (['nothing_new', 'failed', 'fold'] as const).map((k) => clusterId(p, k)));
    assert.equal(new Set(ids).size, ids.length); // no two clusters share an id
    assert.ok(ids.every((i) => i < 0));
  });

  it('draws a 1000-attempt search of mostly failures as the attempts that mattered', () => {
    const nodes = [node(0, null, 1, 'root')];
    let id = 1;
    for (let p = 0; p < 100; p++) {
      const parent = id++;
      nodes.push(node(parent, 0, 1 + p / 100));
      for (let k = 0; k < 9; k++) nodes.push(node(id++, parent, null, k % 3 ? 'failed' : 'nothing_new'));
    }
    const t = { ...sampleTree(), nodes, best: 991 }; // the last tried node, 1.99×
    const v = viewNodes(t);
    assert.equal(nodes.length, 1001);
    assert.equal(v.length, 1 + 100 * 3); // the root, each tried node, its failed cluster and its nothing-new cluster
    assert.equal(v.filter((n) => n.count).reduce((a, n) => a + (n.count ?? 0), 0), 900);
  });

  it('folds a subtree where nothing is faster into one node with its count and statuses, and opens it on request', () => {
    const t = sampleTree();
    // under #2 (failed, off the best path): a repair that failed again, and a move from it that was not faster
    t.nodes.push(node(6, 2, null, 'failed', { kind: 'debug', status: 'incorrect' }), node(7, 6, 0.8, 'slower'));
    const v = viewNodes(t);
    const f = v.find((n) => n.id === clusterId(2, 'fold'));
    assert.ok(f);
    assert.equal(f.parent, 0);
    assert.equal(f.count, 3);
    assert.equal(f.label, '3');
    assert.equal(f.foldTop, 2);
    assert.deepEqual(f.fold, { failed: 2, slower: 1 });
    assert.equal(f.outcome, 'failed');
    assert.match(f.title, /^3 attempts: 2 failed \(1 compile error, 1 incorrect\), 1 not faster\n#2 and what was tried from it/);
    assert.equal(v.some((n) => [2, 6, 7].includes(n.id)), false);
    assert.ok(v.some((n) => n.id === 4 && n.best) && v.some((n) => n.id === 1 && n.onPath)); // the best path is drawn
    const d = clusterDetail(t, clusterId(2, 'fold'));
    assert.equal(d?.canApply, false);
    assert.match(d?.summary ?? '', /^#6 \(from #2\) incorrect: node 6$/m);
    assert.match(d?.summary ?? '', /^#7 \(from #6\) slower 0\.80×: node 7$/m);
    // opened: every node drawn, the top offers to fold it again; the header counts are the same
    const open = viewNodes(t, { expanded: new Set([2]) });
    assert.equal(open.some((n) => n.fold), false);
    assert.ok([2, 6, 7].every((id) => open.some((n) => n.id === id)));
    assert.equal(open.find((n) => n.id === 2)?.expanded, true);
    assert.equal(clusterDetail(t, clusterId(2, 'fold'), { expanded: new Set([2]) }), undefined);
    const a = treeMessage({ ...t, attempts: 6, correct: 3 }, 'k.py');
    const b = treeMessage({ ...t, attempts: 6, correct: 3 }, 'k.py', { expanded: new Set([2]) });
    assert.ok(a.type === 'tree' && b.type === 'tree');
    assert.equal(a.subtitle, b.subtitle);
    assert.match(a.treeSvg, /class="node failed folded" data-id="-9" data-fold-top="2"/);
    assert.doesNotMatch(a.treeSvg, /fold-toggle/);
    assert.match(b.treeSvg, /<g class="fold-toggle" data-fold="2" tabindex="0" role="button"/);
    assert.match(a.minimapSvg, /class="mini-view"/);
  });

  it('draws the folds under one parent as one node, which opens them all', () => {
    const t = sampleTree();
    // under the root, off the best path: #2 (failed) with a repair, and two more dead ends of two attempts
    t.nodes.push(node(6, 2, null, 'failed', { kind: 'debug' }), node(7, 0, null, 'failed'), node(8, 7, 0.7, 'slower'),
      node(9, 0, null, 'failed', { status: 'incorrect' }), node(10, 9, null, 'failed', { kind: 'debug' }));
    const v = viewNodes(t);
    const folded = v.filter((n) => n.fold);
    assert.equal(folded.length, 1);
    const [f] = folded;
    assert.equal(f.id, clusterId(2, 'fold'));
    assert.equal(f.parent, 0);
    assert.equal(f.count, 6);
    assert.match(f.title, /^6 attempts: 5 failed .*, 1 not faster\n#2, #7, #9 and what was tried from them \(up to 2 levels\), none of it faster/);
    assert.equal(v.some((n) => [2, 6, 7, 8, 9, 10].includes(n.id)), false);
    assert.deepEqual(foldTops(t, 2), [2, 7, 9]); // what a click on it opens
    assert.deepEqual(foldTops(t, 5), [5]); // no fold starts there
    const d = clusterDetail(t, clusterId(2, 'fold'));
    assert.equal(d?.title, '6 attempts in 3 subtrees from #0, folded');
    assert.match(d?.summary ?? '', /Nothing under #2, #7, #9 was faster, so these 3 subtrees of #0 are drawn as one node/);
    // a click opens the three; the "−" of any one folds the three back into one node
    const folds = new OpenFolds();
    folds.open(t, 2);
    assert.deepEqual([...folds.expanded], [2, 7, 9]);
    const open = viewNodes(t, { expanded: folds.expanded });
    assert.equal(open.some((n) => n.fold), false);
    assert.deepEqual(open.filter((n) => n.expanded).map((n) => n.id), [2, 7, 9]);
    folds.close(7);
    assert.deepEqual([...folds.expanded], []);
    assert.deepEqual(viewNodes(t, { expanded: folds.expanded }).map((n) => n.id), v.map((n) => n.id)); // as before
    folds.open(t, 5); // no fold there: that node alone
    assert.deepEqual([...folds.expanded], [5]);
    folds.clear();
    assert.equal(folds.expanded.size, 0);
  });

  it('keeps the failed-leaf clusters beside the folds, and never folds into the best path', () => {
    const t = sampleTree();
    t.nodes.push(node(6, 1, null, 'failed'), node(7, 1, null, 'failed'), node(8, 2, null, 'failed', { kind: 'debug' }));
    const v = viewNodes(t);
    assert.equal(v.find((n) => n.id === clusterId(1, 'failed'))?.count, 2);
    assert.equal(v.find((n) => n.id === clusterId(2, 'fold'))?.count, 2);
    assert.equal(v.filter((n) => n.onPath).length, 3);
  });

  it("builds the detail from stark/node, with why Apply is disabled", () => {
    const d = nodeDetail(reply());
    assert.equal(d.title, '#4 plan + code · 2.50× your kernel · 0.4000 ms');
    assert.equal(d.summary, 'node 4\nagainst the reference: 3.10× eager');
    assert.equal(d.canApply, true);
    const failed = nodeDetail(reply({ ...node(2, 0, null, 'failed'), can_apply: false, why_not: 'only verified candidates can be applied', error: 'line 3: undefined' }));
    assert.equal(failed.canApply, false);
    assert.equal(failed.whyNot, 'only verified candidates can be applied');
    assert.match(failed.summary, /line 3: undefined/);
  });

  it('accepts only well-formed messages from the webview', () => {
    assert.equal(isFromWebview({ type: 'apply', id: 3 }), true);
    assert.equal(isFromWebview({ type: 'ready' }), true);
    assert.equal(isFromWebview({ type: 'stop' }), true);
    assert.equal(isFromWebview({ type: 'select', id: -2 }), true); // a cluster
    assert.equal(isFromWebview({ type: 'fold', id: 12, open: true }), true);
    assert.equal(isFromWebview({ type: 'fold', id: 12 }), false);
    assert.equal(isFromWebview({ type: 'fold', id: 1.5, open: false }), false);
    assert.equal(isFromWebview({ type: 'apply', id: '3' }), false);
    assert.equal(isFromWebview({ type: 'run', id: 3 }), false);
    assert.equal(isFromWebview(null), false);
  });
});
