"""What torch.compile (Inductor) writes for KernelBench models, captured on a GPU machine for study.

    python3 benchmarks/inductor_capture.py OUT_DIR MODEL.py [MODEL.py ...]

Per model: Inductor's output code (``NAME.py``), and ``NAME.json`` with the Dynamo graph's inputs
(placeholder names, and which parameter, buffer or forward argument each example input is), each
Triton kernel's chosen launch config after the first call, and whether calling the output code's
``call`` on those inputs (loaded again as a plain module) gives the model's output. No candidate,
no judge: a tool to read the compiler's output from.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path

import torch


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def capture(path: Path, out: Path) -> dict:
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code

    kb = load(path)
    torch.manual_seed(0)
    model = kb.Model(*kb.get_init_inputs()).cuda().eval()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in kb.get_inputs()]
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(([n.name for n in gm.graph.nodes if n.op == "placeholder"], list(example_inputs)))
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    fn = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
    t0 = time.perf_counter()
    with torch.no_grad():
        got, codes = run_and_get_code(fn, *inputs)
        want = model(*inputs)
    info: dict = {"compile_s": round(time.perf_counter() - t0, 2), "graphs": len(graphs), "codes": len(codes)}
    names = {id(p): f"param {n}" for n, p in model.named_parameters()}
    names.update({id(b): f"buffer {n}" for n, b in model.named_buffers()})
    names.update({id(x): f"input {i}" for i, x in enumerate(inputs)})
    if graphs:
        ph, ex = graphs[0]
        info["placeholders"] = ph
        info["example_inputs"] = [names.get(id(t), f"? {type(t).__name__} {getattr(t, 'shape', t)}") for t in ex]
    for i, c in enumerate(codes):
        (out / f"{path.stem}.{i}.py").write_text(c)
    if codes and graphs:
        f = out / f"{path.stem}.0.py"
        spec = importlib.util.spec_from_file_location(f"ind_{path.stem}", f)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        with torch.no_grad():
            res = m.call(list(graphs[0][1]))
        res0 = res[0] if isinstance(res, (tuple, list)) else res
        w = want if isinstance(want, torch.Tensor) else want[0]
        info["call_matches"] = bool(torch.allclose(res0.float(), w.float(), atol=1e-3, rtol=1e-3))
        info["call_returns"] = [tuple(r.shape) if isinstance(r, torch.Tensor) else repr(r) for r in res] \
            if isinstance(res, (tuple, list)) else repr(type(res))
        kernels = {}
        for k, v in vars(m).items():
            launchers = getattr(v, "launchers", None)
            if launchers:
                cfg = launchers[0].config
                kernels[k] = {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                              "n_launchers": len(launchers), "type": type(v).__name__,
                              "inductor_meta": {a: str(b)[:200] for a, b in (getattr(v, "inductor_meta", {}) or {}).items()},
                              "triton_meta_keys": sorted((getattr(v, "triton_meta", {}) or {}).keys())}
        info["kernels"] = kernels
    info["got_matches_eager"] = bool(torch.allclose(got.float(), want.float(), atol=1e-3, rtol=1e-3)) \
        if isinstance(got, torch.Tensor) else None
    return info


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for p in sys.argv[2:]:
        path = Path(p)
        try:
            summary[path.stem] = capture(path, out)
        except Exception as e:  # noqa: BLE001 - a study tool: say what failed and go on
            summary[path.stem] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
        print(path.stem, json.dumps({k: v for k, v in summary[path.stem].items() if k not in ("kernels", "trace")})[:600],
              flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
