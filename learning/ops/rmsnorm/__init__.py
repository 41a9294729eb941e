"""Residual RMSNorm, FP32 semantics: h = x + residual; y = h*rsqrt(mean(h^2)+eps)*w.

Two row inputs and a weight read once; the sum ``h`` is never written, which is the point of
fusing it (lesson 11).
"""

from __future__ import annotations

from types import MappingProxyType

import torch
import torch.nn.functional as F

from learning.ops.spec import (
    FORWARD_TOLERANCES,
    ROW_CPU_SHAPES,
    ROW_SHAPES,
    ROWS,
    OpSpec,
    generator,
    itemsize,
    no_flops,
    randn,
)

RMSNORM_EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    source = generator(seed, device)
    rows, cols = shape
    x = randn(shape, dtype, source, device)
    residual = randn(shape, dtype, source, device)
    # A weight near 1 with visible spread, as in a trained model; never all ones.
    weight = (1.0 + 0.1 * torch.randn((cols,), generator=source, device=device)).to(dtype)
    return {"x": x, "residual": residual, "weight": weight, "eps": RMSNORM_EPS}


def oracle(x, residual, weight, eps):
    h = x + residual
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def rmsnorm_composition(x, residual, weight, eps):
    """Residual RMSNorm as a PyTorch user writes it: ~10 eager kernels, exact FP32 semantics."""
    h = x.float() + residual.float()
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (h * inv_rms * weight.float()).to(x.dtype)


def rmsnorm_torch_rms_norm(x, residual, weight, eps):
    """The same semantics through ``F.rms_norm`` on the FP32 sum."""
    h = x.float() + residual.float()
    return F.rms_norm(h, (h.shape[-1],), weight.float(), eps).to(x.dtype)


BASELINES = MappingProxyType(
    {"composition": rmsnorm_composition, "torch_rms_norm": rmsnorm_torch_rms_norm}
)


def logical_bytes(shape, dtype):  # read x and residual, write y, read the weight once
    rows, cols = shape
    return (3 * rows * cols + cols) * itemsize(dtype)


SPEC = OpSpec(
    name="rmsnorm", shape_names=ROWS, default_shapes=ROW_SHAPES, cpu_shapes=ROW_CPU_SHAPES,
    module="kernels.rmsnorm", function="rmsnorm", make_inputs=make_inputs, oracle=oracle,
    baselines=BASELINES, logical_bytes=logical_bytes, flops=no_flops,
    tolerances=FORWARD_TOLERANCES, exercise="rmsnorm",
)
