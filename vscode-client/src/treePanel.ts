/**
 * The search-tree webview: one panel, showing one file's tree at a time,
 * refreshed on `stark/treeChanged`. A node's source and diff are fetched
 * (`stark/node`) when it is clicked. Which folded subtrees the user opened
 * is kept here, per file and kernel shown, and the tree redrawn when it changes.
 */
import * as vscode from 'vscode';
import type { ServerManager } from './server';
import { makeNonce, treePageHtml } from './tree/html';
import { isFromWebview, type ToWebview } from './tree/messages';
import type { SearchTree, TreeParams } from './tree/types';
import { clusterDetail, nodeDetail, OpenFolds, treeMessage } from './tree/view-model';

export interface TreeActions {
  apply(target: TreeParams, nodeId: number): Promise<void>;
  stop(target: TreeParams): Promise<void>;
  continueSearch(target: TreeParams, extra: number): Promise<void>;
}

export class TreePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private target: TreeParams | undefined;
  private tree: SearchTree | undefined;
  /** The folded subtrees the user opened. */
  private readonly folds = new OpenFolds();
  private get expanded(): ReadonlySet<number> {
    return this.folds.expanded;
  }
  private readonly shown = new vscode.EventEmitter<SearchTree>();
  /** Fires each time a tree has been sent to the webview. */
  readonly onDidShowTree = this.shown.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: ServerManager,
    private readonly actions: TreeActions,
  ) {}

  get current(): { target: TreeParams; tree: SearchTree | undefined } | undefined {
    return this.target ? { target: this.target, tree: this.tree } : undefined;
  }

  show(target: TreeParams): void {
    if (this.target?.uri !== target.uri || this.target?.kernel !== target.kernel) this.folds.clear();
    this.target = target;
    this.tree = undefined;
    if (!this.panel) this.panel = this.createPanel();
    else this.panel.reveal(vscode.ViewColumn.Beside, true);
    this.panel.title = `STARK: ${target.kernel}`;
    void this.refresh();
  }

  /** Whether a `stark/treeChanged` for this file concerns what is shown (all kernels of a file share one tree). */
  isShowing(p: { uri: string }): boolean {
    return !!this.panel && !!this.target && this.target.uri === p.uri;
  }

  /** Shows a tree that was fetched elsewhere (saves a request). */
  update(tree: SearchTree): void {
    if (!this.panel || !this.target) return;
    this.tree = tree;
    this.post(treeMessage(tree, vscode.workspace.asRelativePath(vscode.Uri.parse(this.target.uri)), { expanded: this.expanded }));
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

  private async select(id: number): Promise<void> {
    if (!this.target) return;
    if (id < 0) {
      const detail = this.tree && clusterDetail(this.tree, id, { expanded: this.expanded });
      if (detail) this.post({ type: 'detail', detail });
      return;
    }
    try {
      const reply = await this.server.node(this.target, id);
      this.post({ type: 'detail', detail: nodeDetail(reply) });
    } catch (e) {
      this.post({ type: 'error', message: `Could not load node #${id}: ${e instanceof Error ? e.message : String(e)}` });
    }
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
      } else if (m.type === 'fold') {
        // a folded node may hold several subtrees of one parent: it opens, and folds again, as one
        if (m.open) this.folds.open(this.tree, m.id);
        else this.folds.close(m.id);
        if (this.tree) this.update(this.tree);
      } else if (m.type === 'select') {
        await this.select(m.id);
      } else if (m.type === 'apply') {
        await this.actions.apply(this.target, m.id);
      } else if (m.type === 'stop') {
        await this.actions.stop(this.target);
      } else if (m.type === 'continue') {
        await this.actions.continueSearch(this.target, this.tree?.budget ?? 30);
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
