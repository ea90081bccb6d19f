"""The tunables finder and rewriter of the built-in team (pure text)."""

import pytest

from stark_lsp.agents.builtin.cexpr import eval_int
from stark_lsp.agents.builtin.tunable import format_value, parse_value
from stark_lsp.agents.builtin.tunables import find_tunables, set_value

CUDA = """\
// stark-nvcc-flags: -O3 -maxrregcount=64
#define N 4096
#define BLOCK_X 8
#define BLOCK_Y 2
constexpr int THREADS = 32;
const int TILE = 16;
__global__ void __launch_bounds__(1024) k(float* x) {
    __shared__ float s[THREADS];
    #pragma unroll 2
    for (int i = 0; i < 4; ++i) {}
}
extern "C" void launch(float* x, int n) {
    dim3 block(BLOCK_X, BLOCK_Y);
    dim3 grid((n + block.x - 1) / block.x, 1);
    k<<<grid, block>>>(x);
    k<<<(n + THREADS - 1) / THREADS, THREADS>>>(x);
    k<<<n / 64, 64>>>(x);
    k<<<n, 128>>>(x);
    dim3 b2(16, 16);
    k<<<grid, b2>>>(x);
    dim3 b3(4, 4);
    dim3 g3((n + 3) / 4, 1);
    k<<<g3, b3>>>(x);
}
"""

TRITON = """\
import triton
BLOCK_SIZE = 32
@triton.jit
def k(x, n, BLOCK: tl.constexpr = 64):
    pass
def entry(x):
    n = x.numel()
    k[(triton.cdiv(n, 32),)](x, n, BLOCK=32, num_warps=1)
    k[(triton.cdiv(n, BLOCK_SIZE),)](x, n, BLOCK=BLOCK_SIZE, num_warps=1, num_stages=2)
    k[(n,)](x, n,
        BLOCK_M=128, GROUP_SIZE=8)  # num_warps=8 in a comment
configs = [triton.Config({'BLOCK_N': 64}, num_warps=4)]
N_ROWS = 4096
"""


def by_name(ts, name):
    return [t for t in ts if t.name == name]


def test_cuda_named_constants_and_their_constraints():
    ts = find_tunables(CUDA, "cuda")
    assert not by_name(ts, "N")  # a problem size is never a knob
    [bx] = by_name(ts, "BLOCK_X")
    assert (bx.kind, bx.line, bx.value, bx.role) == ("define", 3, 8, "threads")
    assert bx.candidates == (16, 32, 64, 128, 256, 512)  # x * 2 in 32..1024
    [by] = by_name(ts, "BLOCK_Y")
    assert by.candidates == (4, 8, 16, 32, 64, 128)
    [th] = by_name(ts, "THREADS")
    assert (th.kind, th.value, th.candidates) == ("const", 32, (64, 128, 256, 512, 1024))
    [tile] = by_name(ts, "TILE")
    assert tile.role == "factor" and 64 in tile.candidates and 16 not in tile.candidates
    assert bx.threads(128) == 256


def test_cuda_literals_pragmas_bounds_and_flags():
    ts = find_tunables(CUDA, "cuda")
    launches = [t for t in ts if t.kind == "launch_block"]
    assert [(t.line, t.value) for t in launches] == [(18, 128)]  # 64 sizes its grid: left alone
    [d] = [t for t in ts if t.kind == "dim3"]  # b3's 4 sizes its grid: left alone
    assert (d.name, d.value) == ("dim3 b2", (16, 16))
    assert all(32 <= x * y <= 1024 and (x * y) % 32 == 0 for x, y in d.candidates)
    [u] = by_name(ts, "#pragma unroll")
    assert (u.line, u.value) == (9, 2)
    [lb] = by_name(ts, "__launch_bounds__")
    assert lb.value == 1024 and min(lb.candidates) >= 256  # not under the 16x16 block
    flags = {t.name: t.value for t in ts if t.kind == "nvcc_flag"}
    assert flags == {"nvcc --use_fast_math": False, "nvcc -maxrregcount": 64, "nvcc -O3": True}


def test_triton_tunables():
    ts = find_tunables(TRITON, "python")
    got = [(t.name, t.line, t.value, t.note) for t in ts if t.kind == "block_const"]
    assert got == [
        ("BLOCK_SIZE", 2, 32, "assignment"),
        ("BLOCK", 4, 64, "default"),
        ("BLOCK_M", 11, 128, "launch keyword"),
        ("GROUP_SIZE", 11, 8, "launch keyword"),
        ("BLOCK_N", 12, 64, "config"),
    ]  # BLOCK=32 on line 8 is coupled to its grid; N_ROWS is not block-like
    warps = [(t.line, t.value) for t in ts if t.kind == "num_warps"]
    assert warps == [(8, 1), (9, 1), (12, 4)]  # not the one in a comment
    [st] = [t for t in ts if t.kind == "num_stages"]
    assert st.candidates == (1, 3, 4, 5, 6)
    assert by_name(ts, "num_warps")[0].candidates == (2, 4, 8, 16)
    assert all(v & (v - 1) == 0 for t in ts if t.kind == "block_const" for v in t.candidates)
    assert max(by_name(ts, "GROUP_SIZE")[0].candidates) <= 64


@pytest.mark.parametrize("name, value, expect", [
    ("BLOCK_X", 128, "#define BLOCK_X 128"),
    ("THREADS", 256, "constexpr int THREADS = 256;"),
    ("dim3 b2", (32, 8), "    dim3 b2(32, 8);"),
    ("#pragma unroll", 8, "    #pragma unroll 8"),
    ("nvcc --use_fast_math", True, "// stark-nvcc-flags: -O3 -maxrregcount=64 --use_fast_math"),
    ("nvcc -maxrregcount", None, "// stark-nvcc-flags: -O3"),
    ("nvcc -O3", False, "// stark-nvcc-flags: -maxrregcount=64"),
])
def test_set_value_rewrites_one_site(name, value, expect):
    [t] = by_name(find_tunables(CUDA, "cuda"), name)
    new = set_value(CUDA, t, value)
    assert new.splitlines()[t.line - 1] == expect
    diff = [i for i, (a, b) in enumerate(zip(CUDA.splitlines(), new.splitlines())) if a != b]
    assert diff == [t.line - 1]


def test_set_value_adds_a_flags_line_when_missing():
    src = "#define THREADS 32\n__global__ void k() {}\n"
    [fast] = by_name(find_tunables(src, "cuda"), "nvcc --use_fast_math")
    assert fast.site is None
    assert set_value(src, fast, True) == "// stark-nvcc-flags: --use_fast_math\n" + src


def test_fragment_mode_sees_dim3_without_its_launch():
    assert not [t for t in find_tunables("    dim3 block(8, 2);\n", "cuda") if t.kind == "dim3"]
    [d] = [t for t in find_tunables("    dim3 block(8, 2);\n", "cuda", fragment=True) if t.kind == "dim3"]
    assert d.value == (8, 2)


def test_values_round_trip_as_words():
    for v in (256, (32, 8), True, False, None):
        assert parse_value(format_value(v)) == v
    with pytest.raises(ValueError):
        parse_value("lots")


def test_eval_int():
    assert eval_int("BX * BY", {"BX": 8, "BY": 2}) == 16
    assert eval_int("(n + 255) / 256", {"n": 1000}) == 4
    assert eval_int("256u", {}) == 256
    assert eval_int("blockDim.x", {}) is None
    assert eval_int("(int)x", {"x": 1}) is None


def test_the_team_reads_the_nvcc_flags_lines_as_the_builder_does():
    """Every ``stark-nvcc-flags`` line counts, split as a shell would: the builder and the built-in team
    (issue 26: each had its own reading, and two lines or a quoted flag set them apart)."""
    from stark_lsp.agents.builtin.tunables_cuda import find_cuda_tunables
    from stark_lsp.evaluate.cuda_build import requested_nvcc_flags

    src = ("// stark-nvcc-flags: -O3\n// stark-nvcc-flags: '--use_fast_math' -maxrregcount=64\n"
           "__global__ void k(float* x) { x[0] = 1.0f; }\n")
    assert requested_nvcc_flags(src) == ["-O3", "--use_fast_math", "-maxrregcount=64"]
    values = {t.name: t.value for t in find_cuda_tunables(src) if t.kind == "nvcc_flag"}
    assert values == {"nvcc --use_fast_math": True, "nvcc -maxrregcount": 64, "nvcc -O3": True}
    flag_sites = {t.site.line for t in find_cuda_tunables(src) if t.kind == "nvcc_flag"}
    assert flag_sites == {1}  # a change is written on the first line
