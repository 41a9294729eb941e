"""Which global loads the weight gradient's rows kernel compiles to, for Hopper (no GPU needed)

    python lab/gemm-weight-grad/gemm_load_widths.py                    # 1023 x 1999 and 1024 x 2048
    python lab/gemm-weight-grad/gemm_load_widths.py --widths 1023x1999

``_matmul_rows_kernel`` (dB = A^T dC) has the weight's sizes M and N compiled in, and its tile
loads wrap their indices (``% M``, ``% N``) instead of masking them. This script compiles it
for sm_90 with Triton's own compiler, once with the operands' row strides known to be
multiples of 16 elements (rows copied to aligned buffers) and once without, and counts the
global-memory instructions in the PTX: 16-byte asynchronous copies (``cp.async``, pipelined
into shared memory) or 2-byte loads (``ld.global.b16``). It explains
``results/h200/gemm-weight-grad.log``: at 1023 x 1999 the aligned copies do not make the rows
kernel faster, because the compiler cannot prove any two neighbouring indices of a wrapped
odd-width tile contiguous, so every load stays 2 bytes wide whatever the stride.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile for the GPU, even on a machine without one
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]  # the course packages, the shared helpers

from _records import OneLineParser  # noqa: E402

# isort: split
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from reference.kernels import matmul as gemm  # noqa: E402

HOPPER = GPUTarget("cuda", 90, 32)
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}  # a 16-bit config
INSTRUCTION = re.compile(r"\b(ld\.global[\w.]*|cp\.async\.cg[\w.]*|cp\.async\.ca[\w.]*)")


def _jit(kernel) -> JITFunction:
    while not isinstance(kernel, JITFunction):  # under the autotuner and the heuristics
        kernel = kernel.fn
    return kernel


def load_instructions(m: int, n: int, aligned: bool) -> Counter:
    """The global-load instructions of the rows kernel for an ``m x n`` fp16 weight gradient,
    with A = a.T (column-major) and B = dC (row-major), as ``matmul_bwd`` passes them."""
    jit = _jit(gemm._matmul_rows_kernel)
    names = list(jit.arg_names)
    signature = {name: "i32" for name in names}
    signature.update({"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"})
    constants = {"M": m, "N": n, **TILE, "DOT_IN_FP32": False, "INPUT_PRECISION": "tf32",
                 "stride_am": 1, "stride_bn": 1, "stride_cn": 1}  # fmt: skip
    for name in constants:
        signature[name] = "constexpr"
    divisible = ["a_ptr", "b_ptr", "c_ptr"] + (["stride_ak", "stride_bk"] if aligned else [])
    source = ASTSource(
        fn=jit, signature=signature,
        constexprs={(names.index(k),): v for k, v in constants.items()},
        attrs={(names.index(k),): [["tt.divisibility", 16]] for k in divisible},
    )  # fmt: skip
    compiled = triton.compile(source, target=HOPPER, options={"num_warps": 8, "num_stages": 3})
    return Counter(INSTRUCTION.findall(compiled.asm["ptx"]))


def _widths(text: str) -> tuple[int, int]:
    try:
        m, n = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"width {text!r} is not MxN (for example 1023x1999)") from None
    if m < 1 or n < 1:
        raise ValueError(f"width {text!r} must be positive")
    return m, n


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_load_widths", description=__doc__.splitlines()[0])
    parser.add_argument("--widths", nargs="+", default=["1023x1999", "1024x2048"],
                        help="weight-gradient output sizes MxN (default: 1023x1999 1024x2048)")
    args = parser.parse_args(argv)
    try:
        cases = [_widths(text) for text in args.widths]
    except ValueError as error:
        parser.error(str(error))
    print(f"{'dB (M x N)':<12} {'row strides':<12} global loads in the PTX (sm_90)")
    for m, n in cases:
        for aligned in (False, True):
            counts = load_instructions(m, n, aligned)
            found = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
            print(f"{f'{m}x{n}':<12} {'aligned' if aligned else 'any':<12} {found or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
