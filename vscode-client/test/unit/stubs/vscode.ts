/**
 * A small fake of the `vscode` module for unit tests: enough for the code under
 * test, with hooks the tests set (`fake.executeCommand`, `fake.inputBox`, ...).
 */

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (l: Listener<T>) => {
    this.listeners.push(l);
    return { dispose: () => (this.listeners = this.listeners.filter((x) => x !== l)) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Position {
  constructor(
    public line: number,
    public character: number,
  ) {}
}

export class Range {
  constructor(
    public start: Position,
    public end: Position,
  ) {}
}

export class Uri {
  private constructor(
    public scheme: string,
    public fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static parse(s: string): Uri {
    return new Uri('file', s.replace(/^file:\/\//, ''));
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.fsPath, ...parts].join('/'));
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class CodeActionKind {
  constructor(public value: string) {}
  static readonly QuickFix = new CodeActionKind('quickfix');
  static readonly Refactor = new CodeActionKind('refactor');
  static readonly RefactorRewrite = new CodeActionKind('refactor.rewrite');
}

export class CodeAction {
  command?: { title: string; command: string; arguments?: unknown[] };
  diagnostics?: unknown[];
  disabled?: { reason: string };
  isPreferred?: boolean;
  constructor(
    public title: string,
    public kind?: CodeActionKind,
  ) {}
}

export const StatusBarAlignment = { Left: 1, Right: 2 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };

export class MarkdownString {
  isTrusted: unknown;
  constructor(public value = '') {}
}

export class Hover {
  constructor(
    public contents: unknown[],
    public range?: unknown,
  ) {}
}

export interface FakeProgress {
  options: { location: number; title?: string; cancellable?: boolean };
  reports: { message?: string; increment?: number }[];
  cancel(): void;
  done: boolean;
}
export const ViewColumn = { One: 1, Beside: -2 };

export interface FakeStatusBarItem {
  text: string;
  tooltip: string;
  command: string;
  name: string;
  visible: boolean;
  show(): void;
  dispose(): void;
}

/** State the tests inspect and hooks they replace. */
export const fake = {
  config: {} as Record<string, unknown>,
  executeCommand: async (_id: string, ..._args: unknown[]): Promise<unknown> => undefined,
  inputBox: async (): Promise<string | undefined> => undefined,
  quickPick: async (items: unknown[]): Promise<unknown> => items[0],
  messages: [] as string[],
  statusItems: [] as FakeStatusBarItem[],
  secrets: new Map<string, string>(),
  secretsChanged: new EventEmitter<{ key: string }>(),
  extensions: {} as Record<string, unknown>,
  progresses: [] as FakeProgress[],
  reset(): void {
    this.progresses = [];
    this.config = {};
    this.executeCommand = async () => undefined;
    this.inputBox = async () => undefined;
    this.quickPick = async (items: unknown[]) => items[0];
    this.messages = [];
    this.statusItems = [];
    this.secrets.clear();
    this.secretsChanged = new EventEmitter();
    this.extensions = {};
  },
};

const showMessage =
  (kind: string) =>
  async (msg: string): Promise<undefined> => {
    fake.messages.push(`${kind}: ${msg}`);
    return undefined;
  };

export const window = {
  activeTextEditor: undefined as unknown,
  createStatusBarItem(): FakeStatusBarItem {
    const item: FakeStatusBarItem = {
      text: '',
      tooltip: '',
      command: '',
      name: '',
      visible: false,
      show() {
        this.visible = true;
      },
      dispose() {
        this.visible = false;
      },
    };
    fake.statusItems.push(item);
    return item;
  },
  showInputBox: () => fake.inputBox(),
  withProgress(
    options: FakeProgress['options'],
    task: (p: { report(v: { message?: string; increment?: number }): void }, token: { onCancellationRequested(l: () => void): void }) => Promise<void>,
  ): Promise<void> {
    const cancelListeners: (() => void)[] = [];
    const p: FakeProgress = { options, reports: [], done: false, cancel: () => cancelListeners.forEach((l) => l()) };
    fake.progresses.push(p);
    return task({ report: (v) => p.reports.push(v) }, { onCancellationRequested: (l) => cancelListeners.push(l) }).then(() => {
      p.done = true;
    });
  },
  showQuickPick: (items: unknown[]) => fake.quickPick(items),
  showErrorMessage: showMessage('error'),
  showWarningMessage: showMessage('warning'),
  showInformationMessage: showMessage('info'),
  setStatusBarMessage: () => ({ dispose() {} }),
  createOutputChannel: () => ({ appendLine() {}, show() {}, dispose() {} }),
};

export const commands = {
  executeCommand: (id: string, ...args: unknown[]) => fake.executeCommand(id, ...args),
  registerCommand: () => ({ dispose() {} }),
};

export const workspace = {
  getConfiguration: () => ({ get: (key: string) => fake.config[key] }),
  asRelativePath: (u: Uri) => u.fsPath,
  workspaceFolders: undefined as unknown,
};

export const extensions = {
  getExtension: (id: string) => fake.extensions[id],
};

export function makeSecretStorage() {
  return {
    get: async (k: string) => fake.secrets.get(k),
    store: async (k: string, v: string) => {
      fake.secrets.set(k, v);
      fake.secretsChanged.fire({ key: k });
    },
    delete: async (k: string) => {
      fake.secrets.delete(k);
      fake.secretsChanged.fire({ key: k });
    },
    onDidChange: (l: (e: { key: string }) => void) => fake.secretsChanged.event(l),
  };
}
