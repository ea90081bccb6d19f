/** Entry point: wires the server, the commands, the status bar and the tree view. */
import * as vscode from 'vscode';
import { ApiKeyStore } from './apiKey';
import { Coalescer } from './coalesce';
import { Commands } from './commands';
import { runE2eSelfTest } from './e2e';
import { onActivePythonChanged } from './pythonExtension';
import { Searches, searchKey } from './searches';
import { ServerManager } from './server';
import { RESTART_KEYS } from './settings';
import { StatusBar } from './statusBar';
import { TreePanel } from './treePanel';
import type { TreeParams } from './tree/types';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('STARK');
  const apiKeys = new ApiKeyStore(context.secrets);
  const server = new ServerManager(output, apiKeys);
  const searches = new Searches();
  const status = new StatusBar(searches);
  let panel: TreePanel | undefined;
  const commands = new Commands({ server, searches, status, panel: () => treePanel(), apiKeys, output });
  const treePanel = (): TreePanel => {
    panel ??= new TreePanel(context.extensionUri, server, (t, id) => commands.applyCandidate(t, id));
    return panel;
  };

  // stark/treeChanged: refresh the status and, when shown, the tree view.
  const targets = new Map<string, TreeParams>();
  const refresher = new Coalescer<string>(async (key) => {
    const t = targets.get(key);
    if (!t) return;
    const tree = await server.tree(t);
    searches.treeUpdated(t.uri, tree);
    status.update();
    if (panel?.isShowing(t)) panel.update(tree);
  });
  server.onTreeChanged((p) => {
    const key = searchKey(p.uri, p.kernel);
    targets.set(key, { uri: p.uri, kernel: p.kernel });
    void refresher.request(key);
  });

  context.subscriptions.push(
    output,
    server,
    status,
    { dispose: () => panel?.dispose() },
    ...commands.register(),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(k))) void commands.restart();
    }),
    apiKeys.onDidChange(async () => {
      try {
        await server.sendApiKey((await apiKeys.get()) ?? '');
      } catch (e) {
        output.appendLine(`[client] could not send the API key: ${e instanceof Error ? e.message : String(e)}`);
      }
    }),
  );
  const pyWatch = await onActivePythonChanged(() => {
    if (!vscode.workspace.getConfiguration('stark').get<string>('python')) void commands.restart();
  });
  if (pyWatch) context.subscriptions.push(pyWatch);

  const started = server.start().catch(() => undefined);
  const report = process.env.STARK_E2E_REPORT;
  if (report) {
    void started.then(() => runE2eSelfTest({ reportPath: report, server, commands, treePanel, output }));
  }
}

export function deactivate(): void {
  // Disposables in context.subscriptions stop the server.
}
