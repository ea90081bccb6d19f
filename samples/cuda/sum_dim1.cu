// Reduction over the middle dimension: out[b, c] = sum over r of x[b, r, c],
// x of shape (batch, rows, cols), row-major. One thread per output element
// walks down its column; neighbouring threads read neighbouring columns, so
// the loads are coalesced, but each thread does a long serial loop and the
// blocks are small (THREADS = 32) with the loop not unrolled.
// The harness is sum_dim1.harness.py beside this file.
// stark-nvcc-flags: -O3
#include <cuda_runtime.h>

#define THREADS 32

__global__ void sum_dim1_kernel(const float* __restrict__ x, float* __restrict__ out,
                                int batch, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int bi = blockIdx.y;
    if (c >= cols) return;
    const float* col = x + (size_t)bi * rows * cols + c;
    float acc = 0.0f;
#pragma unroll 1
    for (int r = 0; r < rows; ++r) {
        acc += col[(size_t)r * cols];
    }
    out[(size_t)bi * cols + c] = acc;
}

extern "C" void sum_dim1(const float* x, float* out, int batch, int rows, int cols) {
    dim3 grid((cols + THREADS - 1) / THREADS, batch);
    sum_dim1_kernel<<<grid, THREADS>>>(x, out, batch, rows, cols);
}
