// Fused bias + GELU: y = gelu(x + bias[col]) over a (rows, cols) matrix, with
// the exact (erf) GELU that torch uses by default. One pass over memory where
// eager PyTorch makes two (add, then GELU). Each thread handles ITEMS
// consecutive elements, so neighbouring threads touch addresses ITEMS apart
// (poorly coalesced), and blocks are small (THREADS = 32).
// The harness is bias_gelu.harness.py beside this file.
// stark-nvcc-flags: -O3
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 32
#define ITEMS 8

__global__ void bias_gelu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ y, long long n, int cols) {
    long long start = ((long long)blockIdx.x * THREADS + threadIdx.x) * ITEMS;
    for (int k = 0; k < ITEMS; ++k) {
        long long i = start + k;
        if (i < n) {
            float v = x[i] + bias[i % cols];
            y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        }
    }
}

extern "C" void bias_gelu(const float* x, const float* bias, float* y, int rows, int cols) {
    long long n = (long long)rows * cols;
    long long per_block = (long long)THREADS * ITEMS;
    int blocks = (int)((n + per_block - 1) / per_block);
    bias_gelu_kernel<<<blocks, THREADS>>>(x, bias, y, n, cols);
}
