"""Human-readable text for an ``EvalResult`` (CLI and logs)."""

from __future__ import annotations

from stark_lsp.evaluate.result import REFERENCE_IN_TURN, EvalResult, Timing
from stark_lsp.speedups import CPU_NOTE, ratio_text, speedup_text


def _t(t: Timing) -> str:
    return f"{t.median_ms:.4g} ms (IQR {t.iqr_ms:.2g}, {t.reps} reps)"


def render_result(r: EvalResult, name: str = "candidate", hardware: str = "", reference_itself: bool = False) -> str:
    """``reference_itself``: the candidate is the KernelBench reference wrapped as
    ``ModelNew`` (no candidate given): its speedup is 1 by construction, not a result."""
    lines = [f"{name}: {r.status.value.upper()}" + (f" - {r.message}" if r.message else "")]
    if hardware:
        lines.append(f"  device:      {hardware}")
    if r.compile:
        c = r.compile
        lines.append(f"  compile:     {'ok' if c.ok else 'FAILED'} in {c.seconds:.2f} s" + (" (cached)" if c.cached else ""))
        for d in c.diagnostics[:10]:
            lines.append(f"    {_diag_line(d)}")
    if r.correctness and not r.correctness.trials:
        lines.append("  correctness: not checked (the evaluation stopped before its first trial)")
    elif r.correctness:
        k = r.correctness
        n_ok = sum(t.passed for t in k.trials)
        worst = max((t.max_abs_error or 0.0 for t in k.trials), default=0.0)
        lines.append(f"  correctness: {n_ok}/{len(k.trials)} trials passed (atol {k.atol}, rtol {k.rtol}, max abs error {worst:.3g})")
    if r.runtime:
        rt = r.runtime
        lines.append(f"  candidate:   {_t(rt.candidate)}")
        in_turn = ", timed in turn with the candidate" if REFERENCE_IN_TURN in rt.note else ""
        lines.append(f"  reference:   {_t(rt.reference)}{in_turn}")
        cpu = not rt.is_gpu
        if reference_itself:  # rt.speedup is 1 by construction (speedups.of_reference_itself), as --json says
            lines.append(f"  speedup:     {ratio_text(rt.speedup)} eager (the reference itself, timed against "
                         f"itself: the two times differ by noise only; give a candidate to compare)"
                         + (f" ({CPU_NOTE})" if cpu else ""))
        else:  # on the CPU the figure carries CPU_NOTE (speedup_text): the runtime's own note says the same
            lines.append(f"  speedup:     {speedup_text(rt.speedup, 'eager', cpu=cpu, degenerate=bool(r.degenerate))}"
                         + (f"  ({rt.note})" if rt.note and not cpu else ""))
        if rt.floor:
            f = rt.floor
            lines.append(f"  floor:       {f.floor_ms:.4g} ms ({f.bound}-bound: {f.bytes / 1e6:.1f} MB at {f.bandwidth_gbs:.0f} GB/s"
                         + (f", {f.flops / 1e9:.1f} GFLOP at {f.peak_tflops:.0f} TFLOP/s {f.dtype}" if f.flops and f.peak_tflops else "")
                         + f"); candidate at {ratio_text(f.gap(rt.candidate.median_ms))} the floor")
        if rt.compiled_reference and rt.speedup_vs_compiled:
            lines.append(f"  vs compile:  {speedup_text(rt.speedup_vs_compiled, 'compiled', cpu=cpu, degenerate=bool(r.degenerate))} "
                         f"(torch.compile {rt.compiled_reference.median_ms:.4g} ms)")
    if r.degenerate:
        lines.append(f"  task:        DEGENERATE: {r.degenerate}")
    for res in r.resources:
        lines.append(f"  kernel {res.kernel}: {res.registers} registers, {res.shared_bytes} B shared, "
                     f"{res.spill_stores or 0}/{res.spill_loads or 0} B spill stores/loads")
    for d in r.diagnostics[:5]:
        lines.append(f"  {_diag_line(d)}")
    for c in r.cheats:
        lines.append(f"  CHEAT {c.kind}: {c.message}")
    for f in r.flags:
        lines.append(f"  review: {f}")
    if r.output:
        lines.append("  output: " + r.output[-400:].replace("\n", "\n          "))
    lines.append(f"  total:       {r.seconds:.2f} s")
    return "\n".join(lines)


def _diag_line(d: object) -> str:
    """``error at line 7: ...``; a message in a project header or another unit names that file;
    one without a place (a build setting, the linker) says only what it is."""
    file, line = getattr(d, "file", None), getattr(d, "line", None)
    other = bool(file) and file.startswith("/") and not file.endswith(".py")
    if line and other:
        where = f" at {file}:{line}"
    elif line:
        where = f" at line {line}"
    elif file:
        where = f" in {file}"
    else:
        where = ""
    return f"{getattr(d, 'severity', 'error')}{where}: {getattr(d, 'message', '')}"
