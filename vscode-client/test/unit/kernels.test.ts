import { strict as assert } from 'assert';
import { findCudaKernels, findKernels, findTritonKernels, kernelAtLine } from '../../src/kernels';

const CUDA = `#include <cuda_runtime.h>
__device__ float sq(float x) { return x * x; }
__global__ void add_kernel(const float* a, float* b, int n) {
  int i = blockIdx.x;
}
template <int B>
__global__ void __launch_bounds__(256)
softmax_kernel(float* x) {}
extern "C" void launch(float* a) {}
`;

const TRITON = `import triton
import triton.language as tl

def helper(x):
    return x

@triton.autotune(
    configs=[triton.Config({"BLOCK": 64})],
    key=["n"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

@triton.jit
def mul_kernel(x_ptr):
    pass

@something_else
def not_a_kernel():
    pass
`;

describe('kernel discovery', () => {
  it('finds CUDA __global__ kernels with their lines, not device functions or launchers', () => {
    assert.deepEqual(findCudaKernels(CUDA), [
      { name: 'add_kernel', line: 2 },
      { name: 'softmax_kernel', line: 7 },
    ]);
  });

  it('finds @triton.jit functions, also under a multi-line autotune decorator', () => {
    assert.deepEqual(findTritonKernels(TRITON), [
      { name: 'add_kernel', line: 11 },
      { name: 'mul_kernel', line: 15 },
    ]);
  });

  it('does not take the next def when a top-level statement follows the decorator', () => {
    assert.deepEqual(findTritonKernels('@triton.jit\nx = 1\ndef f():\n  pass\n'), []);
  });

  it('chooses the parser by language id or file name', () => {
    assert.equal(findKernels(CUDA, 'cuda-cpp').length, 2);
    assert.equal(findKernels(CUDA, 'plaintext', '/a/k.cuh').length, 2);
    assert.equal(findKernels(TRITON, 'python').length, 2);
    assert.deepEqual(findKernels(TRITON, 'markdown', 'notes.md'), []);
  });

  it('gives a KernelBench reference one kernel, its Model, even with Triton in it', () => {
    const kb = 'import torch\n\nclass Model(nn.Module):\n    pass\n\ndef get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n';
    assert.deepEqual(findKernels(kb, 'python'), [{ name: 'Model', line: 2 }]);
    assert.deepEqual(findKernels(kb + TRITON, 'python'), [{ name: 'Model', line: 2 }]);
    assert.deepEqual(findKernels(kb.replace('def get_inputs', 'def other'), 'python'), []);
  });

  it('picks the kernel the cursor is in, or the first when above all', () => {
    const ks = findTritonKernels(TRITON);
    assert.equal(kernelAtLine(ks, 13)?.name, 'add_kernel');
    assert.equal(kernelAtLine(ks, 16)?.name, 'mul_kernel');
    assert.equal(kernelAtLine(ks, 0)?.name, 'add_kernel');
    assert.equal(kernelAtLine([], 3), undefined);
  });
});
