// Mistuned CUDA sample: the sum of each row of a (rows, cols) matrix.
// One block per row; each thread strides over the columns, then a tree
// reduction in shared memory. Deliberately slow: 32 threads per block.
// stark-nvcc-flags: -O3

// @stark begin threads: set THREADS to 256 (was 32)
#define THREADS 32
// @stark end threads

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float buf[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        acc += row[c];
    }
    buf[threadIdx.x] = acc;
    __syncthreads();
    // @stark begin reduce: finish the last 32 partial sums with __shfl_down_sync instead of shared memory
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            buf[threadIdx.x] += buf[threadIdx.x + s];
        }
        __syncthreads();
    }
    // @stark end reduce
    if (threadIdx.x == 0) {
        out[blockIdx.x] = buf[0];
    }
}

extern "C" void row_sum(const float* x, float* out, int rows, int cols) {
    row_sum_kernel<<<rows, THREADS>>>(x, out, cols);
}
