/**
 * Reads the server's code actions: which kernel it offers at the cursor, and
 * helpers for the commands it attaches. Pure (works on plain command objects).
 */

export interface CommandLike {
  command: string;
  title?: string;
  arguments?: unknown[];
}

/** A code action is either a Command or a CodeAction with an optional `command`. */
export function commandOf(action: unknown): CommandLike | undefined {
  if (typeof action !== 'object' || action === null) return undefined;
  const a = action as { command?: unknown };
  if (typeof a.command === 'string') return action as CommandLike;
  if (typeof a.command === 'object' && a.command !== null && typeof (a.command as { command?: unknown }).command === 'string') {
    return a.command as CommandLike;
  }
  return undefined;
}

const KERNEL_COMMANDS = new Set(['stark.optimize', 'stark.stop', 'stark.applyBest', 'stark.createHarness']);

/** The kernel name the server's actions for `uri` refer to (first match), if any. */
export function kernelFromActions(actions: readonly unknown[], uri: string): string | undefined {
  for (const a of actions) {
    const c = commandOf(a);
    if (!c || !KERNEL_COMMANDS.has(c.command) || !c.arguments) continue;
    const [u, kernel] = c.arguments;
    if (u === uri && typeof kernel === 'string' && kernel) return kernel;
  }
  return undefined;
}

export function actionTitles(actions: readonly unknown[]): string[] {
  return actions
    .map((a) => (typeof a === 'object' && a !== null ? (a as { title?: unknown }).title : undefined))
    .filter((t): t is string => typeof t === 'string');
}

export const HELPER_USER_COMMAND = 'stark.optimizeHelperUser';

/** The search a helper module's action offers at `uri` (the file that uses it: `[helper uri, user uri,
 * kernel]`), if the server offers one: what "Optimize kernel at cursor" runs there. */
export function helperSearchFrom(actions: readonly unknown[], uri: string): CommandLike | undefined {
  for (const a of actions) {
    const c = commandOf(a);
    if (c?.command === HELPER_USER_COMMAND && c.arguments?.[0] === uri && typeof c.arguments[2] === 'string') return c;
  }
  return undefined;
}
