// The other translation unit: linked with every candidate of l2norm.cu, built once.
#include "rownorm.cuh"

__global__ void scale_rows_kernel(const float* x, const float* inv_norm, float* y, int rows, int cols) {
    int r = blockIdx.y;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
        y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * inv_norm[r];
    }
}

void launch_scale_rows(const float* x, const float* inv_norm, float* y, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + 255) / 256 < 8 ? (cols + 255) / 256 : 8, rows);
    scale_rows_kernel<<<grid, 256, 0, stream>>>(x, inv_norm, y, rows, cols);
}
