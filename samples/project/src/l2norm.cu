// Row-wise L2 normalization, the kernel to optimize: one thread per row computes
// the row's inverse norm (slow: no parallelism within a row, uncoalesced reads);
// the scaling itself is in scale_rows.cu, shared through include/rownorm.cuh.
// Built with the include path and ROWNORM_THREADS from build/compile_commands.json,
// and linked with scale_rows.cu (l2norm.harness.py, BUILD["sources"]).
#include "rownorm.cuh"

__global__ void inv_norm_kernel(const float* x, float* inv_norm, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) acc += square(x[(size_t)r * cols + c]);
    inv_norm[r] = rsqrtf(acc + ROWNORM_EPS);
}

extern "C" void l2_normalize_rows(const float* x, float* inv_norm, float* y, int rows, int cols, cudaStream_t stream) {
    inv_norm_kernel<<<(rows + ROWNORM_THREADS - 1) / ROWNORM_THREADS, ROWNORM_THREADS, 0, stream>>>(x, inv_norm, rows, cols);
    launch_scale_rows(x, inv_norm, y, rows, cols, stream);
}
