/**
 * Which Python runs the server, and the server command line. Pure.
 *
 * Order: the `stark.python` setting; else the Python extension's active
 * interpreter (when that extension is installed and reports one); else `python3`.
 */

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterChoice {
  python: string;
  source: InterpreterSource;
}

export const DEFAULT_PYTHON = 'python3';

export function chooseInterpreter(configured: string | undefined, fromPythonExtension: string | undefined): InterpreterChoice {
  const c = configured?.trim();
  if (c) return { python: c, source: 'setting' };
  const p = fromPythonExtension?.trim();
  if (p) return { python: p, source: 'python-extension' };
  return { python: DEFAULT_PYTHON, source: 'default' };
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/** `<python> -m stark_lsp serve`, unless `stark.server.command` overrides it. */
export function serverCommand(python: string, override: readonly string[] = []): ServerCommand {
  if (override.length > 0) return { command: override[0], args: override.slice(1) };
  return { command: python, args: ['-m', 'stark_lsp', 'serve'] };
}

export function describeChoice(choice: InterpreterChoice): string {
  const why = {
    setting: 'from the stark.python setting',
    'python-extension': "the Python extension's active interpreter",
    default: 'default; set stark.python or select an interpreter in the Python extension',
  }[choice.source];
  return `${choice.python} (${why})`;
}
