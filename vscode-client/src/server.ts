/**
 * Starts, stops and restarts the STARK language server (`<python> -m stark_lsp serve`
 * over stdio) and forwards commands and tree requests to it.
 */
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { ApiKeyStore } from './apiKey';
import { showDisabledReasons } from './disabledActions';
import { linkSearchTree, SHOW_TREE_COMMAND } from './hoverLinks';
import { chooseInterpreter, describeChoice, serverCommand } from './interpreter';
import { showProgressAsNotifications } from './progressNotification';
import { activePythonFromExtension } from './pythonExtension';
import { readSettings, toInitializationOptions } from './settings';
import {
  NODE_REQUEST,
  type NodeDetailReply,
  type RunningSearch,
  SEARCHES_NOTIFICATION,
  TREE_CHANGED_NOTIFICATION,
  TREE_REQUEST,
  type SearchTree,
  type TreeParams,
} from './tree/types';

export const DOCUMENT_SELECTOR = [
  { language: 'cuda-cpp' },
  { scheme: 'file', pattern: '**/*.{cu,cuh}' },
  { language: 'python' },
];

export function starkConfiguration(): (key: string) => unknown {
  const cfg = vscode.workspace.getConfiguration('stark');
  return (key) => cfg.get(key);
}

/** Hovers keep the server's text; its "open the search tree" becomes a link to the tree view. */
function linkedHover(hover: vscode.Hover | null | undefined): vscode.Hover | null | undefined {
  if (!hover) return hover;
  const contents = hover.contents.map((c) => {
    const value = typeof c === 'string' ? c : 'value' in c ? c.value : undefined;
    if (value === undefined || linkSearchTree(value) === value) return c;
    const md = new vscode.MarkdownString(linkSearchTree(value));
    md.isTrusted = { enabledCommands: [SHOW_TREE_COMMAND] };
    return md;
  });
  return new vscode.Hover(contents, hover.range);
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private progress: vscode.Disposable | undefined;
  private readonly started = new vscode.EventEmitter<LanguageClient>();
  private readonly treeChanged = new vscode.EventEmitter<TreeParams>();
  private readonly searches = new vscode.EventEmitter<RunningSearch[]>();
  /** Fires with the new client each time the server (re)starts. */
  readonly onDidStart = this.started.event;
  /** `stark/treeChanged` from the server. */
  readonly onTreeChanged = this.treeChanged.event;
  /** `stark/searches`: what the server is searching now (after every start, stop, end or rename). */
  readonly onSearches = this.searches.event;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly apiKeys: ApiKeyStore,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const settings = readSettings(starkConfiguration());
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const choice = chooseInterpreter(settings.python, settings.python ? undefined : await activePythonFromExtension(folder));
    const cmd = serverCommand(choice.python, settings.serverCommand);
    this.output.appendLine(`[client] Python: ${describeChoice(choice)}`);
    this.output.appendLine(`[client] starting: ${[cmd.command, ...cmd.args].join(' ')}`);

    const serverOptions: ServerOptions = {
      command: cmd.command,
      args: cmd.args,
      transport: TransportKind.stdio,
      options: { cwd: folder?.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      synchronize: { configurationSection: 'stark' },
      initializationOptions: toInitializationOptions(settings, (await this.apiKeys.get()) ?? undefined),
      outputChannel: this.output,
      markdown: { isTrusted: { enabledCommands: [SHOW_TREE_COMMAND] } },
      middleware: {
        provideHover: async (document, position, token, next) => linkedHover(await next(document, position, token)),
        // the lightbulb and Ctrl+. leave disabled actions out: there, each says why as an enabled one
        provideCodeActions: async (document, range, context, token, next) =>
          showDisabledReasons(await next(document, range, context, token), context.only),
      },
    };
    const client = new LanguageClient('stark', 'STARK', serverOptions, clientOptions);
    client.onNotification(TREE_CHANGED_NOTIFICATION, (p: TreeParams) => this.treeChanged.fire(p));
    client.onNotification(SEARCHES_NOTIFICATION, (p: { searches?: RunningSearch[] }) => this.searches.fire(p.searches ?? []));
    this.client = client;
    try {
      await client.start();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.output.appendLine(`[client] the server did not start: ${msg}`);
      void vscode.window
        .showErrorMessage(
          `STARK: the server did not start with ${choice.python} (${msg}). Is stark-lsp installed in that environment? Set "stark.python".`,
          'Open settings',
          'Show log',
        )
        .then((pick) => {
          if (pick === 'Open settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'stark.python');
          if (pick === 'Show log') this.output.show();
        });
      throw e;
    }
    // after start: the client's own progress feature registers its (status bar only) handler while starting
    this.progress?.dispose();
    this.progress = showProgressAsNotifications(client);
    this.output.appendLine('[client] server running');
    this.started.fire(client);
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.progress?.dispose();
    this.progress = undefined;
    if (c && c.state !== State.Stopped) {
      try {
        await c.stop(5000);
      } catch (e) {
        this.output.appendLine(`[client] stop: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.searches.fire([]);
  }

  async restart(): Promise<void> {
    this.output.appendLine('[client] restarting the server');
    await this.starting?.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  private async ready(): Promise<LanguageClient> {
    if (!this.running) await this.start();
    if (!this.client) throw new Error('the STARK server is not running');
    return this.client;
  }

  async executeCommand(command: string, args: unknown[]): Promise<unknown> {
    const c = await this.ready();
    return c.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  async tree(params: TreeParams): Promise<SearchTree> {
    const c = await this.ready();
    return c.sendRequest<SearchTree>(TREE_REQUEST, params);
  }

  async node(params: TreeParams, id: number): Promise<NodeDetailReply> {
    const c = await this.ready();
    const reply = await c.sendRequest<Record<string, unknown> | null>(NODE_REQUEST, { ...params, id });
    if (!reply || !('source' in reply)) throw new Error(String(reply?.error ?? `no node #${id}`));
    return reply as unknown as NodeDetailReply;
  }

  async sendApiKey(key: string): Promise<void> {
    if (this.running) await this.executeCommand('stark.setApiKey', [key]);
  }

  dispose(): void {
    void this.stop();
    this.started.dispose();
    this.treeChanged.dispose();
    this.searches.dispose();
  }
}
