"""A KernelBench candidate for relu.py: ModelNew with inline CUDA (load_inline)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        y[i] = v;
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.numel() % 4 == 0, "numel must be a multiple of 4");
    auto y = torch::empty_like(x);
    long n4 = x.numel() / 4;
    int threads = 256;
    long blocks = (n4 + threads - 1) / threads;
    relu_kernel<<<blocks, threads>>>((const float4*)x.data_ptr<float>(), (float4*)y.data_ptr<float>(), n4);
    return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(name="stark_sample_relu_inline", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["relu_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cuda(x.contiguous())
