/** The status-bar item: running searches and the best result; click shows the tree. Hidden until STARK is in use. */
import * as vscode from 'vscode';
import { Searches, statusText } from './searches';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('stark.status', vscode.StatusBarAlignment.Left, 50);

  constructor(private readonly searches: Searches) {
    this.item.name = 'STARK searches';
    this.item.command = 'stark.ui.showTree';
    this.update();
  }

  /** Shown once a kernel file is open (or a STARK command ran). */
  show(): void {
    this.item.show();
  }

  update(): void {
    const t = statusText(this.searches, vscode.window.activeTextEditor?.document.uri.toString());
    this.item.text = t.text;
    this.item.tooltip = t.tooltip;
  }

  dispose(): void {
    this.item.dispose();
  }
}
