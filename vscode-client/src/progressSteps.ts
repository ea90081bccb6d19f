/**
 * The server's work-done progress as VS Code's progress notification wants it:
 * the message, and the increment since the last report (VS Code adds them up;
 * the server sends percentages). Pure.
 */

export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

export interface ProgressStep {
  message?: string;
  increment?: number;
}

export class ProgressSteps {
  private done = 0;

  next(v: ProgressValue): ProgressStep {
    const step: ProgressStep = {};
    if (v.message !== undefined) step.message = v.message;
    if (typeof v.percentage === 'number') {
      const pct = Math.max(0, Math.min(100, v.percentage));
      if (pct > this.done) {
        step.increment = pct - this.done;
        this.done = pct;
      }
    }
    return step;
  }
}
