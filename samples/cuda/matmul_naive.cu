// Naive fp32 matrix product C = A @ B, A (M, K), B (K, N), all row-major.
// One thread per element of C, reading its row of A and column of B straight
// from global memory (no shared-memory tiling). The block is BLOCK_X x BLOCK_Y
// threads and the grid follows it; 4 threads across a row of C make the loads
// of B poorly coalesced. The harness is matmul_naive.harness.py beside this file.
// stark-nvcc-flags: -O3
#include <cuda_runtime.h>

#define BLOCK_X 4
#define BLOCK_Y 32

__global__ void matmul_naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    const float* a_row = a + (size_t)row * k;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) {
        acc += a_row[i] * b[(size_t)i * n + col];
    }
    c[(size_t)row * n + col] = acc;
}

extern "C" void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 block(BLOCK_X, BLOCK_Y);
    dim3 grid((n + BLOCK_X - 1) / BLOCK_X, (m + BLOCK_Y - 1) / BLOCK_Y);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
}
