"""Issue 23, 8b and 7d: the hardware card gives the per-SM and per-block limits where they are known
(from torch's device properties, else the compute capability's table), none on the CPU; and it lists
nvcc only where CUDA can run, never for a Triton task."""

from __future__ import annotations

from types import SimpleNamespace

from llm_trees import CPU_HARDWARE, HARDWARE
from stark_lsp.evaluate.gpu_limits import BY_CAPABILITY, gpu_limits
from stark_lsp.search.hardware_card import cuda_runs, hardware_card, limits_line

H100_TORCH = dict(major=9, minor=0, shared_memory_per_block=49152, shared_memory_per_block_optin=232448,
                  shared_memory_per_multiprocessor=233472, regs_per_multiprocessor=65536,
                  max_threads_per_multi_processor=2048, warp_size=32)
H100_LINE = ("Per SM: 228 KiB shared memory, 65536 registers, 2048 threads, 32 blocks; per block: 48 KiB shared "
             "memory (227 KiB opted in), 65536 registers, 1024 threads; warp size 32")


def test_torchs_figures_first_the_capabilitys_table_for_the_rest():
    got = gpu_limits(SimpleNamespace(**H100_TORCH))
    assert got["smem_per_sm"] == 233472 and got["smem_per_block_optin"] == 232448  # torch's
    assert got["max_blocks_per_sm"] == 32 and got["regs_per_block"] == 65536  # the table's (torch has none)
    assert limits_line(got) == H100_LINE
    old_torch = {k: v for k, v in H100_TORCH.items() if k not in ("shared_memory_per_block_optin",
                                                                   "regs_per_multiprocessor")}
    assert gpu_limits(SimpleNamespace(**old_torch)) == got  # the table fills what an older torch lacks
    ampere = gpu_limits(SimpleNamespace(major=8, minor=6, warp_size=32))
    assert ampere["max_blocks_per_sm"] == 16 and ampere["smem_per_block_optin"] == 99 * 1024
    assert set(BY_CAPABILITY) == {"8.0", "8.6", "8.9", "9.0", "10.0"}


def test_unknown_architectures_and_odd_properties_never_raise():
    assert gpu_limits(SimpleNamespace(major=7, minor=5, warp_size=32, shared_memory_per_block=49152)) == {
        "warp_size": 32, "smem_per_block": 49152}  # not in the table: torch's figures alone

    class Broken:
        major = "x"

        @property
        def warp_size(self):
            raise RuntimeError("no device")

    assert gpu_limits(Broken()) == {} and gpu_limits(None) == {} and gpu_limits(object()) == {}


def test_the_card_shows_the_limits_where_known():
    card = hardware_card({**HARDWARE, "limits": gpu_limits(SimpleNamespace(**H100_TORCH))})
    assert card.splitlines()[2] == H100_LINE  # right under the GPU line
    assert card.splitlines()[2] in hardware_card(HARDWARE)  # the example tree's H200 (tests/llm_trees.py)
    none = {k: v for k, v in HARDWARE.items() if k != "limits"}
    assert "Per SM" not in hardware_card(none)  # an evaluator that reports none: no line
    assert limits_line({"warp_size": 32}) == "warp size 32"
    assert limits_line({"smem_per_block": 49152, "smem_per_block_optin": 49152}) == "Per block: 48 KiB shared memory"
    assert limits_line({"regs_per_sm": "many", "max_threads_per_sm": None}) == "" and limits_line("x") == ""
    cpu = hardware_card({**CPU_HARDWARE, "limits": {"warp_size": 32}})
    assert "Per SM" not in cpu and "warp size" not in cpu  # the CPU card shows none


def test_nvcc_only_where_cuda_can_run_and_never_for_triton():
    assert "Compilers: nvcc 13.0 (V13.0.88), triton 3.5.0, torch 2.9.0" in hardware_card(HARDWARE, kind="cuda")
    assert "Compilers: nvcc 13.0 (V13.0.88)" in hardware_card(HARDWARE, kind="kernelbench")
    assert "nvcc" not in hardware_card(HARDWARE, kind="triton")
    cpu = hardware_card({**CPU_HARDWARE, "nvcc": "13.0 (V13.0.88)"}, kind="kernelbench")
    assert "nvcc" not in cpu and "Compilers: triton 3.5.0, torch 2.9.0" in cpu
    assert not cuda_runs(CPU_HARDWARE) and cuda_runs(HARDWARE) and cuda_runs({}) and cuda_runs(None)
    assert cuda_runs({"error": "no worker became ready"})  # unknown: assumed it can
