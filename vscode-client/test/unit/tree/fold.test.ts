import { strict as assert } from 'assert';
import { FOLDABLE, foldOutcome, folds, foldSummary, refoldable } from '../../../src/tree/fold';
import type { TreeNode } from '../../../src/tree/types';
import { node } from './fixtures';

/**
 *            0 (root)
 *       /    |     \\
 *      1     6      9 (failed)
 *    (1.5×) (failed) |
 *    /  \\     |     10 (failed, a repair)
 *   2    3    7 (slower)
 * (best)(failed)
 *        |  \\
 *        4   5 (failed, slower)
 */
function tree(): TreeNode[] {
  return [
    node(0, null, 1, 'root'),
    node(1, 0, 1.5),
    node(2, 1, 2.5),
    node(3, 1, null, 'failed'),
    node(4, 3, null, 'failed', { status: 'incorrect', kind: 'debug' }),
    node(5, 3, 0.9, 'slower'),
    node(6, 0, null, 'failed', { status: 'runtime_error' }),
    node(7, 6, 0.8, 'slower'),
    node(8, 7, null, 'nothing_new'),
    node(9, 0, null, 'failed'),
    node(10, 9, null, 'failed', { kind: 'debug' }),
  ];
}
const path = new Set([0, 1, 2]);

describe('folded subtrees', () => {
  it('folds each topmost subtree where nothing is faster, of two attempts or more', () => {
    const f = folds(tree(), path);
    assert.deepEqual([...f.keys()].sort((a, b) => a - b), [3, 6]); // #6's and #9's: one, under the root
    assert.deepEqual(f.get(3)?.ids, [3, 4, 5]);
    assert.deepEqual(f.get(3)?.tops, [3]);
    assert.equal(f.get(3)?.parent, 1);
    assert.deepEqual(f.get(3)?.outcomes, { failed: 2, slower: 1 });
    assert.deepEqual(f.get(3)?.failures, [['compile_error', 1], ['incorrect', 1]]);
    assert.deepEqual(f.get(6)?.ids, [6, 7, 8, 9, 10]); // each whole chain, folded at its top
    assert.equal(f.get(6)?.depth, 2);
  });

  it('merges the folds under one parent into one, keeping each subtree\'s top', () => {
    const m = folds(tree(), path).get(6);
    assert.ok(m);
    assert.deepEqual(m.tops, [6, 9]);
    assert.equal(m.parent, 0);
    assert.deepEqual(m.outcomes, { failed: 3, slower: 1, nothing_new: 1 });
    assert.deepEqual(m.failures, [['compile_error', 2], ['runtime_error', 1]]);
    assert.equal(foldSummary(m), '5 attempts: 3 failed (2 compile error, 1 runtime error), 1 not faster, 1 nothing new');
    // many small dead ends under one node (200 attempts: rows of them): one folded node
    const wide = [node(0, null, 1, 'root'), node(1, 0, 1.4)];
    for (let i = 0; i < 30; i++) wide.push(node(2 + 2 * i, 0, null, 'failed'), node(3 + 2 * i, 2 + 2 * i, null, 'failed', { kind: 'debug' }));
    const w = folds(wide, new Set([0, 1]));
    assert.equal(w.size, 1);
    assert.equal(w.get(2)?.tops.length, 30);
    assert.equal(w.get(2)?.ids.length, 60);
    // one of them opened: the others still fold, together
    const opened = folds(wide, new Set([0, 1]), new Set([2]));
    assert.deepEqual([...opened.keys()], [4]);
    assert.equal(opened.get(4)?.tops.length, 29);
  });

  it('never folds the best path, nor a subtree with a faster or running node', () => {
    const nodes = tree();
    assert.equal(folds(nodes, path).has(1), false);
    assert.equal([...folds(nodes, path).values()].some((f) => f.ids.some((id) => path.has(id))), false);
    nodes.push(node(11, 7, 1.2, 'faster'));
    assert.equal(folds(nodes, path).has(6), false); // #11 is faster: the subtree stays drawn...
    nodes.push(node(12, 10, null, 'running'));
    assert.equal(folds(nodes, path).has(9), false); // ... and so does one with an attempt in flight
    // a failed node on the best path (the best was repaired from it) is kept, and so is its parent line
    const repaired = [node(0, null, 1, 'root'), node(1, 0, null, 'failed'), node(2, 1, 1.4, 'faster', { kind: 'debug' })];
    assert.equal(folds(repaired, new Set([0, 1, 2])).size, 0);
    for (const o of ['failed', 'slower', 'nothing_new', 'abandoned'] as const) assert.ok(FOLDABLE.has(o));
    assert.equal(FOLDABLE.has('faster') || FOLDABLE.has('running') || FOLDABLE.has('root'), false);
  });

  it('leaves a lone failed or slower leaf alone (its parent\'s "N×" cluster draws it)', () => {
    const nodes = [node(0, null, 1, 'root'), node(1, 0, null, 'failed'), node(2, 0, 0.9, 'slower'), node(3, 0, 1.2)];
    assert.equal(folds(nodes, new Set([0, 3])).size, 0);
  });

  it('keeps a subtree the user opened open, and offers to fold it again', () => {
    const nodes = tree();
    const open = new Set([6]);
    const f = folds(nodes, path, open);
    assert.equal(f.has(6), false);
    assert.equal(f.has(7), false); // inside an opened subtree nothing folds: one click shows it all
    assert.ok(f.has(3) && f.has(9)); // #9's, alone under the root now
    assert.deepEqual(f.get(9)?.tops, [9]);
    assert.deepEqual([...refoldable(nodes, path, open)], [6]);
    nodes.push(node(11, 8, 1.3, 'faster')); // since opened, something faster grew in it: no "fold again"
    assert.deepEqual([...refoldable(nodes, path, open)], []);
    assert.equal(refoldable(tree(), path, new Set()).size, 0);
  });

  it('opening a subtree inside a bigger fold keeps the rest of it folded around it', () => {
    // 0 - 1 (failed) - {2 (failed) - 3 (failed), 4 (failed) - 5 (slower)}; the best is the root
    const nodes = [node(0, null, 1, 'root'), node(1, 0, null, 'failed'), node(2, 1, null, 'failed'), node(3, 2, null, 'failed'),
      node(4, 1, null, 'failed'), node(5, 4, 0.9, 'slower')];
    assert.deepEqual([...folds(nodes, new Set([0])).keys()], [1]);
    const f = folds(nodes, new Set([0]), new Set([2]));
    assert.deepEqual([...f.keys()], [4]); // #1 holds an opened node: drawn; #4's subtree still folds
  });

  it('says how many attempts a fold holds and their statuses', () => {
    const f = folds(tree(), path).get(3);
    assert.ok(f);
    assert.equal(foldSummary(f), '3 attempts: 2 failed (1 compile error, 1 incorrect), 1 not faster');
    assert.equal(foldOutcome(f), 'failed');
    const g = folds(tree(), path, new Set([9])).get(6);
    assert.ok(g);
    assert.equal(foldSummary(g), '3 attempts: 1 failed (1 runtime error), 1 not faster, 1 nothing new');
  });

  it('handles a 1000-node chain and a cycle without recursion', () => {
    const chain = [node(0, null, 1, 'root'), node(1, 0, 1.1)];
    for (let i = 2; i < 1002; i++) chain.push(node(i, i - 1, null, 'failed'));
    const f = folds(chain, new Set([0, 1]));
    assert.equal(f.get(2)?.ids.length, 1000);
    assert.equal(f.get(2)?.depth, 999);
    const cycle = [node(0, null, 1, 'root'), node(1, 2, null, 'failed'), node(2, 1, null, 'failed')];
    assert.equal(folds(cycle, new Set([0])).size, 0);
  });
});
