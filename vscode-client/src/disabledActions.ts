/**
 * Disabled code actions, made visible where VS Code hides them.
 *
 * The server never leaves "Optimize" silently missing: where it cannot run it is offered disabled, with
 * why (LSP's `disabled.reason`: "create add_relu.harness.py first", "needs an NVIDIA GPU"...). VS Code
 * shows a disabled action only in a menu for a kind the user asked for (Refactor…, Source Action…), greyed
 * out, and after "Show Disabled"; the lightbulb and Ctrl+. (Quick Fix) leave it out, with no setting to
 * show it. So where VS Code asks for code actions without a kind (the lightbulb, Ctrl+.), each disabled
 * action comes as an enabled one that says why in its title ("Optimize kernel k (unavailable: create
 * k.harness.py first…)") and whose command shows the whole reason; asked for a kind, the disabled
 * action stays as it is, greyed out with its reason.
 *
 * Pure but for building the `vscode.CodeAction`.
 */
import * as vscode from 'vscode';

export const WHY_NOT_COMMAND = 'stark.ui.whyNot';
/** The reason in the title, at most (the command shows all of it). */
export const TITLE_REASON_CHARS = 90;

type Action = vscode.Command | vscode.CodeAction;

function disabledReason(a: Action): string | undefined {
  const d = (a as vscode.CodeAction).disabled;
  return d && typeof d.reason === 'string' ? d.reason : undefined;
}

/** The title of a disabled action as shown enabled: its own, and why it cannot run (shortened). */
export function unavailableTitle(title: string, reason: string): string {
  const first = reason.split('\n').find((l) => l.trim())?.trim() ?? reason;
  const short = first.length <= TITLE_REASON_CHARS ? first : `${first.slice(0, TITLE_REASON_CHARS - 1).trimEnd()}…`;
  return `${title} (unavailable: ${short})`;
}

/** The message the command of such an action shows. */
export function whyNotMessage(title: string, reason: string): string {
  return `STARK: ${title} is unavailable: ${reason}`;
}

/**
 * The server's actions as VS Code should get them for a request asking for `only` (its
 * `CodeActionContext.only`): unchanged when a kind was asked for; otherwise each disabled action is
 * replaced, in place, by an enabled one of the same kind that says why (see the module's comment).
 */
export function showDisabledReasons<T extends Action>(actions: readonly T[] | null | undefined, only: unknown): (T | vscode.CodeAction)[] | null | undefined {
  if (!actions || only) return actions as T[] | null | undefined;
  return actions.map((a) => {
    const reason = disabledReason(a);
    if (reason === undefined) return a;
    const c = a as vscode.CodeAction;
    const shown = new vscode.CodeAction(unavailableTitle(c.title, reason), c.kind);
    shown.command = { title: c.title, command: WHY_NOT_COMMAND, arguments: [c.title, reason] };
    if (c.diagnostics) shown.diagnostics = c.diagnostics;
    return shown;
  });
}
