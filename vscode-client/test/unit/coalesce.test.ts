import { strict as assert } from 'assert';
import { Coalescer } from '../../src/coalesce';

describe('coalescer', () => {
  it('runs once more after a burst, never two at a time', async () => {
    let release: () => void = () => undefined;
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const c = new Coalescer<string>(async () => {
      runs++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      if (runs === 1) await new Promise<void>((r) => (release = r));
      running--;
    });
    const first = c.request('a');
    void c.request('a');
    void c.request('a');
    release();
    await first;
    assert.equal(runs, 2);
    assert.equal(maxRunning, 1);
  });

  it('keeps going after a failing run', async () => {
    let runs = 0;
    const c = new Coalescer<string>(async () => {
      runs++;
      throw new Error('boom');
    });
    await c.request('a');
    await c.request('a');
    assert.equal(runs, 2);
  });
});
