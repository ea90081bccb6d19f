#include <cuda_runtime.h>

__global__ void softmax_rows_kernel(const float* x, float* y, int rows, int cols) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    y[i * 1000000007L] = x[0];  // far outside any allocation
}

extern "C" void softmax_rows(const float* x, float* y, int rows, int cols) {
    softmax_rows_kernel<<<rows, 256>>>(x, y, rows, cols);
}
