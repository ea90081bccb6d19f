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
import { chooseInterpreter, describeChoice, serverCommand } from './interpreter';
import { activePythonFromExtension } from './pythonExtension';
import { readSettings, toInitializationOptions } from './settings';
import { relativeToBaseline } from './tree/relative';
import { TREE_CHANGED_NOTIFICATION, TREE_REQUEST, type SearchTree, type TreeParams } from './tree/types';

export const DOCUMENT_SELECTOR = [
  { language: 'cuda-cpp' },
  { scheme: 'file', pattern: '**/*.{cu,cuh}' },
  { language: 'python' },
];

export function starkConfiguration(): (key: string) => unknown {
  const cfg = vscode.workspace.getConfiguration('stark');
  return (key) => cfg.get(key);
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private readonly started = new vscode.EventEmitter<LanguageClient>();
  private readonly treeChanged = new vscode.EventEmitter<TreeParams>();
  /** Fires with the new client each time the server (re)starts. */
  readonly onDidStart = this.started.event;
  /** `stark/treeChanged` from the server. */
  readonly onTreeChanged = this.treeChanged.event;

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
    };
    const client = new LanguageClient('stark', 'STARK', serverOptions, clientOptions);
    client.onNotification(TREE_CHANGED_NOTIFICATION, (p: TreeParams) => this.treeChanged.fire(p));
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
    this.output.appendLine('[client] server running');
    this.started.fire(client);
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c && c.state !== State.Stopped) {
      try {
        await c.stop(5000);
      } catch (e) {
        this.output.appendLine(`[client] stop: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
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
    return relativeToBaseline(await c.sendRequest<SearchTree>(TREE_REQUEST, params));
  }

  async sendApiKey(key: string): Promise<void> {
    if (this.running) await this.executeCommand('stark.setApiKey', [key]);
  }

  dispose(): void {
    void this.stop();
    this.started.dispose();
    this.treeChanged.dispose();
  }
}
