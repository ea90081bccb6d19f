import { strict as assert } from 'assert';
import { Searches, statusText } from '../../src/searches';
import { node, sampleTree } from './tree/fixtures';

const U = 'file:///w/k.py';

describe('search tracking', () => {
  it('is idle with no searches', () => {
    const t = statusText(new Searches());
    assert.equal(t.text, '$(rocket) STARK');
    assert.match(t.tooltip, /No searches yet/);
  });

  it('counts a started search as running until its tree shows none running', () => {
    const s = new Searches();
    s.started(U, 'add_kernel');
    s.treeUpdated(U, { ...sampleTree(), nodes: [node(0, null, 1)] });
    assert.equal(s.runningCount(), 1, 'start request still in flight');
    s.requestFinished(U, 'add_kernel', sampleTree());
    assert.equal(s.runningCount(), 1, 'node 5 is running');
    const done = sampleTree();
    done.nodes = done.nodes.filter((n) => n.id !== 5);
    s.treeUpdated(U, done);
    assert.equal(s.runningCount(), 0);
    assert.equal(s.get(U, 'add_kernel')?.best, 2.5);
    assert.equal(s.get(U, 'add_kernel')?.bestNodeId, 4);
  });

  it('shows the running count and the best speedup over all searches', () => {
    const s = new Searches();
    s.started(U, 'add_kernel');
    s.treeUpdated(U, sampleTree());
    s.treeUpdated('file:///w/other.py', { ...sampleTree(), kernel: 'mul', nodes: [node(0, null, 1), node(1, 0, 1.5)] });
    const t = statusText(s);
    assert.equal(t.text, '$(sync~spin) STARK: 1 running · best 2.50×');
    assert.match(t.tooltip, /add_kernel: running, best 2\.50×/);
    assert.match(t.tooltip, /mul: idle, best 1\.50×/);
  });

  it('stops counting a stopped search', () => {
    const s = new Searches();
    s.started(U, 'k');
    s.stopped(U, 'k');
    assert.equal(s.runningCount(), 0);
  });
});

describe('search tracking with the server running flag', () => {
  it("trusts the tree's running flag over node statuses", () => {
    const s = new Searches();
    s.treeUpdated(U, { ...sampleTree(), running: false });
    assert.equal(s.runningCount(), 0, 'node 5 says running, the server says the job ended');
    s.treeUpdated(U, { ...sampleTree(), nodes: [node(0, null, 1)], running: true });
    assert.equal(s.runningCount(), 1);
  });
});
