/**
 * Mocha setup: `require('vscode')` (and, for the server tests, the language
 * client) resolve to in-process fakes, so the extension's modules load outside VS Code.
 */
import Module from 'module';
import * as vscodeStub from './stubs/vscode';
import * as languageClientStub from './stubs/languageclient';

const stubs: Record<string, unknown> = {
  vscode: vscodeStub,
  'vscode-languageclient/node': languageClientStub,
};

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const mod = Module as unknown as { _load: Load };
const originalLoad = mod._load;
mod._load = function (request: string, parent: unknown, isMain: boolean) {
  if (Object.prototype.hasOwnProperty.call(stubs, request)) return stubs[request];
  return originalLoad.call(this, request, parent, isMain);
};

export const mochaHooks = {
  beforeEach(): void {
    vscodeStub.fake.reset();
    languageClientStub.created.length = 0;
    languageClientStub.LanguageClient.failStart = undefined;
    languageClientStub.LanguageClient.answer = () => null;
  },
};
