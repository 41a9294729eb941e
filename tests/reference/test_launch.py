"""Does the fast launcher file binaries under exactly what Triton specializes on?

On the CPU the interpreter runs every kernel through Triton's own path, so these tests check
the key and the pass-through; the GPU test proves on real binaries that a filed kernel is the
one Triton's path would have picked, for every mix of alignments the row wrappers can see.
"""

from __future__ import annotations

import pytest
import torch

import learning  # noqa: F401  (selects the Triton backend before triton is imported)

# isort: split
import triton.language as tl
from triton.runtime.jit import JITFunction

from learning.runtime import interpreting
from reference.kernels import softmax as softmax_module
from reference.kernels.launch import FastLauncher, argument_key


def test_the_key_separates_what_triton_specializes_on():
    base = torch.zeros(64, dtype=torch.float16)
    aligned, offset = base[:32], base[1:33]  # 2-byte offset: not 16-byte aligned
    assert argument_key(aligned, True) == (torch.float16, True)
    assert argument_key(offset, True) == (torch.float16, False)
    assert argument_key(aligned.float(), True)[0] == torch.float32
    assert argument_key(1, True) != argument_key(3, True)  # 1 is compiled as a constant
    assert argument_key(32, True) != argument_key(33, True)  # multiple of 16 or not
    assert argument_key(2**31, True)[0] == "i64" and argument_key(2**31 - 1, True)[0] == "i32"
    assert argument_key(2**63, True)[0] == "u64"
    # an argument in do_not_specialize: only its integer type matters
    assert argument_key(1, False) == argument_key(33, False) == ("i32",)
    with pytest.raises(TypeError, match="no key"):
        argument_key("text", True)


def _kernel(x_ptr, n, stride, N: tl.constexpr, BLOCK: tl.constexpr):
    pass


def _late_constexpr(x_ptr, N: tl.constexpr, n):
    pass


def test_the_launcher_reads_the_signature():
    """Which arguments are specialized, and constexprs must follow the runtime arguments."""
    launcher = FastLauncher(JITFunction(_kernel, do_not_specialize=["n"]))
    assert launcher.specialized == (True, False, True)
    assert launcher.constexpr_names == ("N", "BLOCK")
    with pytest.raises(ValueError, match="constexpr arguments must come last"):
        FastLauncher(JITFunction(_late_constexpr))


@pytest.mark.skipif(not interpreting(), reason="the interpreter's pass-through")
def test_interpreted_kernels_take_tritons_path():
    assert softmax_module._launch_fwd.interpreted
    x = torch.randn(5, 33)
    torch.testing.assert_close(softmax_module.softmax_fwd(x), torch.softmax(x, dim=1))
    assert softmax_module._launch_fwd.compiled == {}  # nothing filed


@pytest.mark.skipif(interpreting() or not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_filed_binaries_are_the_ones_triton_picks():
    """Every alignment mix: the fast path's output and binary equal Triton's own launch."""
    from reference.kernels.row_plan import choose_row_plan

    kernel = softmax_module._softmax_fwd_kernel
    launcher = FastLauncher(kernel)
    storage = torch.randn(64 * 1100, device="cuda", dtype=torch.float16)
    for offset in (0, 1, 8):  # elements: 16-byte aligned, 2 bytes off, 16 bytes off
        for n_rows, n_cols, stride in ((64, 1024, 1024), (33, 781, 781), (17, 781, 800)):
            x = storage[offset : offset + n_rows * stride].view(n_rows, stride)[:, :n_cols]
            plan = choose_row_plan(n_rows, n_cols, 2, passes=2)
            y = torch.empty(n_rows, n_cols, device="cuda", dtype=torch.float16)
            args = (x, y, n_rows, x.stride(0), y.stride(0))
            constexprs = {"N": n_cols, "BLOCK": plan.block_cols, "ROWS": plan.rows_per_program}
            options = {"num_warps": plan.num_warps, "num_stages": plan.num_stages}
            first = launcher(plan.grid(n_rows), args, constexprs, **options)  # files it
            y.fill_(float("nan"))
            again = launcher(plan.grid(n_rows), args, constexprs, **options)  # fast path
            torch.cuda.synchronize()
            tritons = kernel[plan.grid(n_rows)](*args, **constexprs, **options)
            assert again is first and first.hash == tritons.hash, (offset, n_rows, n_cols)
            torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).half())
