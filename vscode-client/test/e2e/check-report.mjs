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
  rename: (r) => [
    [/moved to moved\.py and goes on/.test(r.moved ?? ''), 'the search did not move with the renamed files'],
    [/cancelled/.test(r.stopped ?? ''), 'Stop did not reach the search under its new name'],
  ],
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
  ],
};

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
    for (const [ok, why] of check(r)) if (!ok) problems.push(`${name}: ${why}`);
  }
  return problems;
}
