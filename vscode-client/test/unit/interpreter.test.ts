import { strict as assert } from 'assert';
import { chooseInterpreter, describeChoice, serverCommand } from '../../src/interpreter';

describe('interpreter choice', () => {
  it('prefers the stark.python setting', () => {
    assert.deepEqual(chooseInterpreter('/venv/bin/python', '/other/python'), { python: '/venv/bin/python', source: 'setting' });
  });
  it("then the Python extension's active interpreter", () => {
    assert.deepEqual(chooseInterpreter('  ', '/ext/python'), { python: '/ext/python', source: 'python-extension' });
  });
  it('then python3', () => {
    assert.deepEqual(chooseInterpreter(undefined, undefined), { python: 'python3', source: 'default' });
    assert.deepEqual(chooseInterpreter('', ''), { python: 'python3', source: 'default' });
  });
  it('says where the interpreter came from', () => {
    assert.match(describeChoice({ python: 'python3', source: 'default' }), /set stark\.python/);
  });
});

describe('server command', () => {
  it('runs the stark_lsp module with the chosen python', () => {
    assert.deepEqual(serverCommand('/venv/bin/python'), { command: '/venv/bin/python', args: ['-m', 'stark_lsp', 'serve'] });
  });
  it('uses the override when set', () => {
    assert.deepEqual(serverCommand('python3', ['uv', 'run', 'stark', 'serve']), { command: 'uv', args: ['run', 'stark', 'serve'] });
  });
});
