import { strict as assert } from 'assert';
import { isKernelDocument } from '../../src/activation';
import { linkSearchTree } from '../../src/hoverLinks';
import { ProgressSteps } from '../../src/progressSteps';

describe('which documents start the server', () => {
  it('CUDA files, Triton kernels and KernelBench models, not other Python', () => {
    assert.equal(isKernelDocument('cuda-cpp', '/w/k.cu', ''), true);
    assert.equal(isKernelDocument('plaintext', '/w/k.cuh', ''), true);
    assert.equal(isKernelDocument('python', '/w/k.py', 'import triton\n\n@triton.jit\ndef k(x):\n    pass\n'), true);
    assert.equal(isKernelDocument('python', '/w/m.py', 'class Model(nn.Module):\n    pass\n\ndef get_inputs():\n    return []\n'), true);
    assert.equal(isKernelDocument('python', '/w/app.py', 'import flask\n\nclass Model:\n    pass\n'), false);
    assert.equal(isKernelDocument('python', '/w/app.py', '# see @triton.jit in the docs\nx = 1\n'), false);
    assert.equal(isKernelDocument('markdown', '/w/README.md', '@triton.jit'), false);
  });
});

describe('hover links', () => {
  it('turns "n more: open the search tree" into a link to the tree view', () => {
    assert.equal(linkSearchTree('x\n\n16 more: open the search tree.'), 'x\n\n16 more: [open the search tree](command:stark.ui.showTree).');
    assert.equal(linkSearchTree('no more rows'), 'no more rows');
  });
});

describe('progress steps', () => {
  it('turns percentages into increments, never backwards', () => {
    const s = new ProgressSteps();
    assert.deepEqual(s.next({ kind: 'begin', message: 'starting', percentage: 0 }), { message: 'starting' });
    assert.deepEqual(s.next({ kind: 'report', message: 'a', percentage: 10 }), { message: 'a', increment: 10 });
    assert.deepEqual(s.next({ kind: 'report', message: 'b', percentage: 35 }), { message: 'b', increment: 25 });
    assert.deepEqual(s.next({ kind: 'report', message: 'c', percentage: 30 }), { message: 'c' });
  });
});
