import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { ApiKeyStore, API_KEY_SECRET } from '../../../src/apiKey';
import { ServerManager } from '../../../src/server';
import { created, LanguageClient } from '../stubs/languageclient';
import { CodeAction, CodeActionKind, fake, makeSecretStorage } from '../stubs/vscode';

const output = { appendLine() {}, show() {} } as unknown as vscode.OutputChannel;
const manager = () => new ServerManager(output, new ApiKeyStore(makeSecretStorage() as unknown as vscode.SecretStorage));

describe('server manager', () => {
  it('starts `<stark.python> -m stark_lsp serve` with the settings and the key as initializationOptions', async () => {
    fake.config = { python: '/venv/bin/python', llm: 'openai', budget: 3 };
    fake.secrets.set(API_KEY_SECRET, 'sk-1');
    const m = manager();
    await m.start();
    assert.equal(created.length, 1);
    const c = created[0];
    assert.equal(c.serverOptions.command, '/venv/bin/python');
    assert.deepEqual(c.serverOptions.args, ['-m', 'stark_lsp', 'serve']);
    assert.equal(c.clientOptions.synchronize?.configurationSection, 'stark');
    assert.deepEqual(c.clientOptions.initializationOptions, { llm: 'openai', budget: 3, policy: 'stark', profileTop: 0, evaluation: { workers: 1 }, apiKey: 'sk-1' });
    assert.equal(m.running, true);
  });

  it("uses the Python extension's interpreter when stark.python is empty", async () => {
    fake.extensions['ms-python.python'] = {
      isActive: true,
      exports: { environments: { getActiveEnvironmentPath: () => ({ id: 'x', path: '/conda/bin/python' }) } },
    };
    await manager().start();
    assert.equal(created[0].serverOptions.command, '/conda/bin/python');
  });

  it('falls back to python3', async () => {
    await manager().start();
    assert.equal(created[0].serverOptions.command, 'python3');
  });

  it('restart stops the old client and starts a new one', async () => {
    const m = manager();
    await m.start();
    await m.restart();
    assert.equal(created.length, 2);
    assert.equal(created[0].state, 1 /* stopped */);
    assert.equal(created[1].state, 2 /* running */);
  });

  it('sends commands with positional arguments and tree requests with {uri, kernel}', async () => {
    const m = manager();
    await m.start();
    LanguageClient.answer = (method) => (method === 'stark/tree' ? { kernel: 'k', task_id: 't', baseline_ms: 1, nodes: [] } : null);
    await m.executeCommand('stark.optimize', ['file:///k.py', 'k']);
    const tree = await m.tree({ uri: 'file:///k.py', kernel: 'k' });
    assert.equal(tree.kernel, 'k');
    assert.deepEqual(created[0].sent, [
      { method: 'workspace/executeCommand', params: { command: 'stark.optimize', arguments: ['file:///k.py', 'k'] } },
      { method: 'stark/tree', params: { uri: 'file:///k.py', kernel: 'k' } },
    ]);
  });

  it('forwards stark/treeChanged', async () => {
    const m = manager();
    const seen: unknown[] = [];
    m.onTreeChanged((p) => seen.push(p));
    await m.start();
    created[0].notificationHandlers.get('stark/treeChanged')?.({ uri: 'u', kernel: 'k' });
    assert.deepEqual(seen, [{ uri: 'u', kernel: 'k' }]);
  });

  it('reports a server that does not start, with the interpreter it tried', async () => {
    LanguageClient.failStart = new Error('spawn python3 ENOENT');
    await assert.rejects(manager().start(), /ENOENT/);
    assert.match(fake.messages.join('\n'), /error: STARK: the server did not start with python3 \(spawn python3 ENOENT\)/);
  });

  it('sends the API key only to a running server', async () => {
    const m = manager();
    await m.sendApiKey('sk-2');
    assert.equal(created.length, 0);
    await m.start();
    await m.sendApiKey('sk-2');
    assert.deepEqual(created[0].sent, [{ method: 'workspace/executeCommand', params: { command: 'stark.setApiKey', arguments: ['sk-2'] } }]);
  });
});

describe('server manager: progress, searches, hovers', () => {
  it('shows a search as a progress notification whose Cancel cancels the work-done progress', async () => {
    const m = manager();
    await m.start();
    const c = created[0];
    await c.requestHandlers.get('window/workDoneProgress/create')?.({ token: 'tok' });
    const send = c.progressHandlers.get('tok');
    send?.({ kind: 'begin', title: 'Optimizing k', cancellable: true, message: 'starting the evaluation worker', percentage: 0 });
    await new Promise((r) => setImmediate(r));
    const [p] = fake.progresses;
    assert.equal(p.options.location, 15 /* Notification */);
    assert.equal(p.options.title, 'STARK: Optimizing k');
    assert.equal(p.options.cancellable, true);
    send?.({ kind: 'report', message: 'attempt 3/30 · best 1.20× your kernel (#2)', percentage: 10 });
    assert.deepEqual(p.reports[1], { message: 'attempt 3/30 · best 1.20× your kernel (#2)', increment: 10 });
    p.cancel();
    assert.deepEqual(c.sent.at(-1), { method: 'window/workDoneProgress/cancel', params: { token: 'tok' } });
    send?.({ kind: 'end', message: 'cancelled: 3 attempts' });
    await new Promise((r) => setImmediate(r));
    assert.equal(p.done, true);
  });

  it('forwards stark/searches and says nothing runs once stopped', async () => {
    const m = manager();
    const seen: unknown[] = [];
    m.onSearches((s) => seen.push(s));
    await m.start();
    created[0].notificationHandlers.get('stark/searches')?.({ searches: [{ uri: 'u', kernel: 'k' }] });
    await m.stop();
    assert.deepEqual(seen, [[{ uri: 'u', kernel: 'k' }], []]);
  });
});

describe('server manager: code actions', () => {
  it("passes the server's code actions through a middleware that shows disabled ones' reasons where VS Code hides them", async () => {
    await manager().start();
    const provide = created[0].clientOptions.middleware?.provideCodeActions as unknown as (
      doc: unknown, range: unknown, context: { only?: unknown }, token: unknown, next: () => Promise<unknown[]>) => Promise<vscode.CodeAction[]>;
    assert.ok(provide, 'no provideCodeActions middleware');
    const opt = new CodeAction('Optimize kernel k', CodeActionKind.RefactorRewrite);
    opt.disabled = { reason: 'fix the syntax error on line 12 first' };
    const next = async () => [opt];
    const lightbulb = await provide({}, {}, { only: undefined }, {}, next);
    assert.deepEqual(lightbulb.map((a) => [a.title, a.disabled, a.command?.command]), [
      ['Optimize kernel k (unavailable: fix the syntax error on line 12 first)', undefined, 'stark.ui.whyNot'],
    ]);
    const refactor = await provide({}, {}, { only: CodeActionKind.Refactor }, {}, next);
    assert.deepEqual(refactor, [opt]);
  });
});
