import { strict as assert } from 'assert';
import { isFromWebview } from '../../../src/tree/messages';
import { nodeDetail, treeMessage } from '../../../src/tree/view-model';
import { sampleTree } from './fixtures';

describe('tree view model', () => {
  it('summarises the search in the header', () => {
    const m = treeMessage(sampleTree(), 'k.py');
    assert.equal(m.type, 'tree');
    if (m.type !== 'tree') return;
    assert.equal(m.title, 'add_kernel — k.py');
    assert.equal(m.subtitle, 'baseline 1.000 ms · 4 attempts · best 2.50× (#4) · your kernel 1.00× · running');
    assert.equal(m.empty, false);
  });

  it('gives a node its diff against the parent and lets only measured candidates be applied', () => {
    const t = sampleTree();
    const d4 = nodeDetail(t, 4);
    assert.equal(d4?.diff, '@@ line 1 @@\n-v1\n+v4');
    assert.equal(d4?.canApply, true);
    assert.equal(nodeDetail(t, 2)?.canApply, false); // failed
    assert.equal(nodeDetail(t, 0)?.canApply, false); // root
    assert.equal(nodeDetail(t, 5)?.canApply, false); // running
    assert.equal(nodeDetail(t, 99), undefined);
  });

  it('accepts only well-formed messages from the webview', () => {
    assert.equal(isFromWebview({ type: 'apply', id: 3 }), true);
    assert.equal(isFromWebview({ type: 'ready' }), true);
    assert.equal(isFromWebview({ type: 'apply', id: '3' }), false);
    assert.equal(isFromWebview({ type: 'run', id: 3 }), false);
    assert.equal(isFromWebview(null), false);
  });
});

describe('tree view model with the server extras', () => {
  it("uses the server's running flag and progress line, and the root's runtime as the baseline", () => {
    const t = sampleTree();
    delete t.baseline_ms;
    t.nodes = t.nodes.filter((n) => n.id !== 5);
    t.nodes[0].runtime_ms = 0.5;
    const m = treeMessage({ ...t, running: true, progress: '3/8 attempts' }, 'k.py');
    assert.equal(m.type === 'tree' && m.subtitle, 'baseline 0.500 ms · 4 attempts · best 2.50× (#4) · your kernel 1.00× · running: 3/8 attempts');
  });

  it('leaves abandoned nodes out of the attempts and shows a failed node its error', () => {
    const t = sampleTree();
    t.nodes.push({ ...t.nodes[3], id: 6, status: 'abandoned' });
    t.nodes[2].error = 'line 3: undefined name';
    const m = treeMessage({ ...t, running: false }, 'k.py');
    assert.equal(m.type === 'tree' && m.subtitle, 'baseline 1.000 ms · 4 attempts · best 2.50× (#4) · your kernel 1.00×');
    assert.equal(nodeDetail(t, 2)?.summary, 'node 2\nline 3: undefined name');
    t.nodes[4].profile = 'ncu: dram 81% of peak, sm 12%';
    assert.equal(nodeDetail(t, 4)?.summary, `${t.nodes[4].summary}\nncu: dram 81% of peak, sm 12%`);
  });
});
