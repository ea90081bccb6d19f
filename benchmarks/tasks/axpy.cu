// y = a * x + b over 2^24 floats: a short kernel, so latency measurements show
// the evaluator's own overhead rather than the kernel's run time.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void axpy_kernel(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b[i];
}

extern "C" void axpy(const float* x, const float* b, float* y, float a, int n) {
    axpy_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, b, y, a, n);
}
