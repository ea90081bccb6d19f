import { strict as assert } from 'assert';
import { diffLines, formatDiff } from '../../../src/tree/diff';

const apply = (lines: ReturnType<typeof diffLines>, side: '-' | '+') =>
  lines.filter((l) => l.op !== (side === '-' ? '+' : '-')).map((l) => l.text);

describe('line diff', () => {
  it('marks the changed lines and keeps both sides recoverable', () => {
    const a = 'a\nb\nc\nd\n';
    const b = 'a\nB\nc\nd\ne\n';
    const d = diffLines(a, b);
    assert.deepEqual(
      d.map((l) => l.op + l.text),
      [' a', '-b', '+B', ' c', ' d', '+e'],
    );
    assert.deepEqual(apply(d, '-'), ['a', 'b', 'c', 'd']);
    assert.deepEqual(apply(d, '+'), ['a', 'B', 'c', 'd', 'e']);
  });

  it('finds a minimal diff when a line moves past others', () => {
    const d = diffLines('x\n1\n2\n3\n', '1\n2\n3\nx\n');
    assert.equal(d.filter((l) => l.op !== ' ').length, 2);
  });

  it('is empty of changes for equal texts', () => {
    assert.ok(diffLines('same\n', 'same\n').every((l) => l.op === ' '));
    assert.equal(formatDiff(diffLines('same\n', 'same\n')), '');
  });

  it('shows hunks with context only', () => {
    const a = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const b = a.replace('l10', 'L10');
    const text = formatDiff(diffLines(a, b), 2);
    assert.equal(text, ['@@ line 9 @@', ' l8', ' l9', '-l10', '+L10', ' l11', ' l12'].join('\n'));
  });
});
