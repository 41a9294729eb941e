"""The attention kernels compile for Hopper (sm_90), checked on a machine without a GPU.

Triton's interpreter runs a kernel as Python, so it accepts code the compiler refuses: a global
read inside a kernel must be a ``tl.constexpr(...)`` value, and an annotated one
(``LOG2E: tl.constexpr = 1.44``) runs interpreted and fails to compile. This test compiles
every launch of the forward and of the backward (both of its kernels) for sm_90, as Triton
would on the GPU, in a child process with the interpreter off, and reads the binary: tensor
core instructions (HGMMA) in every kernel, and no registers spilled to local memory. It uses
the tiles the GPU runs (``plan`` outside the interpreter), at head dimension 128, causal: the
configuration with the most registers a thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, re, sys, tempfile
from pathlib import Path

import torch

from learning import runtime

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

import reference.kernels.attention as attention

TARGET = GPUTarget("cuda", 90, 32)
BACKEND = make_backend(TARGET)
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
found = []


def compile_launch(kernel, *args, grid, warmup, **kwargs):
    binder = create_function_from_signature(kernel.signature, kernel.params, BACKEND)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(
        BACKEND, kwargs, bound, specialization, options)
    compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=TARGET,
                              options=options.__dict__)
    with tempfile.TemporaryDirectory() as folder:
        cubin = Path(folder) / "kernel.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        sass = __import__("subprocess").run([str(TOOLS / "nvdisasm"), str(cubin)],
                                            capture_output=True, text=True, check=True).stdout
    found.append({"kernel": kernel.__name__, "hgmma": len(re.findall(r"\bHGMMA", sass)),
                  "spills": len(re.findall(r"\b(?:STL|LDL)\b", sass))})


JITFunction.run = compile_launch
runtime.default_device = attention.default_device = lambda: "cpu"  # CPU tensors; nothing runs
q, k, v = (torch.randn(1, 2, 300, 128, dtype=torch.bfloat16) for _ in range(3))
attention.attention_fwd(q, k, v, True)
o, lse = torch.empty_like(q), torch.zeros(1, 2, 300)
attention.attention_bwd(torch.randn_like(q), q, k, v, o, lse, True)
print(json.dumps(found))
"""


def test_every_attention_kernel_compiles_for_hopper_with_tensor_cores_and_no_spills():
    env = {**os.environ, "TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    kernels = json.loads(done.stdout.strip().splitlines()[-1])
    assert [k["kernel"] for k in kernels] == [
        "_attention_fwd_kernel",
        "_attention_bwd_dq_kernel",
        "_attention_bwd_dkdv_kernel",
    ]
    for kernel in kernels:
        assert kernel["hgmma"] > 0, f"{kernel['kernel']}: no tensor-core instructions"
        assert kernel["spills"] == 0, f"{kernel['kernel']}: registers spill to local memory"
