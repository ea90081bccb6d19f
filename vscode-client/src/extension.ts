/**
 * Entry point: wires the server, the commands, the status bar and the tree view.
 *
 * The extension activates for CUDA files and for Python files (VS Code cannot
 * activate on a file's content), but the server starts only when a kernel
 * document is open (`activation.ts`: a .cu file, a Triton kernel, a
 * KernelBench Model) or a STARK command runs.
 */
import * as vscode from 'vscode';
import { isKernelDocument } from './activation';
import { ApiKeyStore } from './apiKey';
import { Coalescer } from './coalesce';
import { Commands } from './commands';
import { onActivePythonChanged } from './pythonExtension';
import { Searches } from './searches';
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
    panel ??= new TreePanel(context.extensionUri, server, {
      apply: (t, id) => commands.applyCandidate(t, id),
      stop: (t) => commands.stop(t),
      continueSearch: (t, extra) => commands.continueSearch(t, extra),
    });
    return panel;
  };

  // stark/treeChanged: refresh the status and, when shown, the tree view.
  const targets = new Map<string, TreeParams>();
  const refresher = new Coalescer<string>(async (uri) => {
    const t = targets.get(uri);
    if (!t) return;
    const tree = await server.tree(t);
    searches.treeUpdated(t.uri, tree);
    status.update();
    if (panel?.isShowing(t)) panel.update(tree);
  });
  server.onTreeChanged((p) => {
    targets.set(p.uri, { uri: p.uri, kernel: p.kernel });
    void refresher.request(p.uri);
  });
  server.onSearches((list) => {
    searches.setRunning(list);
    status.update();
  });
  // a kernel file removed on disk (from a terminal too) loses its figures in the status bar; saved again,
  // its tree is read again
  const files = vscode.workspace.createFileSystemWatcher('**/*', false, true, false);
  files.onDidDelete((uri) => {
    searches.forget(uri.toString());
    status.update();
  });
  files.onDidCreate((uri) => {
    if (targets.has(uri.toString())) void refresher.request(uri.toString());
  });

  // Start the server for the first kernel document, not for every Python file.
  let wanted = false;
  const consider = (doc: vscode.TextDocument) => {
    if (wanted || doc.uri.scheme !== 'file' || !isKernelDocument(doc.languageId, doc.fileName, doc.getText())) return;
    wanted = true;
    status.show();
    server.start().catch(() => undefined);
  };
  vscode.workspace.textDocuments.forEach(consider);

  context.subscriptions.push(
    output,
    server,
    status,
    files,
    { dispose: () => panel?.dispose() },
    ...commands.register(),
    vscode.workspace.onDidOpenTextDocument(consider),
    vscode.workspace.onDidSaveTextDocument(consider), // a Python file that just got its first @triton.jit
    vscode.window.onDidChangeActiveTextEditor(() => status.update()), // the status bar names the active kernel
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (server.running && RESTART_KEYS.some((k) => e.affectsConfiguration(k))) void commands.restart();
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
    if (server.running && !vscode.workspace.getConfiguration('stark').get<string>('python')) void commands.restart();
  });
  if (pyWatch) context.subscriptions.push(pyWatch);
}

export function deactivate(): void {
  // Disposables in context.subscriptions stop the server.
}
