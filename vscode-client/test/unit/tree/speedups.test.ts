import { strict as assert } from 'assert';
import { ratioText } from '../../../src/tree/speedups';

describe('ratioText (the format of stark_lsp/speedups.py)', () => {
  // the same table as tests/test_speedups.py
  const cases: [number | null, string][] = [
    [2.345, '2.35×'], [1.0, '1.00×'], [0.45, '0.45×'], [12.34, '12.3×'], [123.4, '123×'],
    [0.0456, '0.046×'], [0.000491, '0.00049×'], [2.1e-5, '<0.0001×'], [5000, '>1000×'], [Infinity, '>1000×'], [null, '-'],
  ];
  for (const [x, text] of cases) it(`${x} -> ${text}`, () => assert.equal(ratioText(x), text));

  it('is never 0.00× nor an exponent', () => {
    for (const x of [1e-4, 3.3e-5, 0.00123, 0.01, 0.0999, 0.1, 0.999, 9.99, 99.9, 999]) {
      const t = ratioText(x);
      assert.ok(!/e/.test(t) && !t.startsWith('0.00×'), t);
    }
  });
});
