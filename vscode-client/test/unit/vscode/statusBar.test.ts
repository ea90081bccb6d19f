import { strict as assert } from 'assert';
import { Searches } from '../../../src/searches';
import { StatusBar } from '../../../src/statusBar';
import { fake } from '../stubs/vscode';

describe('status bar item', () => {
  it('stays hidden until STARK is in use, opens the tree on click and follows the searches', () => {
    const searches = new Searches();
    const bar = new StatusBar(searches);
    const item = fake.statusItems[0];
    assert.equal(item.visible, false);
    bar.show();
    assert.equal(item.visible, true);
    assert.equal(item.command, 'stark.ui.showTree');
    assert.equal(item.text, '$(rocket) STARK');
    searches.setRunning([{ uri: 'file:///k.py', kernel: 'add_kernel', task_id: 't', progress: 'attempt 1/3', best: null, stopping: false }]);
    bar.update();
    assert.equal(item.text, '$(sync~spin) STARK: optimizing add_kernel');
    bar.dispose();
    assert.equal(item.visible, false);
  });
});
