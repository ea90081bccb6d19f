/**
 * The user-facing commands (ids `stark.ui.*`; the server's own commands keep
 * the `stark.*` ids the language client registers for its code actions).
 */
import * as vscode from 'vscode';
import type { ApiKeyStore } from './apiKey';
import { WHY_NOT_COMMAND, whyNotMessage } from './disabledActions';
import { findKernels, kernelAtLine } from './kernels';
import type { Searches } from './searches';
import type { ServerManager } from './server';
import { type CommandLike, helperSearchFrom, kernelFromActions } from './serverActions';
import type { StatusBar } from './statusBar';
import type { TreePanel } from './treePanel';
import type { TreeParams } from './tree/types';

export interface CommandDeps {
  server: ServerManager;
  searches: Searches;
  status: StatusBar;
  panel: () => TreePanel;
  apiKeys: ApiKeyStore;
  output: vscode.OutputChannel;
}

/** The server's commands answer `{error: "..."}` when they refuse. */
export function refused(answer: unknown): boolean {
  return typeof answer === 'object' && answer !== null && typeof (answer as { error?: unknown }).error === 'string';
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The kernel at the cursor of the active editor: the server's code actions first, else the source. */
export async function kernelAtCursor(editor: vscode.TextEditor | undefined): Promise<TreeParams | undefined> {
  if (!editor) return undefined;
  const doc = editor.document;
  const uri = doc.uri.toString();
  const pos = editor.selection.active;
  try {
    const actions = await vscode.commands.executeCommand<unknown[]>('vscode.executeCodeActionProvider', doc.uri, new vscode.Range(pos, pos));
    const fromServer = kernelFromActions(actions ?? [], uri);
    if (fromServer) return { uri, kernel: fromServer };
  } catch {
    // fall back to reading the source
  }
  const kernels = findKernels(doc.getText(), doc.languageId, doc.fileName);
  if (kernels.length > 1) {
    const inside = kernelAtLine(kernels, pos.line);
    if (inside && inside.line <= pos.line) return { uri, kernel: inside.name };
    const pick = await vscode.window.showQuickPick(kernels.map((k) => k.name), { title: 'STARK: which kernel?' });
    return pick ? { uri, kernel: pick } : undefined;
  }
  const only = kernelAtLine(kernels, pos.line);
  return only ? { uri, kernel: only.name } : undefined;
}

/** The search of the file that uses the helper module at the cursor, as the server offers it, if it does. */
export async function helperSearchAtCursor(editor: vscode.TextEditor | undefined): Promise<CommandLike | undefined> {
  if (!editor || editor.document.languageId !== 'python') return undefined;
  const pos = editor.selection.active;
  try {
    const actions = await vscode.commands.executeCommand<unknown[]>('vscode.executeCodeActionProvider', editor.document.uri, new vscode.Range(pos, pos));
    return helperSearchFrom(actions ?? [], editor.document.uri.toString());
  } catch {
    return undefined;
  }
}

async function requireKernel(): Promise<TreeParams | undefined> {
  const t = await kernelAtCursor(vscode.window.activeTextEditor);
  if (!t) void vscode.window.showWarningMessage('STARK: put the cursor in a CUDA __global__ kernel, a @triton.jit function or a KernelBench Model.');
  return t;
}

export class Commands {
  constructor(private readonly d: CommandDeps) {}

  register(): vscode.Disposable[] {
    const r = vscode.commands.registerCommand;
    return [
      r('stark.ui.optimize', () => this.optimize()),
      r('stark.ui.stop', () => this.stop()),
      r('stark.ui.applyBest', () => this.applyBest()),
      r('stark.ui.showTree', () => this.showTree()),
      r('stark.ui.setApiKey', () => this.setApiKey()),
      r('stark.ui.restartServer', () => this.restart()),
      r(WHY_NOT_COMMAND, (title: string, reason: string) => this.whyNot(title, reason)),
    ];
  }

  private async run(what: string, command: string, args: unknown[]): Promise<unknown> {
    this.d.status.show();
    try {
      // a refusal is shown by the server (window/showMessage) and answered with {error}
      return await this.d.server.executeCommand(command, args);
    } catch (e) {
      void vscode.window.showErrorMessage(`STARK: ${what}: ${message(e)}`);
      return undefined;
    }
  }

  /** Starts a search; resolves when the server answers (it reports the search in `stark/searches`). On a
   * helper module (no task of its own), the search of the file that uses it, as its lightbulb offers. */
  async optimize(target?: TreeParams): Promise<void> {
    const helper = target ? undefined : await helperSearchAtCursor(vscode.window.activeTextEditor);
    if (helper) {
      await this.run(`optimize ${String(helper.arguments?.[2])}`, helper.command, helper.arguments ?? []);
      return;
    }
    const t = target ?? (await requireKernel());
    if (!t) return;
    await vscode.window.activeTextEditor?.document.save();
    await this.run(`optimize ${t.kernel}`, 'stark.optimize', [t.uri, t.kernel]);
  }

  async continueSearch(t: TreeParams, extra: number): Promise<void> {
    await this.run(`continue the search of ${t.kernel}`, 'stark.continueSearch', [t.uri, t.kernel, extra]);
  }

  /** Stops a running search, as the server names it now: the one in the active file, the only one, or one picked. */
  async stop(target?: TreeParams): Promise<void> {
    const running = this.d.searches.running();
    let uri = target?.uri ?? vscode.window.activeTextEditor?.document.uri.toString();
    if (!uri || !running.some((s) => s.uri === uri)) {
      if (running.length === 1) uri = running[0].uri;
      else if (running.length > 1) {
        const pick = await vscode.window.showQuickPick(
          running.map((s) => ({ label: s.kernel, description: vscode.workspace.asRelativePath(vscode.Uri.parse(s.uri)), s })),
          { title: 'STARK: stop which search?' },
        );
        if (!pick) return;
        uri = pick.s.uri;
      } else {
        // the extension knows of none: ask the server to stop whatever it runs
        await this.run('stop', 'stark.stop', []);
        return;
      }
    }
    const s = running.find((x) => x.uri === uri);
    await this.run(`stop ${s?.kernel ?? 'the search'}`, 'stark.stop', [uri, s?.kernel ?? target?.kernel ?? '']);
  }

  async applyBest(target?: TreeParams): Promise<void> {
    const t = target ?? (await requireKernel());
    if (!t) return;
    await this.run(`apply the best candidate of ${t.kernel}`, 'stark.applyBest', [t.uri, t.kernel]);
  }

  async applyCandidate(t: TreeParams, nodeId: number): Promise<void> {
    await this.run(`apply candidate #${nodeId}`, 'stark.applyCandidate', [t.uri, t.kernel, nodeId]);
  }

  async showTree(target?: TreeParams): Promise<void> {
    let t = target ?? (await kernelAtCursor(vscode.window.activeTextEditor));
    if (!t) {
      const running = this.d.searches.running();
      const last = this.d.panel().current?.target ?? running[running.length - 1] ?? this.d.searches.known().slice(-1)[0];
      t = last ? { uri: last.uri, kernel: last.kernel } : undefined;
    }
    if (!t) {
      void vscode.window.showInformationMessage('STARK: open a kernel file and put the cursor in a kernel to see its search tree.');
      return;
    }
    this.d.panel().show(t);
  }

  /** What a disabled action, shown enabled in the lightbulb (disabledActions.ts), does: say why it cannot run. */
  async whyNot(title: string, reason: string): Promise<void> {
    await vscode.window.showWarningMessage(whyNotMessage(title, reason));
  }

  async setApiKey(): Promise<void> {
    const key = await this.d.apiKeys.prompt();
    if (key === undefined) return;
    // The SecretStorage change listener sends it to the server.
    void vscode.window.showInformationMessage(key ? 'STARK: API key saved in secret storage.' : 'STARK: API key cleared.');
  }

  async restart(): Promise<void> {
    try {
      await this.d.server.restart();
      void vscode.window.setStatusBarMessage('STARK: server restarted', 3000);
    } catch (e) {
      this.d.output.appendLine(`[client] restart failed: ${message(e)}`);
    }
  }
}
