// Drives the end-to-end test: opens code-server in headless chromium (so the
// workbench and the extension host run), follows the extension's self-test
// report (src/e2e.ts), takes the screenshots, then checks what was seen.
//
// Usage: node drive.mjs --url URL --report FILE --out DIR [--chromium PATH] [--timeout-s N]
import { chromium } from 'playwright-core';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkReport } from './check-report.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url;
const reportPath = args.report;
const out = args.out;
const timeoutMs = Number(args['timeout-s'] ?? 1200) * 1000;
const log = (m) => process.stderr.write(`[drive] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readReport() {
  try {
    return JSON.parse(fs.readFileSync(reportPath, 'utf8'));
  } catch {
    return undefined;
  }
}

async function waitForStage(stages, ms) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    const r = readReport();
    if (r && r.stage !== last) {
      last = r.stage;
      log(`extension stage: ${r.stage}`);
    }
    if (r && stages.includes(r.stage)) return r;
    await sleep(1000);
  }
  throw new Error(`timed out waiting for ${stages.join('/')} (last stage: ${last ?? 'no report'})`);
}

// The webview is an iframe inside an iframe; find the frame with the tree, click
// the best candidate and read the detail pane (source and diff) it shows.
async function clickBestNode(page) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      const node = await frame.$('#tree .node.best-node:not(.root)').catch(() => null);
      if (!node) continue;
      const id = await node.getAttribute('data-id');
      await node.click();
      await frame.waitForSelector('#detail:not(.hidden)', { timeout: 10_000 });
      await frame.waitForFunction(() => document.getElementById('detail-title')?.textContent?.startsWith('#'));
      return {
        id,
        title: await frame.textContent('#detail-title'),
        diff: await frame.textContent('#detail-diff'),
        applyEnabled: !(await frame.$eval('#apply', (b) => b.disabled)),
      };
    }
    await sleep(500);
  }
  throw new Error('no tree view frame with a best candidate');
}

const userDataDir = fs.mkdtempSync(path.join(args.tmp ?? '/tmp', 'stark-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: args.chromium ?? '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1600, height: 1000 },
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
let code = 1;
const page = context.pages()[0] ?? (await context.newPage());
page.on('pageerror', (e) => log(`page error: ${e.message}`));
try {
  log(`opening ${url}`);
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
  log('workbench loaded');

  const atShot = await waitForStage(['ready-for-screenshot', 'failed', 'done'], timeoutMs);
  let treeClick;
  if (atShot.stage === 'ready-for-screenshot') {
    await sleep(3000); // let the webview, the squiggle and the hover paint
    await page.screenshot({ path: path.join(out, 'editor-hover.png') });
    await page.keyboard.press('Escape');
    treeClick = await clickBestNode(page).catch((e) => ({ error: String(e) }));
    log(`tree view click: ${JSON.stringify(treeClick).slice(0, 300)}`);
    await sleep(1000);
  }
  await page.screenshot({ path: path.join(out, 'editor-diagnostic-tree.png') });
  log(`screenshot: ${path.join(out, 'editor-diagnostic-tree.png')}`);
  fs.writeFileSync(reportPath + '.continue', 'go\n');

  const final = atShot.stage === 'ready-for-screenshot' ? await waitForStage(['failed', 'done'], 300_000) : atShot;
  await sleep(1500);
  await page.screenshot({ path: path.join(out, 'after-apply.png') });
  const problems = checkReport(final);
  if (treeClick && !(treeClick.title && /^@@/m.test(treeClick.diff ?? ''))) {
    problems.push(`clicking the best node in the tree view showed no diff: ${JSON.stringify(treeClick)}`);
  }
  if (treeClick && final.searchFinished && Number(treeClick.id) !== final.searchFinished.best) {
    problems.push(`the tree view marks #${treeClick.id} as best, the server says #${final.searchFinished.best}`);
  }
  if (problems.length) {
    log('FAILED:\n  ' + problems.join('\n  '));
  } else {
    log(`PASSED: ${final.diagnostic.message} | hover: ${String(final.hover?.[0] ?? '').split('\n')[0]} | applied, file changed`);
    code = 0;
  }
} catch (e) {
  log(`FAILED: ${e instanceof Error ? e.message : e}`);
  await page.screenshot({ path: path.join(out, 'failure.png') }).catch(() => undefined);
} finally {
  await context.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(code);
