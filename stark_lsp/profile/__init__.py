"""Profiling feedback for the Plan agent: Nsight Compute on the leading
candidates. See ``ncu.py`` (the tool), ``report.py`` (the stored data) and
``run_once.py`` (the process ncu watches); docs/SEARCH.md, "Profiling"."""

from stark_lsp.profile.ncu import METRICS, NcuProfiler, find_ncu, ncu_command, parse_csv
from stark_lsp.profile.report import KernelProfile, ProfileReport

__all__ = ["METRICS", "KernelProfile", "NcuProfiler", "ProfileReport", "find_ncu", "ncu_command", "parse_csv"]
