"""What each attention kernel compiles to on Hopper (sm_90), read on any machine (no GPU needed)

    python scripts/attention_binary.py              # both head dimensions, fp16 and bf16
    python scripts/attention_binary.py --head-dim 128 --dtype bfloat16

For every launch the reference's ``attention_fwd`` and ``attention_bwd`` make (the forward,
the dq pass, the dk/dv pass), causal and not, this compiles the kernel for sm_90 as Triton
would on the GPU (``TRITON_INTERPRET=0``; the tiles are :func:`plan`'s GPU tiles) and prints
its tiles, warps and stages, the registers a thread (``cuobjdump -res-usage``), the shared
memory a program, the instructions that spill registers to local memory (``STL``/``LDL``) and
the tensor-core instructions (``HGMMA``). It answers before any GPU time is spent whether a
tile rule fits the register file and shared memory, and whether ``tl.dot`` became wgmma.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

DTYPES = ("float16", "bfloat16")
SPILLS = re.compile(r"\b(?:STL|LDL)\b")  # stores to and loads from local memory
TENSOR_CORES = re.compile(r"\bHGMMA")  # Hopper's warpgroup matrix multiply-accumulate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--head-dim", type=int, choices=(64, 128), action="append")
    parser.add_argument("--dtype", choices=DTYPES, action="append")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") != "0":  # compile, do not interpret
        env = {**os.environ, "TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": ""}
        return subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env).returncode

    import torch
    import triton
    from kernel_binary import cuobjdump
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    import reference.kernels.attention as attention
    from learning import runtime

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"

    def compile_launch(kernel, *call_args, grid, warmup, **kwargs):
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        bound, specialization, options = binder(*call_args, **kwargs)
        options, signature, constexprs, attrs = kernel._pack_args(
            backend, kwargs, bound, specialization, options)  # fmt: skip
        source = ASTSource(kernel, signature, constexprs, attrs)
        compiled = triton.compile(source, target=target, options=options.__dict__)
        with tempfile.TemporaryDirectory() as folder:
            cubin = Path(folder) / "kernel.cubin"
            cubin.write_bytes(compiled.asm["cubin"])
            sass = subprocess.run([str(nvdisasm), str(cubin)], capture_output=True, text=True,
                                  check=True).stdout  # fmt: skip
        registers = re.search(r"REG:(\d+)", cuobjdump(compiled.asm["cubin"], "-res-usage"))
        tiles = f"{kwargs['BLOCK_M']}x{kwargs['BLOCK_N']}"
        spills, hgmma = len(SPILLS.findall(sass)), len(TENSOR_CORES.findall(sass))
        print(f"  {kernel.__name__:28s} {tiles:>8s} {options.num_warps:>5d} "
              f"{options.num_stages:>6d} {registers.group(1):>9s} "
              f"{compiled.metadata.shared // 1024:>6d} KiB "
              f"{spills:>6d} {hgmma:>6d}")  # fmt: skip

    JITFunction.run = compile_launch
    runtime.default_device = attention.default_device = lambda: "cpu"  # nothing runs
    print(f"  {'kernel':28s} {'tiles':>8s} {'warps':>5s} {'stages':>6s} {'registers':>9s} "
          f"{'shared':>10s} {'spills':>6s} {'HGMMA':>6s}")  # fmt: skip
    for head_dim in args.head_dim or (64, 128):
        for name in args.dtype or DTYPES:
            dtype = getattr(torch, name)
            for causal in (False, True):
                print(f"D = {head_dim}, {name}, {'causal' if causal else 'full'}")
                q, k, v = (torch.randn(1, 2, 300, head_dim, dtype=dtype) for _ in "qkv")
                attention.attention_fwd(q, k, v, causal)
                o, lse = torch.empty_like(q), torch.zeros(1, 2, 300)
                attention.attention_bwd(torch.randn_like(q), q, k, v, o, lse, causal)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
