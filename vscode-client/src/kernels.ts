/**
 * Finds the kernels of a CUDA or Triton source, to know which one the cursor
 * is in. Pure. The server decides what it can optimize; this only names the
 * kernel for the commands.
 */

export interface KernelLocation {
  name: string;
  line: number; // 0-based line of the kernel's name
}

const CUDA_GLOBAL = /__global__\s+(?:[\w:<>,\s*&]+?\s+)?([A-Za-z_]\w*)\s*\(/g;
const TRITON_DECORATOR = /^\s*@triton\.(?:jit|autotune|heuristics)\b/;
const PY_DEF = /^\s*def\s+([A-Za-z_]\w*)\s*\(/;

function lineOf(text: string, offset: number): number {
  let n = 0;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

const LAUNCH_BOUNDS = /__launch_bounds__\s*\([^)]*\)/g;

export function findCudaKernels(text: string): KernelLocation[] {
  const out: KernelLocation[] = [];
  // Blank out __launch_bounds__(...) (same length, so offsets keep their lines).
  const plain = text.replace(LAUNCH_BOUNDS, (m) => m.replace(/[^\n]/g, ' '));
  for (const m of plain.matchAll(CUDA_GLOBAL)) {
    const nameOffset = (m.index ?? 0) + m[0].lastIndexOf(m[1]);
    out.push({ name: m[1], line: lineOf(text, nameOffset) });
  }
  return out;
}

export function findTritonKernels(text: string): KernelLocation[] {
  const lines = text.split(/\r?\n/);
  const out: KernelLocation[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!TRITON_DECORATOR.test(lines[i])) continue;
    for (let j = i + 1; j < lines.length; j++) {
      const d = PY_DEF.exec(lines[j]);
      if (d) {
        out.push({ name: d[1], line: j });
        i = j;
        break;
      }
      // A top-level statement other than a decorator, a comment or the end of
      // a multi-line decorator call means the decorator was not on a def.
      if (/^[^\s@#)\]]/.test(lines[j])) break;
    }
  }
  return out;
}

const KB_MODEL = /^class\s+(Model)\s*\(/m;

/** A KernelBench reference (class Model and get_inputs, as the server sees it): its one "kernel" is the model. */
export function findKernelBenchModel(text: string): KernelLocation[] {
  const m = KB_MODEL.exec(text);
  if (!m || !/^def\s+get_inputs\s*\(/m.test(text)) return [];
  return [{ name: 'Model', line: lineOf(text, m.index) }];
}

export function findKernels(text: string, languageId: string, fileName = ''): KernelLocation[] {
  if (languageId === 'cuda-cpp' || /\.cuh?$/.test(fileName)) return findCudaKernels(text);
  if (languageId === 'python' || fileName.endsWith('.py')) {
    const model = findKernelBenchModel(text);
    return model.length ? model : findTritonKernels(text);
  }
  return [];
}

/**
 * The kernel the cursor is in: the last one that starts at or above the line;
 * if the cursor is above every kernel, the first one. Undefined when none.
 */
export function kernelAtLine(kernels: readonly KernelLocation[], line: number): KernelLocation | undefined {
  if (kernels.length === 0) return undefined;
  const sorted = [...kernels].sort((a, b) => a.line - b.line);
  let found: KernelLocation | undefined;
  for (const k of sorted) if (k.line <= line) found = k;
  return found ?? sorted[0];
}
