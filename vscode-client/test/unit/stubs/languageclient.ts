/** A fake of `vscode-languageclient/node` that records how clients are made. */

export const State = { Stopped: 1, Running: 2, Starting: 3 };
export const TransportKind = { stdio: 0, ipc: 1 };
export const ExecuteCommandRequest = { type: { method: 'workspace/executeCommand' } };
export const WorkDoneProgressCreateRequest = { type: { method: 'window/workDoneProgress/create' } };
export const WorkDoneProgressCancelNotification = { type: { method: 'window/workDoneProgress/cancel' } };
export const WorkDoneProgress = { type: { method: '$/progress' } };

export interface Sent {
  method: string;
  params: unknown;
}

export class LanguageClient {
  state = State.Stopped;
  sent: Sent[] = [];
  notificationHandlers = new Map<string, (p: unknown) => void>();
  requestHandlers = new Map<string, (p: unknown) => unknown>();
  progressHandlers = new Map<string | number, (v: unknown) => void>();
  static failStart: Error | undefined;
  static answer: (method: string, params: unknown) => unknown = () => null;

  constructor(
    public id: string,
    public name: string,
    public serverOptions: { command: string; args: string[]; options?: { env?: Record<string, string | undefined> } },
    public clientOptions: {
      initializationOptions?: Record<string, unknown>;
      synchronize?: { configurationSection?: string };
      middleware?: Record<string, (...args: never[]) => unknown>;
    },
  ) {
    created.push(this);
  }

  async start(): Promise<void> {
    if (LanguageClient.failStart) throw LanguageClient.failStart;
    this.state = State.Running;
  }

  async stop(): Promise<void> {
    this.state = State.Stopped;
  }

  onNotification(method: string, handler: (p: unknown) => void): { dispose(): void } {
    this.notificationHandlers.set(method, handler);
    return { dispose() {} };
  }

  onRequest(type: string | { method: string }, handler: (p: unknown) => unknown): { dispose(): void } {
    const method = typeof type === 'string' ? type : type.method;
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  onProgress(_type: unknown, token: string | number, handler: (v: unknown) => void): { dispose(): void } {
    this.progressHandlers.set(token, handler);
    return { dispose: () => this.progressHandlers.delete(token) };
  }

  async sendNotification(type: string | { method: string }, params: unknown): Promise<void> {
    this.sent.push({ method: typeof type === 'string' ? type : type.method, params });
  }

  async sendRequest(type: string | { method: string }, params: unknown): Promise<unknown> {
    const method = typeof type === 'string' ? type : type.method;
    this.sent.push({ method, params });
    return LanguageClient.answer(method, params);
  }
}

export const created: LanguageClient[] = [];
