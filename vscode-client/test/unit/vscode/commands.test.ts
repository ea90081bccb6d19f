import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { ApiKeyStore } from '../../../src/apiKey';
import { Commands, refused } from '../../../src/commands';
import { Searches } from '../../../src/searches';
import { ServerManager } from '../../../src/server';
import { StatusBar } from '../../../src/statusBar';
import type { TreePanel } from '../../../src/treePanel';
import { LanguageClient } from '../stubs/languageclient';
import { makeSecretStorage } from '../stubs/vscode';

const output = { appendLine() {}, show() {} } as unknown as vscode.OutputChannel;
const T = { uri: 'file:///w/k.py', kernel: 'k' };

function setup() {
  const apiKeys = new ApiKeyStore(makeSecretStorage() as unknown as vscode.SecretStorage);
  const server = new ServerManager(output, apiKeys);
  const searches = new Searches();
  const status = new StatusBar(searches);
  const commands = new Commands({ server, searches, status, panel: () => ({}) as TreePanel, apiKeys, output });
  return { commands, searches };
}

describe('optimize command', () => {
  it('marks the search as running while the server runs it', async () => {
    LanguageClient.answer = (method) =>
      method === 'workspace/executeCommand' ? { started: true } : { kernel: 'k', nodes: [], running: true };
    const { commands, searches } = setup();
    await commands.optimize(T);
    assert.equal(searches.get(T.uri, T.kernel)?.running, true);
  });

  it('does not count a search the server refused', async () => {
    LanguageClient.answer = (method) => (method === 'workspace/executeCommand' ? { error: 'no harness' } : null);
    const { commands, searches } = setup();
    await commands.optimize(T);
    assert.equal(searches.get(T.uri, T.kernel)?.running, false);
  });

  it('recognises refusals', () => {
    assert.equal(refused({ error: 'x' }), true);
    assert.equal(refused({ started: true }), false);
    assert.equal(refused(null), false);
  });
});
