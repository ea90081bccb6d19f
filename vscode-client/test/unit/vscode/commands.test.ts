import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { ApiKeyStore } from '../../../src/apiKey';
import { Commands, refused } from '../../../src/commands';
import { Searches } from '../../../src/searches';
import { ServerManager } from '../../../src/server';
import { StatusBar } from '../../../src/statusBar';
import type { TreePanel } from '../../../src/treePanel';
import { created, LanguageClient } from '../stubs/languageclient';
import { fake, makeSecretStorage, Position, Uri, window } from '../stubs/vscode';

const output = { appendLine() {}, show() {} } as unknown as vscode.OutputChannel;
const T = { uri: 'file:///w/k.py', kernel: 'k' };
const running = (uri: string, kernel: string) => ({ uri, kernel, task_id: 't', progress: 'attempt 1/3', best: null, stopping: false });

function setup() {
  const apiKeys = new ApiKeyStore(makeSecretStorage() as unknown as vscode.SecretStorage);
  const server = new ServerManager(output, apiKeys);
  const searches = new Searches();
  const status = new StatusBar(searches);
  const commands = new Commands({ server, searches, status, panel: () => ({}) as TreePanel, apiKeys, output });
  return { commands, searches, server };
}

const commandsSent = () => created[0].sent.filter((s) => s.method === 'workspace/executeCommand').map((s) => s.params);

describe('optimize and stop commands', () => {
  it('asks the server to optimize the kernel', async () => {
    LanguageClient.answer = () => ({ started: true });
    const { commands } = setup();
    await commands.optimize(T);
    assert.deepEqual(commandsSent(), [{ command: 'stark.optimize', arguments: [T.uri, 'k'] }]);
  });

  it('stops the search the server says runs, even under a new name after a rename', async () => {
    const { commands, searches } = setup();
    searches.setRunning([running('file:///w/moved.py', 'k')]);
    await commands.stop(T); // the old name: the only search is stopped under its current one
    assert.deepEqual(commandsSent(), [{ command: 'stark.stop', arguments: ['file:///w/moved.py', 'k'] }]);
  });

  it('asks which search to stop when several run, and stops everything when it knows of none', async () => {
    const { commands, searches } = setup();
    searches.setRunning([running('file:///a.py', 'a'), running('file:///b.py', 'b')]);
    fake.quickPick = async (items: unknown[]) => items[1];
    await commands.stop();
    searches.setRunning([]);
    await commands.stop();
    assert.deepEqual(commandsSent(), [
      { command: 'stark.stop', arguments: ['file:///b.py', 'b'] },
      { command: 'stark.stop', arguments: [] },
    ]);
  });

  it('continues a search with more attempts', async () => {
    const { commands } = setup();
    await commands.continueSearch(T, 30);
    assert.deepEqual(commandsSent(), [{ command: 'stark.continueSearch', arguments: [T.uri, 'k', 30] }]);
  });

  it('recognises refusals', () => {
    assert.equal(refused({ error: 'x' }), true);
    assert.equal(refused({ started: true }), false);
    assert.equal(refused(null), false);
  });
});

describe('why an action is unavailable', () => {
  it('shows the whole reason of a disabled action chosen from the lightbulb', async () => {
    const { commands } = setup();
    await commands.whyNot('Optimize kernel k', 'create k.harness.py first: the harness says what k must compute');
    assert.deepEqual(fake.messages, ['warning: STARK: Optimize kernel k is unavailable: create k.harness.py first: the harness says what k must compute']);
  });
});

describe('optimize at the cursor of a helper module', () => {
  it('runs the search of the file that uses it, as the lightbulb offers it', async () => {
    const H = 'file:///w/pkg/helpers.py';
    const args = [H, 'file:///w/pkg/rms.py', 'rms_kernel'];
    fake.executeCommand = async (id) =>
      id === 'vscode.executeCodeActionProvider' ? [{ title: 'Optimize kernel rms_kernel (via rms.py, which uses this helper)', command: { command: 'stark.optimizeHelperUser', arguments: args } }] : undefined;
    window.activeTextEditor = { document: { uri: Uri.file('/w/pkg/helpers.py'), languageId: 'python', save: async () => true }, selection: { active: new Position(3, 0) } };
    try {
      LanguageClient.answer = () => ({ started: true });
      const { commands } = setup();
      await commands.optimize();
      assert.deepEqual(commandsSent(), [{ command: 'stark.optimizeHelperUser', arguments: args }]);
    } finally {
      window.activeTextEditor = undefined;
    }
  });
});
