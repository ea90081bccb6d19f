"""Launch settings shared by the package's kernels."""
BLOCK_SIZE = 128  # elements per chunk of a row: small for long rows
NUM_WARPS = 4
EPS = 1e-6
