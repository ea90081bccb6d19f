import { strict as assert } from 'assert';
import type * as vscode from 'vscode';
import { API_KEY_SECRET, ApiKeyStore } from '../../../src/apiKey';
import { fake, makeSecretStorage } from '../stubs/vscode';

const store = () => new ApiKeyStore(makeSecretStorage() as unknown as vscode.SecretStorage);

describe('API key store', () => {
  it('stores a typed key in secret storage and reports the change', async () => {
    const keys = store();
    let changes = 0;
    keys.onDidChange(() => changes++);
    fake.inputBox = async () => '  sk-test  ';
    assert.equal(await keys.prompt(), 'sk-test');
    assert.equal(fake.secrets.get(API_KEY_SECRET), 'sk-test');
    assert.equal(await keys.get(), 'sk-test');
    assert.equal(changes, 1);
  });

  it('clears the key on an empty answer and keeps it on cancel', async () => {
    const keys = store();
    fake.secrets.set(API_KEY_SECRET, 'old');
    fake.inputBox = async () => undefined;
    assert.equal(await keys.prompt(), undefined);
    assert.equal(fake.secrets.get(API_KEY_SECRET), 'old');
    fake.inputBox = async () => '';
    assert.equal(await keys.prompt(), '');
    assert.equal(fake.secrets.has(API_KEY_SECRET), false);
  });
});
