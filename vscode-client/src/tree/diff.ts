/**
 * A line diff between a candidate and its parent, for the tree view. Pure.
 * Longest-common-subsequence over the lines that differ after the common
 * prefix and suffix are trimmed; beyond a size limit the middle is shown as
 * one replacement, which is still a correct (if coarse) diff.
 */

export type DiffOp = ' ' | '-' | '+';

export interface DiffLine {
  op: DiffOp;
  text: string;
}

const MAX_CELLS = 4_000_000;

function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export function diffLines(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);

  const out: DiffLine[] = a.slice(0, pre).map((text) => ({ op: ' ' as const, text }));
  if (am.length * bm.length > MAX_CELLS) {
    for (const text of am) out.push({ op: '-', text });
    for (const text of bm) out.push({ op: '+', text });
  } else {
    out.push(...lcsDiff(am, bm));
  }
  for (const text of a.slice(a.length - suf)) out.push({ op: ' ', text });
  return out;
}

function lcsDiff(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  // lcs[i][j] = length of the LCS of a[i..] and b[j..], stored row-major.
  const lcs = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number) => i * (m + 1) + j;
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[at(i, j)] = a[i] === b[j] ? lcs[at(i + 1, j + 1)] + 1 : Math.max(lcs[at(i + 1, j)], lcs[at(i, j + 1)]);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i] });
      i++;
      j++;
    } else if (lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
      out.push({ op: '-', text: a[i++] });
    } else {
      out.push({ op: '+', text: b[j++] });
    }
  }
  while (i < n) out.push({ op: '-', text: a[i++] });
  while (j < m) out.push({ op: '+', text: b[j++] });
  return out;
}

/** Unified-style text: changed lines with `context` unchanged lines around them, `@@` between hunks. */
export function formatDiff(lines: readonly DiffLine[], context = 3): string {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, idx) => {
    if (l.op === ' ') return;
    for (let k = Math.max(0, idx - context); k <= Math.min(lines.length - 1, idx + context); k++) keep[k] = true;
  });
  const out: string[] = [];
  let skipped = false;
  lines.forEach((l, idx) => {
    if (!keep[idx]) {
      skipped = true;
      return;
    }
    if (skipped || out.length === 0) out.push(`@@ line ${countOld(lines, idx) + 1} @@`);
    skipped = false;
    out.push(l.op + l.text);
  });
  return out.join('\n');
}

function countOld(lines: readonly DiffLine[], upTo: number): number {
  let n = 0;
  for (let k = 0; k < upTo; k++) if (lines[k].op !== '+') n++;
  return n;
}
