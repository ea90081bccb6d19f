import { strict as assert } from 'assert';
import { Searches, statusText } from '../../src/searches';
import { sampleTree } from './tree/fixtures';

const run = (uri: string, kernel: string, progress = 'attempt 1/30') => ({ uri, kernel, task_id: 't', progress, best: null, stopping: false });

describe('searches', () => {
  it('follows what the server says runs, under its current uri', () => {
    const s = new Searches();
    s.setRunning([run('file:///a.py', 'a')]);
    assert.equal(s.isRunning('file:///a.py'), true);
    s.setRunning([run('file:///moved.py', 'a')]); // renamed: the server names it by its new uri
    assert.equal(s.isRunning('file:///a.py'), false);
    assert.equal(s.isRunning('file:///moved.py'), true);
    s.setRunning([]);
    assert.deepEqual(s.running(), []);
  });

  it("keeps each file's best, labelled by the server", () => {
    const s = new Searches();
    s.treeUpdated('file:///k.py', sampleTree());
    assert.equal(s.bestOverall()?.bestText, 'best 2.50× your kernel (#4)');
    assert.equal(s.bestOverall()?.bestGain, 2.5);
    const rootBest = { ...sampleTree(), best: 0, best_text: 'nothing beats your kernel yet' };
    s.treeUpdated('file:///k.py', rootBest);
    assert.equal(s.bestOverall(), undefined);
  });

  it('forgets a file removed from disk, and only that one', () => {
    const s = new Searches();
    s.treeUpdated('file:///k.py', sampleTree());
    s.treeUpdated('file:///other.py', sampleTree());
    s.forget('file:///k.py');
    assert.equal(s.of('file:///k.py'), undefined);
    assert.doesNotMatch(statusText(s, 'file:///k.py').text, /best/);
    assert.equal(s.of('file:///other.py')?.bestText, 'best 2.50× your kernel (#4)');
  });
});

describe('status text', () => {
  it('says what runs, then the best result', () => {
    const s = new Searches();
    assert.equal(statusText(s).text, '$(rocket) STARK');
    s.setRunning([run('file:///k.py', 'add_kernel', 'attempt 3/30 · best 1.20× your kernel (#1)')]);
    assert.equal(statusText(s).text, '$(sync~spin) STARK: optimizing add_kernel');
    assert.match(statusText(s).tooltip, /add_kernel: attempt 3\/30/);
    s.setRunning([run('file:///k.py', 'add_kernel'), run('file:///b.py', 'b')]);
    assert.equal(statusText(s).text, '$(sync~spin) STARK: 2 searches (add_kernel, b)');
    s.setRunning([]);
    s.treeUpdated('file:///k.py', sampleTree());
    const kernel = sampleTree().kernel;
    assert.equal(statusText(s, 'file:///k.py').text, `$(rocket) STARK · ${kernel}: best 2.50× your kernel`);
    // another file active: its own kernel or nothing, never the best of another kernel
    assert.equal(statusText(s, 'file:///other.py').text, '$(rocket) STARK');
    assert.equal(statusText(s).text, '$(rocket) STARK');
  });
});
