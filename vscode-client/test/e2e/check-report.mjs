// What the end-to-end test requires of the extension's self-test report (src/e2e.ts).
export function checkReport(r) {
  const problems = [];
  if (!r) return ['no report'];
  if (r.error) problems.push(`extension error at stage ${r.stage}: ${r.error}`);
  if (r.stage !== 'done') problems.push(`stopped at stage ${r.stage}`);
  if (!r.serverRunning) problems.push('the server was not running');
  if (!(r.codeActionsBefore ?? []).some((t) => /optimi[sz]e/i.test(t))) problems.push('no "Optimize kernel" code action');
  if (!/faster/i.test(r.diagnostic?.message ?? '')) problems.push('no speedup diagnostic');
  if (!(r.hover ?? []).join('\n').trim()) problems.push('no hover on the diagnostic');
  if (!(r.codeActionsAfter ?? []).some((t) => /apply best/i.test(t))) problems.push('no "Apply best candidate" code action');
  if (!(r.tree?.nodes > 1)) problems.push('the tree view showed no candidates');
  if (!r.fileChanged) problems.push('applying the best candidate did not change the file');
  if (r.fileChanged && !r.fileMatchesBestSource) problems.push('the file is not the best candidate');
  return problems;
}
