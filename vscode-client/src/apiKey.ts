/** The LLM API key, kept in VS Code SecretStorage and never in settings. */
import * as vscode from 'vscode';

export const API_KEY_SECRET = 'stark.apiKey';

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  get(): Thenable<string | undefined> {
    return this.secrets.get(API_KEY_SECRET);
  }

  /** Asks for the key; returns the new key, '' when cleared, undefined when cancelled. */
  async prompt(): Promise<string | undefined> {
    const key = await vscode.window.showInputBox({
      title: 'STARK: API key for the LLM endpoint',
      prompt: 'Stored in VS Code secret storage and sent to the STARK server at run time. Leave empty to clear it.',
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return undefined;
    const trimmed = key.trim();
    if (trimmed) await this.secrets.store(API_KEY_SECRET, trimmed);
    else await this.secrets.delete(API_KEY_SECRET);
    return trimmed;
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key === API_KEY_SECRET) listener();
    });
  }
}
