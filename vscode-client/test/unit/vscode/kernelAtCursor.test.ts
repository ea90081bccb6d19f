import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { kernelAtCursor } from '../../../src/commands';
import { fake, Position, Uri } from '../stubs/vscode';

const TRITON = '@triton.jit\ndef a_kernel(x):\n    pass\n\n@triton.jit\ndef b_kernel(x):\n    pass\n';

function editor(text: string, line: number): vscode.TextEditor {
  const uri = Uri.file('/w/k.py');
  return {
    document: { uri, getText: () => text, languageId: 'python', fileName: '/w/k.py' },
    selection: { active: new Position(line, 0) },
  } as unknown as vscode.TextEditor;
}

describe('kernel at cursor', () => {
  it("takes the kernel from the server's code action when there is one", async () => {
    fake.executeCommand = async (id) =>
      id === 'vscode.executeCodeActionProvider'
        ? [{ title: 'Optimize kernel', command: { command: 'stark.optimize', arguments: ['file:///w/k.py', 'entry_fn'] } }]
        : undefined;
    assert.deepEqual(await kernelAtCursor(editor(TRITON, 6)), { uri: 'file:///w/k.py', kernel: 'entry_fn' });
  });

  it('otherwise reads the source: the kernel the cursor is in', async () => {
    assert.deepEqual(await kernelAtCursor(editor(TRITON, 6)), { uri: 'file:///w/k.py', kernel: 'b_kernel' });
  });

  it('asks which kernel when the cursor is above several', async () => {
    let offered: unknown[] = [];
    fake.quickPick = async (items) => {
      offered = items;
      return 'b_kernel';
    };
    assert.deepEqual(await kernelAtCursor(editor(TRITON, 0)), { uri: 'file:///w/k.py', kernel: 'b_kernel' });
    assert.deepEqual(offered, ['a_kernel', 'b_kernel']);
  });

  it('gives nothing without an editor or a kernel', async () => {
    assert.equal(await kernelAtCursor(undefined), undefined);
    assert.equal(await kernelAtCursor(editor('print(1)\n', 0)), undefined);
  });
});
