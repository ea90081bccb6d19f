import { strict as assert } from 'assert';
import { actionTitles, commandOf, helperSearchFrom, kernelFromActions } from '../../src/serverActions';

const U = 'file:///w/k.cu';

describe('server code actions', () => {
  it('reads commands from CodeActions and bare Commands', () => {
    assert.equal(commandOf({ title: 'x', command: 'stark.optimize' })?.command, 'stark.optimize');
    assert.equal(commandOf({ title: 'x', command: { command: 'stark.applyBest', title: 'y' } })?.command, 'stark.applyBest');
    assert.equal(commandOf({ title: 'x', edit: {} }), undefined);
  });

  it('finds the kernel of the stark actions for this document', () => {
    const actions = [
      { title: 'Organize imports', command: { command: 'other', arguments: [U, 'nope'] } },
      { title: 'Optimize kernel', command: { command: 'stark.optimize', arguments: ['file:///elsewhere.cu', 'x'] } },
      { title: 'Optimize kernel', command: { command: 'stark.optimize', arguments: [U, 'add_kernel'] } },
    ];
    assert.equal(kernelFromActions(actions, U), 'add_kernel');
    assert.equal(kernelFromActions(actions.slice(0, 2), U), undefined);
    assert.deepEqual(actionTitles([...actions, { command: 'c' }]), ['Organize imports', 'Optimize kernel', 'Optimize kernel']);
  });

  it("finds a helper module's search of the file that uses it", () => {
    const H = 'file:///w/pkg/helpers.py';
    const search = { title: 'Optimize kernel rms_kernel (via rms.py, which uses this helper)', command: { command: 'stark.optimizeHelperUser', arguments: [H, 'file:///w/pkg/rms.py', 'rms_kernel'] } };
    assert.deepEqual(helperSearchFrom([search], H), search.command);
    assert.equal(helperSearchFrom([search], U), undefined); // another document's
    assert.equal(helperSearchFrom([{ title: 'Optimize kernel', command: { command: 'stark.optimize', arguments: [H, 'k'] } }], H), undefined);
  });
});
