/**
 * The server's searches as progress notifications with a Cancel button.
 *
 * vscode-languageclient shows work-done progress in the status bar, where
 * VS Code offers no Cancel. This replaces its handler of
 * `window/workDoneProgress/create` (after each start) with one that shows a
 * notification; Cancel there sends `window/workDoneProgress/cancel`, which
 * stops the search (the same message any LSP client sends).
 */
import * as vscode from 'vscode';
import {
  type LanguageClient,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageclient/node';
import { ProgressSteps, type ProgressValue } from './progressSteps';

export function showProgressAsNotifications(client: LanguageClient): vscode.Disposable {
  return client.onRequest(WorkDoneProgressCreateRequest.type, (params: { token: string | number }) => {
    new NotificationProgress(client, params.token);
  });
}

class NotificationProgress {
  private readonly steps = new ProgressSteps();
  private progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  private finish: (() => void) | undefined;
  private ended = false;
  private readonly sub: vscode.Disposable;

  constructor(
    private readonly client: LanguageClient,
    private readonly token: string | number,
  ) {
    this.sub = client.onProgress(WorkDoneProgress.type, token, (v: ProgressValue) => this.on(v));
  }

  private on(v: ProgressValue): void {
    if (v.kind === 'begin') {
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `STARK: ${v.title ?? 'working'}`, cancellable: v.cancellable ?? false },
        (progress, cancel) => {
          this.progress = progress;
          cancel.onCancellationRequested(() => {
            void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token: this.token });
          });
          progress.report(this.steps.next(v));
          return new Promise<void>((resolve) => {
            this.finish = resolve;
            if (this.ended) resolve();
          });
        },
      );
    } else if (v.kind === 'report') {
      this.progress?.report(this.steps.next(v));
    } else {
      this.ended = true;
      this.finish?.();
      this.sub.dispose();
    }
  }
}
