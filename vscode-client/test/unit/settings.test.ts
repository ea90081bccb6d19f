import { strict as assert } from 'assert';
import { readSettings, toInitializationOptions } from '../../src/settings';

const getter = (values: Record<string, unknown>) => (key: string) => values[key];

describe('settings', () => {
  it('reads the stark section and falls back on bad values', () => {
    const s = readSettings(
      getter({ python: ' /opt/py/bin/python ', llm: 'bogus', budget: 0, policy: 'greedy', 'evaluation.workers': 2.5, 'models.code': 'qwen' }),
    );
    assert.equal(s.python, '/opt/py/bin/python');
    assert.equal(s.llm, 'builtin');
    assert.equal(s.budget, 30);
    assert.equal(s.policy, 'greedy');
    assert.equal(s.evaluation.workers, 1);
    assert.equal(s.profileTop, 0);
    assert.equal(readSettings(getter({ profileTop: -1 })).profileTop, 0);
    assert.deepEqual(s.models, { plan: '', code: 'qwen', debug: '' });
    assert.deepEqual(s.serverCommand, []);
  });

  it('keeps only non-empty strings of the server command override', () => {
    const s = readSettings(getter({ 'server.command': ['uv', '', 3, 'run'] }));
    assert.deepEqual(s.serverCommand, ['uv', 'run']);
  });

  it('turns settings into initializationOptions without empty values', () => {
    const s = readSettings(getter({ llm: 'openai', baseUrl: 'http://localhost:8000/v1', 'models.plan': 'p', budget: 4, profileTop: 2, 'evaluation.device': 'cuda:1', 'evaluation.workers': 3 }));
    assert.deepEqual(toInitializationOptions(s), {
      llm: 'openai',
      baseUrl: 'http://localhost:8000/v1',
      models: { plan: 'p' },
      budget: 4,
      policy: 'stark',
      profileTop: 2,
      evaluation: { device: 'cuda:1', workers: 3 },
    });
  });

  it('adds the API key only when there is one', () => {
    const s = readSettings(getter({}));
    assert.equal('apiKey' in toInitializationOptions(s, ''), false);
    assert.equal(toInitializationOptions(s, 'sk-1').apiKey, 'sk-1');
    assert.equal('models' in toInitializationOptions(s), false);
    assert.equal('baseUrl' in toInitializationOptions(s), false);
  });
});
