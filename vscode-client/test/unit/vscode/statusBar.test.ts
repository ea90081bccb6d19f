import { strict as assert } from 'assert';
import { Searches } from '../../../src/searches';
import { StatusBar } from '../../../src/statusBar';
import { fake } from '../stubs/vscode';
import { sampleTree } from '../tree/fixtures';

describe('status bar item', () => {
  it('is shown, opens the tree on click and follows the searches', () => {
    const searches = new Searches();
    const bar = new StatusBar(searches);
    const item = fake.statusItems[0];
    assert.equal(item.visible, true);
    assert.equal(item.command, 'stark.ui.showTree');
    assert.equal(item.text, '$(rocket) STARK');
    searches.started('file:///k.py', 'add_kernel');
    searches.treeUpdated('file:///k.py', sampleTree());
    bar.update();
    assert.equal(item.text, '$(sync~spin) STARK: 1 running · best 2.50×');
    bar.dispose();
    assert.equal(item.visible, false);
  });
});
