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
html, body { height: 100%; margin: 0; }
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); display: grid; grid-template-rows: auto 1fr;
  overflow: hidden; }
header { padding: 6px 12px 4px; border-bottom: 1px solid var(--vscode-panel-border, #8884); }
header h2 { margin: 0 0 2px; font-size: 1.05em; }
header p { margin: 0 0 6px; opacity: .85; font-size: .92em; overflow-wrap: anywhere; }
.toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.toolbar .sep { width: 1px; height: 18px; background: var(--vscode-panel-border, #8886); margin: 0 4px; }
.legend { display: flex; flex-wrap: wrap; gap: 10px; font-size: .85em; margin-left: 8px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; vertical-align: -1px; }
.legend i.root { background: #6c8ebf; } .legend i.faster { background: #3fa34d; } .legend i.slower { background: #b08a3a; }
.legend i.failed { background: #c0392b; } .legend i.running { background: #888; }
.legend i.nothing-new { background: transparent; border: 1.5px dashed #999; width: 7px; height: 7px; }
.legend i.best { border: 3px solid #f5c518; width: 6px; height: 6px; }
.legend i.folded { background: transparent; border: 3px solid #c0392b; border-right-color: #b08a3a; width: 6px; height: 6px; }
main { display: grid; grid-template-columns: minmax(0, 1fr) clamp(260px, 30%, 440px); min-height: 0; }
@media (max-width: 760px) {
  main { grid-template-columns: minmax(0, 1fr); grid-template-rows: minmax(0, 60%) minmax(0, 40%); }
  aside { border-left: 0; border-top: 1px solid var(--vscode-panel-border, #8884); }
}
#tree-pane { position: relative; min-height: 0; overflow: hidden; cursor: grab; }
#tree-pane.dragging { cursor: grabbing; }
#tree { width: 100%; height: 100%; }
#tree svg { width: 100%; height: 100%; display: block; }
#zoom-level { position: absolute; left: 8px; bottom: 6px; font-size: .8em; opacity: .7; pointer-events: none; }
#minimap { position: absolute; right: 8px; bottom: 8px; z-index: 1; cursor: pointer; line-height: 0;
  background: var(--vscode-editorWidget-background, var(--vscode-editor-background, #1e1e1e));
  border: 1px solid var(--vscode-editorWidget-border, var(--vscode-panel-border, #8886)); box-shadow: 0 1px 6px #0006; }
#minimap:focus { outline: 1px solid var(--vscode-focusBorder, #09f); outline-offset: 1px; }
#minimap svg { display: block; width: 100%; height: 100%; }
.mini-back { fill: transparent; }
.mini-edge { fill: none; stroke: var(--vscode-foreground); stroke-opacity: .25; stroke-width: .75; }
.mini-path { fill: none; stroke: #f5c518; stroke-width: 2; }
.mini-dot { fill: none; stroke-linecap: round; stroke-width: 3.5; }
.mini-dot.root { stroke: #6c8ebf; } .mini-dot.faster { stroke: #3fa34d; } .mini-dot.slower { stroke: #b08a3a; }
.mini-dot.failed { stroke: #c0392b; } .mini-dot.running { stroke: #888; } .mini-dot.nothing-new { stroke: #999; }
.mini-dot.abandoned { stroke: #777; }
.mini-dot.best { stroke-width: 4.5; }
.mini-dot.best-node { stroke: #f5c518; stroke-width: 7; }
.mini-view { fill: var(--vscode-focusBorder, #09f); fill-opacity: .12; stroke: var(--vscode-focusBorder, #09f); stroke-width: 1.5; }
aside { display: flex; flex-direction: column; min-height: 0; min-width: 0; border-left: 1px solid var(--vscode-panel-border, #8884); }
#detail { flex: 1; min-height: 0; overflow: auto; padding: 8px 12px; }
#detail h3 { margin: 0 0 4px; font-size: 1em; }
#detail-summary { white-space: pre-wrap; margin: 0 0 8px; opacity: .9; }
#detail pre { background: var(--vscode-textCodeBlock-background, #8881); padding: 8px; overflow: auto; margin: 4px 0; max-height: 60vh; }
#detail .add { color: #3fa34d; } #detail .del { color: #c0392b; } #detail .hunk { opacity: .6; }
#detail .placeholder { opacity: .7; }
#why-not { font-size: .9em; opacity: .8; margin-left: 8px; }
#chart-box { border-top: 1px solid var(--vscode-panel-border, #8884); padding: 4px 12px; }
#chart-box summary { cursor: pointer; font-weight: 600; font-size: .9em; }
.edge { stroke: var(--vscode-foreground); stroke-opacity: .35; stroke-width: 1.5; }
.edge.best { stroke: #f5c518; stroke-opacity: 1; stroke-width: 3; }
.node { cursor: pointer; }
.node circle { stroke: var(--vscode-foreground); stroke-opacity: .4; stroke-width: 1.5; }
.node.root circle { fill: #6c8ebf; }
.node.faster circle { fill: #3fa34d; }
.node.slower circle { fill: #b08a3a; }
.node.failed circle { fill: #c0392b; }
.node.abandoned circle { fill: #777; opacity: .5; }
.node.running circle { fill: #888; stroke-dasharray: 4 3; }
.node.nothing-new circle { fill: transparent; stroke: #999; stroke-dasharray: 3 2; stroke-opacity: .9; }
.node.nothing-new text { fill: var(--vscode-foreground); opacity: .75; }
.node.best circle { stroke: #f5c518; stroke-opacity: 1; stroke-width: 3.5; }
.node.best-node circle { stroke-width: 5; }
.node.selected circle { stroke: var(--vscode-focusBorder, #09f); stroke-opacity: 1; stroke-width: 4; }
.node:focus { outline: none; }
.node:focus circle { stroke: var(--vscode-focusBorder, #09f); stroke-opacity: 1; }
.node text { fill: #fff; font-size: 11px; font-weight: 600; pointer-events: none; }
svg.compact .node text { font-size: 8px; }
.node text.id { fill: var(--vscode-foreground); font-weight: 400; opacity: .7; }
.node.folded circle.fold-back { fill: var(--vscode-editor-background, #1e1e1e); stroke-dasharray: 2 2; stroke-opacity: .8; }
.node.folded circle.slice { fill: none; stroke-opacity: 1; }
.node.folded circle.hole { fill: var(--vscode-editor-background, #1e1e1e); stroke: none; }
.node.folded text.count { fill: var(--vscode-foreground); }
svg.compact .node.folded text.count { font-size: 9px; }
.slice.failed { stroke: #c0392b; } .slice.slower { stroke: #b08a3a; } .slice.nothing-new { stroke: #999; } .slice.abandoned { stroke: #777; }
.fold-toggle { cursor: pointer; }
.fold-toggle circle { fill: var(--vscode-button-secondaryBackground, #555); stroke: var(--vscode-foreground); stroke-opacity: .6; stroke-width: 1; }
.fold-toggle path { stroke: var(--vscode-button-secondaryForeground, #fff); stroke-width: 1.6; }
.fold-toggle:focus { outline: none; }
.fold-toggle:focus circle, .fold-toggle:hover circle { stroke: var(--vscode-focusBorder, #09f); stroke-opacity: 1; stroke-width: 2; }
.chart .axis { stroke: var(--vscode-foreground); stroke-opacity: .5; }
.chart .baseline { stroke: var(--vscode-foreground); stroke-opacity: .3; stroke-dasharray: 3 3; }
.chart .curve { fill: none; stroke: #3fa34d; stroke-width: 2.5; }
.chart .last { fill: #3fa34d; }
.chart .tick, .chart .caption { fill: var(--vscode-foreground); font-size: 10px; opacity: .8; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: 0; padding: 3px 10px;
  cursor: pointer; font: inherit; }
button:hover:not(:disabled) { background: var(--vscode-button-hoverBackground, var(--vscode-button-background)); }
button.secondary { background: var(--vscode-button-secondaryBackground, #8884); color: var(--vscode-button-secondaryForeground, inherit); }
button:disabled, button[aria-disabled="true"] { opacity: .4; cursor: not-allowed; filter: grayscale(1); }
.hidden { display: none !important; }
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
<header>
  <h2 id="title">${esc(opts.title)}</h2><p id="subtitle">Loading…</p>
  <div class="toolbar">
    <button id="fit" class="secondary" type="button" title="Fit the whole tree (0)">Fit</button>
    <button id="zoom-in" class="secondary" type="button" title="Zoom in (+)">+</button>
    <button id="zoom-out" class="secondary" type="button" title="Zoom out (-)">−</button>
    <span class="sep"></span>
    <button id="stop" class="secondary hidden" type="button">Stop search</button>
    <button id="continue" class="hidden" type="button">Continue search</button>
    <div class="legend"><span><i class="root"></i>your kernel</span><span><i class="faster"></i>faster</span><span><i class="slower"></i>not faster</span><span><i class="failed"></i>failed</span><span><i class="nothing-new"></i>nothing new to try</span><span><i class="running"></i>running</span><span><i class="folded"></i>folded: nothing faster in it (click to open)</span><span><i class="best"></i>best path</span></div>
  </div>
</header>
<main>
  <div id="tree-pane"><div id="tree"></div><span id="zoom-level"></span>
    <div id="minimap" class="hidden" tabindex="0" role="group" title="The whole tree: click or drag to move the view"
      aria-label="Overview of the whole tree: click or drag to move the view; arrow keys move it, Home goes to the best node"></div></div>
  <aside>
    <section id="detail">
      <p class="placeholder" id="detail-placeholder">Click a node to see what it changed. Drag to pan, scroll to zoom; a numbered ring is a folded subtree, click it to open it.</p>
      <div id="detail-body" class="hidden">
        <h3 id="detail-title"></h3>
        <p id="detail-summary"></p>
        <div><button id="apply" type="button">Apply this candidate</button><span id="why-not"></span></div>
        <h4>Diff against its parent</h4>
        <pre id="detail-diff"></pre>
        <details><summary>Source</summary><pre id="detail-source"></pre></details>
      </div>
    </section>
    <details id="chart-box" open><summary>Best so far</summary><div id="chart"></div></details>
  </aside>
</main>
<script nonce="${nonce}" src="${esc(scriptUri)}"></script>
</body>
</html>`;
}
