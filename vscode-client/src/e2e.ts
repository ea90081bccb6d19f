/**
 * Test-only self-drive for the end-to-end test in a real VS Code
 * (scripts/e2e.sh). Active only when STARK_E2E_REPORT names a file: the
 * extension opens the sample, goes through the user's steps with VS Code's
 * own providers (code actions, hover, diagnostics) and writes what it saw to
 * that JSON file, stage by stage. Before applying the best candidate it waits
 * for `<report>.continue` (the driver's screenshot), at most STARK_E2E_PAUSE_S.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import { kernelAtCursor, type Commands } from './commands';
import { findKernels } from './kernels';
import type { ServerManager } from './server';
import { actionTitles } from './serverActions';
import type { TreePanel } from './treePanel';
import { bestCandidate } from './tree/outcome';
import type { SearchTree } from './tree/types';

export interface E2eDeps {
  reportPath: string;
  server: ServerManager;
  commands: Commands;
  treePanel: () => TreePanel;
  output: vscode.OutputChannel;
}

const seconds = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v * 1000 : fallback * 1000;
};

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` until it returns a value (not undefined) or the time is up. */
async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined> | T | undefined, every = 1000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${Math.round(ms / 1000)} s waiting for ${what}`);
    await sleep(every);
  }
}

function hoverText(hovers: vscode.Hover[] | undefined): string[] {
  const out: string[] = [];
  for (const h of hovers ?? []) {
    for (const c of h.contents) out.push(typeof c === 'string' ? c : 'value' in c ? c.value : String(c));
  }
  return out;
}

async function findSample(): Promise<vscode.Uri> {
  const named = process.env.STARK_E2E_FILE;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (named) return named.startsWith('/') || !folder ? vscode.Uri.file(named) : vscode.Uri.joinPath(folder, named);
  for (const uri of await vscode.workspace.findFiles('**/*.py', '**/*.harness.py', 50)) {
    const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    if (/@triton\.jit/.test(text)) return uri;
  }
  throw new Error('no Triton sample in the workspace (set STARK_E2E_FILE)');
}

export async function runE2eSelfTest(d: E2eDeps): Promise<void> {
  const report: Record<string, unknown> = { stage: 'starting', steps: [] as string[], startedAt: new Date().toISOString() };
  const write = () => fs.writeFileSync(d.reportPath, JSON.stringify(report, null, 2));
  const step = (stage: string, data: Record<string, unknown> = {}) => {
    Object.assign(report, data, { stage });
    (report.steps as string[]).push(stage);
    d.output.appendLine(`[e2e] ${stage}`);
    write();
  };
  const searchMs = seconds('STARK_E2E_SEARCH_S', 900);
  try {
    step('server-running', { serverRunning: d.server.running });
    if (!d.server.running) throw new Error('the server did not start (see the STARK output channel)');

    const uri = await findSample();
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc, vscode.ViewColumn.One);
    const original = doc.getText();
    const kernels = findKernels(original, doc.languageId, doc.fileName);
    if (kernels.length === 0) throw new Error(`no kernel found in ${uri.fsPath}`);
    const k = kernels[0];
    const line = doc.lineAt(k.line);
    const namePos = new vscode.Position(k.line, line.text.indexOf(k.name));
    editor.selection = new vscode.Selection(namePos, namePos);
    step('opened', { file: uri.fsPath, languageId: doc.languageId, kernels: kernels.map((x) => x.name) });

    const actionsBefore = await waitFor('the server\'s "Optimize kernel" code action', seconds('STARK_E2E_ACTIONS_S', 60), async () => {
      const a = await vscode.commands.executeCommand<unknown[]>('vscode.executeCodeActionProvider', uri, new vscode.Range(namePos, namePos));
      const titles = actionTitles(a ?? []);
      return titles.some((t) => /optimi[sz]e/i.test(t)) ? titles : undefined;
    });
    const target = (await kernelAtCursor(editor)) ?? { uri: uri.toString(), kernel: k.name };
    step('code-actions', { codeActionsBefore: actionsBefore, kernel: target.kernel });

    // Start the search the way a user does, then wait for its diagnostic.
    const optimizing = d.commands.optimize(target);
    step('optimize-started');
    const diag = await waitFor('the speedup diagnostic', searchMs, () =>
      vscode.languages.getDiagnostics(uri).find((x) => /faster/i.test(x.message)),
    );
    await optimizing;
    // The diagnostic can come mid-search: let the (small-budget) search finish first.
    const finished = await waitFor('the search to finish', searchMs, async () => {
      const t = await d.server.tree(target);
      return t.running ? undefined : t;
    }, 2000);
    step('diagnostic', {
      searchFinished: { nodes: finished.nodes.length, best: finished.best ?? null },
      diagnostic: { message: diag.message, severity: vscode.DiagnosticSeverity[diag.severity], line: diag.range.start.line, source: diag.source },
    });

    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, diag.range.start);
    const hoverAtName = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, namePos);
    const actionsAfter = actionTitles(
      (await vscode.commands.executeCommand<unknown[]>('vscode.executeCodeActionProvider', uri, diag.range)) ?? [],
    );
    step('hover', { hover: hoverText(hovers), hoverAtName: hoverText(hoverAtName), codeActionsAfter: actionsAfter });

    // Show the tree and wait until it has been drawn.
    const panel = d.treePanel();
    const shown = new Promise<SearchTree>((resolve) => {
      const sub = panel.onDidShowTree((t) => {
        sub.dispose();
        resolve(t);
      });
    });
    await d.commands.showTree(target);
    const tree = await Promise.race([shown, sleep(60_000).then(() => undefined)]);
    if (!tree) throw new Error('the tree view did not receive a tree');
    const speedups = tree.nodes.map((n) => n.speedup ?? 0);
    step('tree-shown', { tree: { kernel: tree.kernel, nodes: tree.nodes.length, bestSpeedup: Math.max(0, ...speedups) } });
    const front = await vscode.window.showTextDocument(doc, vscode.ViewColumn.One);
    front.selection = new vscode.Selection(diag.range.start, diag.range.start);
    // Show the hover in the editor too, for the screenshot.
    await vscode.commands.executeCommand('editor.action.showHover');

    // Let the driver take its screenshot of the editor with the diagnostic and the tree.
    step('ready-for-screenshot');
    const cont = d.reportPath + '.continue';
    await waitFor('the screenshot', seconds('STARK_E2E_PAUSE_S', 120), () => (fs.existsSync(cont) ? true : undefined), 500).catch(() => undefined);

    const changed = new Promise<void>((resolve) => {
      const sub = vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.uri.toString() === uri.toString() && e.document.getText() !== original) {
          sub.dispose();
          resolve();
        }
      });
    });
    await d.commands.applyBest(target);
    await Promise.race([changed, sleep(60_000)]);
    const applied = doc.getText();
    if (doc.isDirty) await doc.save();
    const onDisk = fs.readFileSync(uri.fsPath, 'utf8');
    const last = await d.server.tree(target);
    const best = bestCandidate(last.nodes, last.best);
    step('applied', {
      fileChanged: onDisk !== original,
      savedMatchesEditor: onDisk === applied,
      bestNodeId: best?.id ?? null,
      fileMatchesBestSource: best ? onDisk.trim() === best.source.trim() : false,
      fileAfter: onDisk,
    });
    step('done', { ok: onDisk !== original });
  } catch (e) {
    report.error = e instanceof Error ? e.message : String(e);
    step('failed', { ok: false });
  }
}
