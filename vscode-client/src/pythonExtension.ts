/**
 * The active interpreter of the Python extension (ms-python.python), when it
 * is installed: `environments.getActiveEnvironmentPath()` of its API.
 */
import * as vscode from 'vscode';

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string } | undefined;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

const PYTHON_EXTENSION_ID = 'ms-python.python';

async function environmentsApi(): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<{ environments?: PythonEnvironmentsApi }>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments;
  } catch {
    return undefined;
  }
}

export async function activePythonFromExtension(resource?: vscode.Uri): Promise<string | undefined> {
  const env = await environmentsApi();
  try {
    return env?.getActiveEnvironmentPath(resource)?.path || undefined;
  } catch {
    return undefined;
  }
}

export async function onActivePythonChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const env = await environmentsApi();
  return env?.onDidChangeActiveEnvironmentPath?.(() => listener());
}
