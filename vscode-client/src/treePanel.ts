/**
 * The search-tree webview: one panel, showing one (document, kernel) at a time,
 * refreshed on `stark/treeChanged`.
 */
import * as vscode from 'vscode';
import type { ServerManager } from './server';
import { makeNonce, treePageHtml } from './tree/html';
import { isFromWebview, type ToWebview } from './tree/messages';
import type { SearchTree, TreeParams } from './tree/types';
import { nodeDetail, treeMessage } from './tree/view-model';

export class TreePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private target: TreeParams | undefined;
  private tree: SearchTree | undefined;
  private readonly shown = new vscode.EventEmitter<SearchTree>();
  /** Fires each time a tree has been sent to the webview. */
  readonly onDidShowTree = this.shown.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: ServerManager,
    private readonly applyCandidate: (target: TreeParams, nodeId: number) => Promise<void>,
  ) {}

  get current(): { target: TreeParams; tree: SearchTree | undefined } | undefined {
    return this.target ? { target: this.target, tree: this.tree } : undefined;
  }

  show(target: TreeParams): void {
    this.target = target;
    this.tree = undefined;
    if (!this.panel) this.panel = this.createPanel();
    else this.panel.reveal(vscode.ViewColumn.Beside, true);
    this.panel.title = `STARK: ${target.kernel}`;
    void this.refresh();
  }

  /** Called on `stark/treeChanged`: refreshes when it concerns what is shown. */
  isShowing(p: TreeParams): boolean {
    return !!this.panel && !!this.target && this.target.uri === p.uri && this.target.kernel === p.kernel;
  }

  /** Shows a tree that was fetched elsewhere (saves a request). */
  update(tree: SearchTree): void {
    if (!this.panel || !this.target) return;
    this.tree = tree;
    this.post(treeMessage(tree, vscode.workspace.asRelativePath(vscode.Uri.parse(this.target.uri))));
    this.shown.fire(tree);
  }

  async refresh(): Promise<void> {
    if (!this.panel || !this.target) return;
    try {
      this.update(await this.server.tree(this.target));
    } catch (e) {
      this.post({ type: 'error', message: `Could not load the search tree: ${e instanceof Error ? e.message : String(e)}` });
    }
  }

  private post(m: ToWebview): void {
    void this.panel?.webview.postMessage(m);
  }

  private createPanel(): vscode.WebviewPanel {
    const media = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const panel = vscode.window.createWebviewPanel(
      'stark.searchTree',
      'STARK search tree',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true },
    );
    const nonce = makeNonce();
    panel.webview.html = treePageHtml({
      cspSource: panel.webview.cspSource,
      nonce,
      scriptUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(media, 'webview.js')).toString(),
      title: 'STARK search tree',
    });
    panel.webview.onDidReceiveMessage(async (m: unknown) => {
      if (!isFromWebview(m) || !this.target) return;
      if (m.type === 'ready') {
        if (this.tree) this.update(this.tree);
        else await this.refresh();
      } else if (m.type === 'select') {
        const detail = this.tree && nodeDetail(this.tree, m.id);
        if (detail) this.post({ type: 'detail', detail });
      } else if (m.type === 'apply') {
        await this.applyCandidate(this.target, m.id);
      }
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
    return panel;
  }

  dispose(): void {
    this.panel?.dispose();
    this.shown.dispose();
  }
}
