"""Every KernelBench level-2 model with a convolution, shrunk to small sizes, its fused ModelNew
(``fusion.render``) checked against the model with the ``CHANNELS_LAST`` switch off and on.

    TRITON_INTERPRET=1 python3 benchmarks/fusion_layout_sweep.py [MODEL ...]

A correctness sweep on the CPU (Triton's interpreter), no timing: the switch changes memory order
only, so on must give the model's values wherever off does. Sizes are shrunk by name (batch 2,
spatial sizes at most 10, channels at most 16, other integers over 32 to 16); a model those sizes
do not fit (a LayerNorm's width written as a number) fails with the switch off too and is listed
apart. Prints one line a model and the lists; exit 1 where the switch on fails and off does not.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

OFF, ON = "\nCHANNELS_LAST = False\n", "\nCHANNELS_LAST = True\n"
SPATIAL = {"height", "width", "depth", "h", "w", "d", "height_in", "width_in", "depth_in", "length", "seq_len"}


def shrink(source: str) -> str:
    from kb_small import with_sizes

    sizes = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            name, value = node.targets[0].id, node.value.value
            if name == "batch_size":
                sizes[name] = 2
            elif name.lower() in SPATIAL:
                sizes[name] = min(value, 10)
            elif "channels" in name:
                sizes[name] = min(value, 16)
            elif value > 32:
                sizes[name] = 16
    return with_sizes(source, sizes)


def main() -> int:
    from kb_small import compare

    from stark_lsp.agents.builtin import fusion

    folder = ROOT / "benchmarks" / "kernelbench" / "level2"
    files = [folder / f"{m}.py" for m in sys.argv[1:]] or sorted(folder.glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
    lists: dict[str, list[str]] = {"both correct": [], "no switch written": [], "off fails (sizes)": [], "ON FAILS": []}
    for f in files:
        source = f.read_text()
        if "nn.Conv" not in source:
            continue
        source = shrink(source)
        code = fusion.render(source)
        if OFF not in code:
            verdict, why = "no switch written", ""
        else:
            try:
                compare(source, code, atol=1e-3, rtol=1e-3)
            except Exception as e:  # noqa: BLE001  a row, not the end
                verdict, why = "off fails (sizes)", f"{type(e).__name__}: {str(e)[:120]}"
            else:
                try:
                    compare(source, code.replace(OFF, ON), atol=1e-3, rtol=1e-3)
                    verdict, why = "both correct", ""
                except Exception as e:  # noqa: BLE001
                    verdict, why = "ON FAILS", f"{type(e).__name__}: {str(e)[:200]}"
        lists[verdict].append(f"{f.stem} {why}".strip())
        print(f"{f.stem}: {verdict} {why}".rstrip(), flush=True)
    print()
    for verdict, names in lists.items():
        print(f"{verdict}: {len(names)}")
    return 1 if lists["ON FAILS"] else 0


if __name__ == "__main__":
    sys.exit(main())
