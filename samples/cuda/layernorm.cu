// Layer normalization over the last dimension of a (rows, cols) matrix, with
// a per-column weight and bias: y = (x - mean) / sqrt(var + eps) * w + b.
// One block per row; the block walks its row three times (sum, squared
// deviations, write) and reduces in shared memory. Deliberately small blocks:
// THREADS = 32. The harness is layernorm.harness.py beside this file.
// stark-nvcc-flags: -O3
#include <cuda_runtime.h>

#define THREADS 32

__device__ float block_sum(float v, float* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float total = buf[0];
    __syncthreads();
    return total;
}

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y,
                                 int cols, float eps) {
    __shared__ float buf[THREADS];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += xr[c];
    float mean = block_sum(s, buf) / cols;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, buf) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}

extern "C" void layernorm(const float* x, const float* w, const float* b, float* y,
                          int rows, int cols, float eps) {
    layernorm_kernel<<<rows, THREADS>>>(x, w, b, y, cols, eps);
}
