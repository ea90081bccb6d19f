// Row softmax, one thread per row: simple, and slow (each thread walks its row
// three times, and neighbouring threads read addresses a whole row apart).
// The harness is softmax_rows.harness.py beside this file.
#include <cuda_runtime.h>
#include <math.h>

#define THREADS_PER_BLOCK 64

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += __expf(xr[c] - m);
    float inv = 1.f / s;
    for (int c = 0; c < cols; ++c) yr[c] = __expf(xr[c] - m) * inv;
}

extern "C" void softmax_rows(const float* x, float* y, int rows, int cols) {
    int blocks = (rows + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    softmax_rows_kernel<<<blocks, THREADS_PER_BLOCK>>>(x, y, rows, cols);
}
