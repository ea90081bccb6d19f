// What the end-to-end test requires of what the driver saw (drive.mjs writes the report).
const checks = {
  main: (r) => [
    [/attempt|your kernel|evaluation worker/.test(r.progress ?? ''), `the progress notification showed no phase or attempt: ${r.progress}`],
    [/optimizing row_softmax_kernel/.test(r.statusBarRunning ?? ''), `the status bar did not say it runs: ${r.statusBarRunning}`],
    [/done: \d+ attempts/.test(r.done ?? ''), 'the search did not end with "done"'],
    [/× your kernel|nothing beats your kernel/.test(r.done ?? ''), `the end message has no labelled figure: ${r.done}`],
    [/#\s+plan\s+status\s+time\s+× yours/.test(r.hover ?? ''), 'the hover shows no candidates table'],
    [/baseline\s+your kernel/.test(r.hover ?? ''), 'the hover shows no baseline row'],
    [!/e-0\d/.test(r.hover ?? ''), 'the hover shows a figure in exponent notation'],
    [typeof r.bestInTree === 'number', 'the tree view marks no best candidate'],
    [/@@/.test(r.detail?.diff ?? ''), 'clicking the best node showed no diff'],
    [r.detail?.applyEnabled === true, 'Apply is disabled for the best candidate'],
    [r.fileIsBest === true, 'after Apply and save, the file is not the best candidate'],
    [(r.problemsAfterApply ?? []).some((t) => /is in this file/.test(t)), 'the diagnostic did not change after Apply'],
  ],
  cancel: (r) => [
    [/swish_add_kernel: cancelled/.test(r.cancelled ?? ''), 'Cancel in the progress notification did not stop the search'],
    [r.statusBarAfter && !/optimizing/.test(r.statusBarAfter), `the status bar still says it runs: ${r.statusBarAfter}`],
  ],
  gpuless: (r) => [
    [/needs an NVIDIA GPU/.test(r.refusal ?? ''), 'no "needs an NVIDIA GPU" message'],
    [r.searchStarted === false, 'a search started for a CUDA kernel without a GPU'],
  ],
  rename: (r, report) => {
    // item 6: one tree move per rename, with one message. The Explorer's rename event and the file watcher both
    // see it; the loser of that race must not say "already has a search tree … stays as it was". Every toast
    // of the run counts (report.toasts, kept until the end): a late second message shows there too. seenToasts
    // keeps one of each text, so two identical messages read as one; two different ones are caught.
    const toasts = r.toastsAfterRename ?? report?.toasts ?? [];
    const already = toasts.filter((t) => /already has a search tree/.test(t));
    const moves = toasts.filter((t) => /moved to moved\.py/.test(t));
    return [
      [/moved to moved\.py and goes on/.test(r.moved ?? ''), 'the search did not move with the renamed files'],
      [/cancelled/.test(r.stopped ?? ''), 'Stop did not reach the search under its new name'],
      [already.length === 0, `the rename also said the tree was not moved: ${JSON.stringify(already)}`],
      [moves.length === 1, `the rename said "moved to" ${moves.length} times, not once: ${JSON.stringify(moves)}`],
    ];
  },
  delete: (r) => [[/doomed\.py (was deleted|is gone)/.test(r.deleted ?? ''), 'deleting the file did not stop its search']],
  harness: (r) => [
    [/Create fill_me\.harness\.py/.test(r.quickFix ?? ''), 'no "Create fill_me.harness.py" quick fix'],
    [r.harnessOpened === true, 'the new harness was not opened'],
    [(r.problemsBefore ?? []).some((t) => /fill in reference\(\)/.test(t)), 'no "fill in reference()" problem before it was written'],
    [!(r.problemsAfter ?? []).some((t) => /fill in reference\(\)/.test(t)), '"fill in reference()" stayed after it was written'],
    [/done: \d+ attempts/.test(r.done ?? ''), 'optimizing after filling the harness did not end with "done"'],
  ],
  bigtree: (r) => [
    [r.nodes >= 50, `the tree view drew ${r.nodes} nodes for ${r.attempts} attempts`],
    [new RegExp(`${r.attempts} attempts`).test(r.subtitle ?? ''), `the tree view does not count ${r.attempts} attempts: ${r.subtitle}`],
    [r.labelPxShown >= 8, `the tree opened with nodes ${r.labelPxShown?.toFixed(1)} px across: too small to read`],
    [r.zoomedViewBox && r.zoomedViewBox !== r.fitViewBox, 'zooming did not change the view'],
    [r.pannedViewBox && r.pannedViewBox !== r.zoomedViewBox, 'dragging did not pan the view'],
    [/^#\d+/.test(r.detailTitle ?? ''), 'clicking a node showed no detail'],
    [r.detailVisible === true, 'the detail panel is not visible without scrolling'],
    ...minimapChecks(r),
    ...foldChecks(r),
  ],
  items: (r) => {
    const text = (t) => (typeof t === 'string' ? t : t.text);
    // "Optimize kernel k (unavailable: why)" is the client's way of showing a disabled one in the lightbulb
    const enabledOptimize = (rows) => (rows ?? []).some((t) => /^Optimize kernel/.test(text(t)) && !/\(unavailable: /.test(text(t)));
    const unavailable = (rows, why) => (rows ?? []).some((t) => /^Optimize kernel .* \(unavailable: /.test(text(t)) && text(t).includes(why));
    const helperUser = 'Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)';
    const disabledWith = (rows, text) => (rows ?? []).some((t) => t.startsWith('(disabled) ') && t.includes(text));
    const hoverKernel = (t) => /(scale_kernel_\d+) · STARK/.exec(t ?? '')?.[1];
    const harness = 'Create big.harness.py for scale_kernel_900';
    return [
      // 7: removed on disk, saved again
      [(r.goneBefore ?? []).some((p) => /Best candidate/.test(p.text)), 'gone.py showed no best candidate before it was removed'],
      [Array.isArray(r.goneAfterRm) && r.goneAfterRm.length === 0, `gone.py kept its problems once removed: ${JSON.stringify(r.goneAfterRm)}`],
      [disabledWith(r.goneRefactor, 'gone.py is not on disk'), `"Optimize" did not say gone.py is not on disk: ${JSON.stringify(r.goneRefactor)}`],
      [typeof r.goneHover === 'string' && !/Best candidate|\bbest\b/.test(r.goneHover), `the removed kernel's hover still shows its search: ${r.goneHover}`],
      [(r.goneSaved ?? []).some((p) => /Best candidate/.test(p.text)), 'saving gone.py again did not bring its best candidate back'],
      [typeof r.goneStatus === 'string' && /STARK/.test(r.goneStatus) && !/best/.test(r.goneStatus), `the status bar kept the removed kernel's best: ${r.goneStatus}`],
      [/swish_add_kernel: best/.test(r.goneStatusAgain ?? ''), `the status bar did not show gone.py's best once saved again: ${r.goneStatusAgain}`],
      // 3: a syntax error
      [(r.brokenProblems ?? []).some((p) => p.line === r.brokenKernelLine && p.text.includes(`fix the syntax error on line ${r.badLine} first`)),
        `no "fix the syntax error on line ${r.badLine}" problem on the kernel's line ${r.brokenKernelLine}`],
      [disabledWith(r.brokenRefactor, `fix the syntax error on line ${r.badLine} first`), `"Optimize" not disabled with the syntax error's line: ${JSON.stringify(r.brokenRefactor)}`],
      [!enabledOptimize(r.brokenQuickFix?.rows), 'Ctrl+. offered "Optimize" on a file with a syntax error'],
      [unavailable(r.brokenQuickFix?.rows, `fix the syntax error on line ${r.badLine} first`),
        `Ctrl+. did not show "Optimize" unavailable with the syntax error's line: ${JSON.stringify(r.brokenQuickFix)}`],
      [new RegExp(`is unavailable: fix the syntax error on line ${r.badLine} first`).test(r.brokenWhyToast ?? ''),
        `choosing "Optimize (unavailable: ...)" did not say why: ${r.brokenWhyToast}`],
      // 2: a helper module
      [JSON.stringify(r.helperSquiggles) === '["squiggly-hint"]', `the helper module is marked ${JSON.stringify(r.helperSquiggles)}, not with a hint only`],
      [/a helper module: rms_norm\.py uses it/.test(r.helperHover ?? '') && /stark\(helper\)/.test(r.helperHover ?? ''),
        `the helper's hint (its hover) does not name rms_norm.py: ${r.helperHover}`],
      [Array.isArray(r.helperProblems) && !r.helperProblems.length, `the helper module is in the Problems panel: ${JSON.stringify(r.helperProblems)}`],
      [!(r.helperQuickFix?.rows ?? []).some((x) => /harness/i.test(x.text)) && (r.helperQuickFix?.rows ?? []).some((x) => x.text === helperUser && !x.disabled),
        `Ctrl+. on the helper did not offer its user's search alone (no harness): ${JSON.stringify(r.helperQuickFix)}`],
      [(r.helperRefactor ?? []).includes(helperUser), `Refactor… on the helper did not offer its user's search: ${JSON.stringify(r.helperRefactor)}`],
      // 9a: no GPU
      [(r.cudaQuickFix ?? []).includes('Check that softmax_rows_kernel compiles (no GPU here to run it)') && !enabledOptimize(r.cudaQuickFix)
        && unavailable(r.cudaQuickFix, 'needs an NVIDIA GPU'), `Ctrl+. on the CUDA kernel: ${JSON.stringify(r.cudaQuickFix)}`],
      [r.cudaRefactor?.clicked === 'Show Disabled' && disabledWith(r.cudaRefactor?.rows, 'needs an NVIDIA GPU'),
        `"Optimize" not shown disabled with "needs an NVIDIA GPU": ${JSON.stringify(r.cudaRefactor)}`],
      // 1: a 20,000-line .cu, typed in above and inside a kernel
      [r.cursorAfterTyping === 21, `20 lines typed at the top left the cursor on line ${r.cursorAfterTyping}`],
      [hoverKernel(r.hoverMoved) === 'scale_kernel_900', `the hover 20 lines down names ${hoverKernel(r.hoverMoved)}, not scale_kernel_900`],
      [hoverKernel(r.hoverOldLine) === 'scale_kernel_898', `the hover at the kernel's old line names ${hoverKernel(r.hoverOldLine)}, not scale_kernel_898`],
      [r.quickFixMoved?.length === 2 && r.quickFixMoved.includes(harness) && unavailable(r.quickFixMoved, 'create big.harness.py first')
        && r.quickFixMoved.every((t) => !t.includes('Optimize') || t.startsWith('Optimize kernel scale_kernel_900 ')),
        `Ctrl+. 20 lines down: ${JSON.stringify(r.quickFixMoved)}`],
      [r.firstProblemMoved === r.bigFirst + 20, `the first diagnostic is on line ${r.firstProblemMoved}, not ${r.bigFirst + 20}`],
      [r.cursorInside === r.bigKernel + 23, `the line typed inside the kernel is line ${r.cursorInside}, not ${r.bigKernel + 23}`],
      [hoverKernel(r.hoverAgain) === 'scale_kernel_900', `the hover after more edits names ${hoverKernel(r.hoverAgain)}, not scale_kernel_900`],
      [r.quickFixAgain?.length === 2 && r.quickFixAgain.includes(harness) && unavailable(r.quickFixAgain, 'create big.harness.py first')
        && r.quickFixAgain.every((t) => !t.includes('Optimize') || t.startsWith('Optimize kernel scale_kernel_900 ')),
        `Ctrl+. after more edits: ${JSON.stringify(r.quickFixAgain)}`],
      [r.firstProblemAgain === r.bigFirst + 21, `after more edits the first diagnostic is on line ${r.firstProblemAgain}, not ${r.bigFirst + 21}`],
    ];
  },
};

const overlap = (a, b) => a && b && a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5;
const inside = (a, b) => a && b && a.x >= b.x - 0.5 && a.y >= b.y - 0.5 && a.x + a.w <= b.x + b.w + 0.5 && a.y + a.h <= b.y + b.h + 0.5;

function minimapChecks(r) {
  const m = r.minimap ?? {};
  const opensOnPart = r.fitViewBox !== r.naturalBox; // the tree opened zoomed in on its best node
  if (!opensOnPart) return [[m.shown === false, 'the minimap shows while the pane shows the whole tree']];
  return [
    [m.shown === true, 'the pane opened on part of the tree, and there is no minimap'],
    [inside(m.box, m.pane), `the minimap is not inside the tree pane: ${JSON.stringify(m.box)} in ${JSON.stringify(m.pane)}`],
    [!overlap(m.box, m.header) && !overlap(m.box, m.aside), 'the minimap covers the header or the detail panel'],
    [Array.isArray(m.view) && m.view[2] > 0 && m.view[3] > 0, 'the minimap has no rectangle for the part shown'],
    [r.minimapClickMoved === true, 'a click in the minimap did not move the view'],
    [r.minimapDragViewBox && r.minimapDragViewBox !== r.minimapClickViewBox, 'dragging in the minimap did not move the view'],
    [r.minimapKeyViewBox && r.minimapKeyViewBox !== r.minimapDragViewBox, 'an arrow key on the focused minimap did not move the view'],
    [r.focusLeftMinimap === true, 'Tab did not leave the minimap'],
    [r.minimapAfterFit === false, 'the minimap stayed after Fit showed the whole tree'],
  ];
}

function foldChecks(r) {
  if (!r.folded) return [];
  const o = r.foldOpen ?? {};
  return [
    [r.foldInView === true, 'the minimap did not bring the folded subtree into view'],
    [o.nodesAfter > o.nodesBefore && o.toggle === true, `clicking a folded subtree of ${o.size} did not open it: ${JSON.stringify(o)}`],
    // it stays where its fold was, only moved up when the opened subtree would go past the pane's bottom
    [o.movedX < 4 && o.topInView === true, `the opened subtree's top moved ${o.moved?.toFixed(1)} px from where its fold was, or left the view`],
    [typeof o.detail === 'string', "opening a folded subtree did not show its top node's detail"],
    [r.foldClosed?.folded === r.folded && r.foldClosed?.nodes === o.nodesBefore, `its toggle did not fold it again: ${JSON.stringify(r.foldClosed)}`],
    [r.subtitleAfter === r.subtitle, 'the header changed while folding and opening'],
  ];
}

export function checkReport(report, only = []) {
  if (!report?.scenarios) return ['no report'];
  const problems = [];
  for (const [name, check] of Object.entries(checks)) {
    if (only.length && !only.includes(name)) continue;
    const r = report.scenarios[name];
    if (!r) {
      problems.push(`${name}: did not run`);
      continue;
    }
    if (r.error) problems.push(`${name}: ${r.error}`);
    for (const [ok, why] of check(r, report)) if (!ok) problems.push(`${name}: ${why}`);
  }
  return problems;
}
