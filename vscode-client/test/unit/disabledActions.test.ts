import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { showDisabledReasons, TITLE_REASON_CHARS, unavailableTitle, WHY_NOT_COMMAND, whyNotMessage } from '../../src/disabledActions';
import { CodeAction, CodeActionKind } from './stubs/vscode';

const REASON = 'create add_relu.harness.py first: the harness says what add_relu_kernel must compute (reference) and on which inputs (get_inputs)';

function serverActions(): vscode.CodeAction[] {
  const fix = new CodeAction('Create add_relu.harness.py for add_relu_kernel', CodeActionKind.QuickFix);
  fix.command = { title: fix.title, command: 'stark.createHarness', arguments: ['file:///w/add_relu.py', 'add_relu_kernel'] };
  fix.isPreferred = true;
  const opt = new CodeAction('Optimize kernel add_relu_kernel', CodeActionKind.RefactorRewrite);
  opt.disabled = { reason: REASON };
  return [fix, opt] as unknown as vscode.CodeAction[];
}

describe('disabled code actions where VS Code hides them', () => {
  it('the lightbulb and Ctrl+. (no kind asked for) get each disabled action enabled, saying why', () => {
    const [fix, opt] = serverActions();
    const shown = showDisabledReasons([fix, opt], undefined) as vscode.CodeAction[];
    assert.equal(shown.length, 2);
    assert.equal(shown[0], fix); // an action that can run is left as it is
    const why = shown[1];
    assert.equal(why.disabled, undefined);
    assert.equal(why.kind, opt.kind);
    assert.ok(why.title.startsWith('Optimize kernel add_relu_kernel (unavailable: create add_relu.harness.py first'), why.title);
    assert.ok(why.title.endsWith('…)'), why.title); // the reason shortened in the title...
    assert.deepEqual(why.command, { title: 'Optimize kernel add_relu_kernel', command: WHY_NOT_COMMAND, arguments: ['Optimize kernel add_relu_kernel', REASON] }); // ...whole in its command
  });

  it('a menu for a kind (Refactor…) gets the disabled action as it is, greyed out with its reason', () => {
    const actions = serverActions();
    assert.equal(showDisabledReasons(actions, CodeActionKind.Refactor), actions);
    assert.equal(showDisabledReasons(null, undefined), null);
    assert.equal(showDisabledReasons(undefined, undefined), undefined);
  });

  it('titles keep a short reason whole, its first line only', () => {
    assert.equal(unavailableTitle('Optimize kernel k', 'needs an NVIDIA GPU'), 'Optimize kernel k (unavailable: needs an NVIDIA GPU)');
    assert.equal(unavailableTitle('Optimize kernel k', '\nfix the syntax error on line 12 first\nmore'), 'Optimize kernel k (unavailable: fix the syntax error on line 12 first)');
    const long = unavailableTitle('Optimize kernel k', 'x'.repeat(500));
    assert.equal(long.length, 'Optimize kernel k (unavailable: )'.length + TITLE_REASON_CHARS);
    assert.equal(whyNotMessage('Optimize kernel k', 'needs an NVIDIA GPU'), 'STARK: Optimize kernel k is unavailable: needs an NVIDIA GPU');
  });
});
