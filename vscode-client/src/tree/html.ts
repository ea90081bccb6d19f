/**
 * The search-tree webview page: self-contained (no CDN), strict CSP with a
 * nonce for its one script and one style sheet. Pure.
 */

export function makeNonce(random: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars[Math.floor(random() * chars.length)];
  return s;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
}

const STYLE = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
header h2 { margin: 8px 0 2px; font-size: 1.1em; }
header p { margin: 0 0 8px; opacity: .8; }
.panes { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.tree-pane { overflow: auto; max-width: 100%; border: 1px solid var(--vscode-panel-border, #8884); }
.edge { stroke: var(--vscode-foreground); stroke-opacity: .35; stroke-width: 1.5; }
.edge.best { stroke: #f5c518; stroke-opacity: 1; stroke-width: 3; }
.node { cursor: pointer; }
.node circle { stroke: var(--vscode-foreground); stroke-opacity: .4; stroke-width: 1.5; }
.node.root circle { fill: #6c8ebf; }
.node.faster circle { fill: #3fa34d; }
.node.slower circle { fill: #b08a3a; }
.node.failed circle { fill: #c0392b; }
.node.running circle { fill: #888; stroke-dasharray: 4 3; }
.node.best circle { stroke: #f5c518; stroke-opacity: 1; stroke-width: 3.5; }
.node.best-node circle { stroke-width: 5; }
.node.selected circle { stroke: var(--vscode-focusBorder, #09f); stroke-opacity: 1; stroke-width: 4; }
.node text { fill: #fff; font-size: 11px; font-weight: 600; pointer-events: none; }
.node text.id { fill: var(--vscode-foreground); font-weight: 400; opacity: .7; }
.chart .axis { stroke: var(--vscode-foreground); stroke-opacity: .5; }
.chart .baseline { stroke: var(--vscode-foreground); stroke-opacity: .3; stroke-dasharray: 3 3; }
.chart .curve { fill: none; stroke: #3fa34d; stroke-width: 2.5; }
.chart .last { fill: #3fa34d; }
.chart .tick { fill: var(--vscode-foreground); font-size: 10px; opacity: .8; }
.legend span { margin-right: 10px; font-size: .9em; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; }
.legend i.root { background: #6c8ebf; } .legend i.faster { background: #3fa34d; } .legend i.slower { background: #b08a3a; }
.legend i.failed { background: #c0392b; } .legend i.running { background: #888; } .legend i.best { border: 3px solid #f5c518; width: 6px; height: 6px; }
#detail { margin-top: 12px; }
#detail pre { background: var(--vscode-textCodeBlock-background, #8881); padding: 8px; overflow: auto; max-height: 40vh; }
#detail .add { color: #3fa34d; } #detail .del { color: #c0392b; } #detail .hunk { opacity: .6; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: 0; padding: 4px 12px; cursor: pointer; }
.hidden { display: none; }
`;

export function treePageHtml(opts: { cspSource: string; nonce: string; scriptUri: string; title: string }): string {
  const { cspSource, nonce, scriptUri } = opts;
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(cspSource, nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${esc(opts.title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header><h2 id="title">${esc(opts.title)}</h2><p id="subtitle">Loading…</p></header>
<div class="legend"><span><i class="root"></i>baseline</span><span><i class="faster"></i>faster</span><span><i class="slower"></i>not faster</span><span><i class="failed"></i>failed</span><span><i class="running"></i>running</span><span><i class="best"></i>best path</span></div>
<div class="panes">
  <div class="tree-pane" id="tree"></div>
  <div><h4>Best speedup against attempts</h4><div id="chart"></div></div>
</div>
<section id="detail" class="hidden">
  <h3 id="detail-title"></h3>
  <p id="detail-summary"></p>
  <button id="apply" type="button">Apply this candidate</button>
  <h4>Diff against its parent</h4>
  <pre id="detail-diff"></pre>
  <h4>Source</h4>
  <pre id="detail-source"></pre>
</section>
<script nonce="${nonce}" src="${esc(scriptUri)}"></script>
</body>
</html>`;
}
