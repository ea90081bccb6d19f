"""Settings shared by the package's kernels."""
EPS = 1e-6
