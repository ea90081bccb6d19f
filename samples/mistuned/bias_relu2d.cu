// Mistuned CUDA sample: out = relu(x + bias[col]) over a (rows, cols) matrix.
// A 2-D launch whose grid follows the block constants. Deliberately slow:
// 8x2 = 16 threads per block, half a warp.

#define BLOCK_X 8
#define BLOCK_Y 2

__global__ void bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        float v = x[(size_t)r * cols + c] + bias[c];
        out[(size_t)r * cols + c] = v > 0.0f ? v : 0.0f;
    }
}

extern "C" void bias_relu(const float* x, const float* bias, float* out, int rows, int cols) {
    dim3 block(BLOCK_X, BLOCK_Y);
    dim3 grid((cols + BLOCK_X - 1) / BLOCK_X, (rows + BLOCK_Y - 1) / BLOCK_Y);
    bias_relu_kernel<<<grid, block>>>(x, bias, out, rows, cols);
}
