"""Shared test setup: small shapes, CPU evaluation under the Triton interpreter."""
import os
import shutil

import pytest

from stark_lsp.evaluate.evaluator import gpu_present

os.environ.setdefault("STARK_SMALL", "1")
if not gpu_present():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels run on the CPU


def pytest_collection_modifyitems(config, items):
    has_nvcc = shutil.which("nvcc") is not None
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (scripts/gpu_tests.sh runs these on the device machine)"))
        if "nvcc" in item.keywords and not has_nvcc:
            item.add_marker(pytest.mark.skip(reason="needs nvcc on the PATH"))
