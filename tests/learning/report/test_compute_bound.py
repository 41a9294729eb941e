"""Is a case read in TFLOP/s exactly when it does many FLOPs a logical byte, whatever its op is
called? The registry's own counts decide, so a new compute-bound op needs no name added."""

from __future__ import annotations

import pytest
import torch

from learning import ops
from learning.report import compute_bound


def _case(op: str, shape: tuple[int, ...], dtype=torch.float16) -> dict:
    spec = ops.get(op)
    return {"op": op, "flops": spec.flops(shape), "logical_bytes": spec.logical_bytes(shape, dtype)}


@pytest.mark.parametrize(("op", "shape", "expected"), [
    ("attention", (4, 32, 4096, 128), True),
    ("attention_causal", (8, 16, 2048, 64), True),
    ("matmul", (1024, 1024, 1024), True),
    ("matmul", (16384, 1024, 1024), True),
    ("matmul", (16, 16, 16), False),  # a tiny GEMM is bound by its bytes and launch, not FLOPs
    ("softmax", (16384, 4096), False),
    ("rmsnorm_train", (16384, 4096), False),
    ("add", (16384, 4096), False),
])  # fmt: skip
def test_the_registry_counts_decide_the_unit(op, shape, expected):
    assert compute_bound(_case(op, shape)) is expected


def test_a_case_without_counts_is_read_in_bytes():
    assert compute_bound({"op": "matmul"}) is False
    assert compute_bound({"op": "matmul", "flops": 10**12, "logical_bytes": 0}) is False
