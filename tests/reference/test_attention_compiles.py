"""The attention kernels compile for Hopper (sm_90), checked on a machine without a GPU.

Triton's interpreter runs a kernel as Python, so it accepts code the compiler refuses: a global
read inside a kernel must be a ``tl.constexpr(...)`` value, and an annotated one
(``LOG2E: tl.constexpr = 1.44``) runs interpreted and fails to compile. This test has
``scripts/attention_binary.py`` compile every launch of the forward and of the backward (both
of its kernels), full and causal, for sm_90 with the tiles the GPU runs, at head dimension 128
in bf16 (the most registers a thread), and reads its table: tensor-core instructions (HGMMA)
in every kernel, and no registers spilled to local memory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ("_attention_fwd_kernel", "_attention_bwd_dq_kernel", "_attention_bwd_dkdv_kernel")


def test_every_attention_kernel_compiles_for_hopper_with_tensor_cores_and_no_spills():
    command = [sys.executable, str(ROOT / "scripts" / "attention_binary.py"), "--head-dim",
               "128", "--dtype", "bfloat16"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("_")]
    assert [row[0] for row in rows] == [*KERNELS, *KERNELS]  # full, then causal
    for name, *_, spills, hgmma in rows:
        assert int(hgmma) > 0, f"{name}: no tensor-core instructions"
        assert int(spills) == 0, f"{name}: registers spill to local memory"


def test_a_head_dimension_without_tile_rules_is_refused_in_one_line():
    command = [sys.executable, str(ROOT / "scripts" / "attention_binary.py"), "--head-dim", "96"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "invalid choice: 96" in done.stderr
