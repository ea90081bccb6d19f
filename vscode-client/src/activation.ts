/**
 * Which documents need the STARK server: CUDA files, and Python files with a
 * Triton kernel or a KernelBench `Model` (with `get_inputs`). The extension
 * activates for Python files too, but starts the server only when one of
 * these is open, so plain Python projects never run it. Pure.
 */
const TRITON = /^[ \t]*@triton\.(?:jit|autotune|heuristics)\b/m;
const KB_MODEL = /^class\s+Model\s*\(/m;
const KB_INPUTS = /^def\s+get_inputs\s*\(/m;

export function isKernelDocument(languageId: string, fileName: string, text: string): boolean {
  if (languageId === 'cuda-cpp' || languageId === 'cuda' || /\.cuh?$/i.test(fileName)) return true;
  if (languageId !== 'python' && !fileName.endsWith('.py')) return false;
  return TRITON.test(text) || (KB_MODEL.test(text) && KB_INPUTS.test(text));
}
