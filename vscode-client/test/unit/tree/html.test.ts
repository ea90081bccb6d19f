import { strict as assert } from 'assert';
import { contentSecurityPolicy, makeNonce, treePageHtml } from '../../../src/tree/html';

describe('tree page html', () => {
  it('has a strict CSP: nothing by default, scripts and styles by nonce only', () => {
    const csp = contentSecurityPolicy('vscode-webview://x', 'N0NCE');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-N0NCE'(;|$)/);
    assert.equal(/unsafe-inline|unsafe-eval|https?:/.test(csp), false);
  });

  it('loads its one script with the nonce and nothing from outside', () => {
    const html = treePageHtml({ cspSource: 'vscode-webview://x', nonce: 'abc', scriptUri: 'vscode-webview://x/dist/webview.js', title: 'T<1>' });
    const scripts = html.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, ['<script nonce="abc" src="vscode-webview://x/dist/webview.js">']);
    assert.match(html, /<style nonce="abc">/);
    assert.equal(/https?:\/\//.test(html), false);
    assert.match(html, /T&lt;1&gt;/);
    assert.match(html, /id="apply"/);
  });

  it('makes 32-character alphanumeric nonces', () => {
    assert.match(makeNonce(), /^[A-Za-z0-9]{32}$/);
    assert.notEqual(makeNonce(), makeNonce());
  });
});
