"""A small Triton package: kernels that import their neighbours (samples/triton_pkg/README.md)."""
from .rms_norm import rms_norm

__all__ = ["rms_norm"]
