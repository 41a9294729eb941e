"""The op registry: the one table the checker, the benchmark, the tests and the lessons read.

Each operation is one frozen :class:`OpSpec`. Nothing else in the repository lists the ops:
loop over :data:`OPS` (or :func:`group`) instead. The spec says what the operation is (its
float64 oracle), how to make inputs, which PyTorch baselines it is compared with, how many
bytes and FLOPs it logically moves and does, which shapes and dtypes it is measured at, how
close to the oracle each dtype must come, and where its implementation lives
(``kernels.softmax`` resolved under ``reference/`` or ``exercises/``).

Training ops (``softmax_train`` ...) reuse their forward op's implementation and baselines: one
call is a forward and a backward pass through autograd, and the outputs compared with the
oracle are the gradients.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

import torch
import torch.nn.functional as F

Shape = tuple[int, ...]
Inputs = dict[str, Any]

DTYPES: Mapping[str, torch.dtype] = MappingProxyType(
    {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
)
RMSNORM_EPS = 1e-6


@dataclass(frozen=True)
class Tolerance:
    """How far an output may sit from the float64 oracle, element by element.

    ``|out - ref| <= atol * scale + rtol * |ref|`` where ``scale`` is the largest ``|ref|``
    of that output, so ``atol`` is relative to the output's magnitude: an all-zeros or an
    input-echo output can never pass, whatever the data's size.
    """

    atol: float
    rtol: float


# Output rounding alone costs 2^-11 (fp16), 2^-8 (bf16), 2^-24 (fp32) of a value; the bounds
# leave room for accumulation in fp32 and for Triton's approximate exp/rsqrt, and no more.
FORWARD_TOLERANCES: Mapping[torch.dtype, Tolerance] = MappingProxyType(
    {
        torch.float16: Tolerance(atol=1e-3, rtol=4e-3),
        torch.bfloat16: Tolerance(atol=8e-3, rtol=1.6e-2),
        torch.float32: Tolerance(atol=1e-5, rtol=1e-4),
    }
)
# Gradients go through two rounded passes (the saved activation, then the gradient).
GRADIENT_TOLERANCES: Mapping[torch.dtype, Tolerance] = MappingProxyType(
    {
        torch.float16: Tolerance(atol=2e-3, rtol=8e-3),
        torch.bfloat16: Tolerance(atol=1.6e-2, rtol=3.2e-2),
        torch.float32: Tolerance(atol=2e-5, rtol=2e-4),
    }
)


# --------------------------------------------------------------------------- inputs


def _generator(seed: int, device: str | torch.device) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def _randn(shape: Shape, dtype: torch.dtype, generator: torch.Generator, device) -> torch.Tensor:
    # Drawn in float32 and rounded once, so every dtype sees the same distribution.
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)


def _row_inputs(shape: Shape, dtype: torch.dtype, seed: int, device) -> Inputs:
    generator = _generator(seed, device)
    return {"x": _randn(shape, dtype, generator, device)}


def _add_inputs(shape: Shape, dtype: torch.dtype, seed: int, device) -> Inputs:
    generator = _generator(seed, device)
    x = _randn(shape, dtype, generator, device)
    return {"x": x, "y": _randn(shape, dtype, generator, device)}


def _rmsnorm_inputs(shape: Shape, dtype: torch.dtype, seed: int, device) -> Inputs:
    generator = _generator(seed, device)
    rows, cols = shape
    x = _randn(shape, dtype, generator, device)
    residual = _randn(shape, dtype, generator, device)
    # A weight near 1 with visible spread, as in a trained model; never all ones.
    weight = (1.0 + 0.1 * torch.randn((cols,), generator=generator, device=device)).to(dtype)
    return {"x": x, "residual": residual, "weight": weight, "eps": RMSNORM_EPS}


def _matmul_inputs(shape: Shape, dtype: torch.dtype, seed: int, device) -> Inputs:
    generator = _generator(seed, device)
    m, n, k = shape
    # B is scaled by 1/sqrt(K) so outputs stay near unit size at every K (fp16 range is small).
    a = _randn((m, k), dtype, generator, device)
    b = (torch.randn((k, n), generator=generator, device=device) / math.sqrt(k)).to(dtype)
    return {"a": a, "b": b}


# --------------------------------------------------------------------------- oracles (float64)
# Written with differentiable torch ops so the training oracles are float64 autograd of these.


def _oracle_add(x, y):
    return x + y


def _oracle_sum(x):
    return x.sum(dim=-1)


def _oracle_max(x):
    return x.amax(dim=-1)


def _oracle_softmax(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    exp = shifted.exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def _oracle_rmsnorm(x, residual, weight, eps):
    h = x + residual
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def _oracle_matmul(a, b):
    return a @ b


# --------------------------------------------------------------------------- PyTorch baselines


def rmsnorm_composition(x, residual, weight, eps):
    """Residual RMSNorm as a PyTorch user writes it: ~10 eager kernels, exact FP32 semantics."""
    h = x.float() + residual.float()
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (h * inv_rms * weight.float()).to(x.dtype)


def rmsnorm_torch_rms_norm(x, residual, weight, eps):
    """The same semantics through ``F.rms_norm`` on the FP32 sum."""
    h = x.float() + residual.float()
    return F.rms_norm(h, (h.shape[-1],), weight.float(), eps).to(x.dtype)


def numerics_policy() -> None:
    """The course's matmul numerics for every baseline: no TF32, no reduced-precision reduction.

    Called once by the checker and the benchmark before anything runs, and recorded in reports.
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


# --------------------------------------------------------------------------- bytes and FLOPs


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _bytes_add(shape, dtype):  # read x, read y, write out
    return 3 * math.prod(shape) * _itemsize(dtype)


def _bytes_row_reduction(shape, dtype):  # read M*N, write M
    rows, cols = shape
    return (rows * cols + rows) * _itemsize(dtype)


def _bytes_softmax(shape, dtype):  # read M*N, write M*N
    return 2 * math.prod(shape) * _itemsize(dtype)


def _bytes_rmsnorm(shape, dtype):  # read x and residual, write y, read the weight once
    rows, cols = shape
    return (3 * rows * cols + cols) * _itemsize(dtype)


def _bytes_matmul(shape, dtype):  # read A and B once, write C once
    m, n, k = shape
    return (m * k + k * n + m * n) * _itemsize(dtype)


def _flops_none(shape):
    return 0


def _flops_elementwise(shape):
    return math.prod(shape)


def _flops_matmul(shape):
    m, n, k = shape
    return 2 * m * n * k


def _bytes_softmax_train(shape, dtype):  # fwd: read x, write y; bwd: read y, read dy, write dx
    return 5 * math.prod(shape) * _itemsize(dtype)


def _bytes_rmsnorm_train(shape, dtype):
    # fwd: read x, residual, write y; bwd: read x, residual (recompute h), dy, write dx
    # weight-sized: read w (fwd), read w (bwd), write dw
    rows, cols = shape
    return (7 * rows * cols + 3 * cols) * _itemsize(dtype)


def _bytes_matmul_train(shape, dtype):  # three GEMMs, each moving the forward's matrices
    return 3 * _bytes_matmul(shape, dtype)


def _flops_matmul_train(shape):
    m, n, k = shape
    return 6 * m * n * k


# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class OpSpec:
    """One operation, as every tool in the course sees it."""

    name: str
    summary: str
    shape_names: tuple[str, ...]
    default_shapes: tuple[Shape, ...]
    cpu_shapes: tuple[Shape, ...]  # small shapes for the interpreter (checker, CPU benchmark)
    module: str  # resolved under reference/ or exercises/, e.g. "kernels.softmax"
    function: str  # the public function in that module
    make_inputs: Callable[[Shape, torch.dtype, int, Any], Inputs]
    oracle: Callable[..., torch.Tensor]  # float64, differentiable
    baselines: Mapping[str, Callable[..., torch.Tensor]]  # name -> same signature as function
    logical_bytes: Callable[[Shape, torch.dtype], int]
    flops: Callable[[Shape], int]
    tolerances: Mapping[torch.dtype, Tolerance]
    exercise: str  # the checker exercise that grades this op's kernel
    group: str  # "all" (forward) or "training"
    wrt: tuple[str, ...] = ()  # training ops: the inputs whose gradients are checked
    dtypes: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32)
    reduces_rows: bool = False  # output is one value per row (sum, max)

    # -- shapes -----------------------------------------------------------------------------

    @property
    def training(self) -> bool:
        return bool(self.wrt)

    @property
    def is_gemm(self) -> bool:
        return self.shape_names == ("M", "N", "K")

    def validate_shape(self, shape: Any) -> Shape:
        """Return ``shape`` as a tuple of positive ints, or raise ValueError in one line."""
        convention = "x".join(self.shape_names)
        try:
            dims = tuple(shape)
        except TypeError:
            raise ValueError(f"{self.name} takes a shape {convention}, got {shape!r}") from None
        if len(dims) != len(self.shape_names):
            raise ValueError(
                f"{self.name} takes {len(self.shape_names)} dimensions ({convention}), "
                f"got {len(dims)}: {' '.join(map(str, dims))}"
            )
        for name, dim in zip(self.shape_names, dims, strict=True):
            if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
                raise ValueError(f"{self.name}: {name} must be a positive integer, got {dim!r}")
        return dims

    def shape_label(self, shape: Shape) -> str:
        return "x".join(str(d) for d in shape)

    # -- running ----------------------------------------------------------------------------

    def inputs(self, shape: Shape, dtype: torch.dtype, seed: int, device="cpu") -> Inputs:
        """Fresh inputs; training ops add ``grad_output`` and mark ``wrt`` as requiring grad."""
        inputs = self.make_inputs(self.validate_shape(shape), dtype, seed, device)
        if self.training:
            for name in self.wrt:
                inputs[name].requires_grad_(True)
            out_shape = self.output_shape(shape)
            generator = _generator(seed + 1, device)
            inputs["grad_output"] = _randn(out_shape, dtype, generator, device)
        return inputs

    def output_shape(self, shape: Shape) -> Shape:
        """The forward output's shape: (M, N) for GEMM, (M,) for a row reduction."""
        if self.is_gemm:
            m, n, _ = shape
            return (m, n)
        return (shape[0],) if self.reduces_rows else tuple(shape)

    def call(self, fn: Callable[..., torch.Tensor], inputs: Inputs) -> tuple[torch.Tensor, ...]:
        """One invocation as the benchmark times it: the outputs (forward) or the gradients."""
        if not self.training:
            return (fn(**inputs),)
        arguments = {k: v for k, v in inputs.items() if k != "grad_output"}
        out = fn(**arguments)
        return torch.autograd.grad(out, [inputs[n] for n in self.wrt], inputs["grad_output"])

    def expected(self, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        """The float64 oracle's outputs (or gradients) for these inputs."""
        as64 = {
            k: (v.detach().double().requires_grad_(k in self.wrt) if torch.is_tensor(v) else v)
            for k, v in inputs.items()
        }
        return tuple(t.detach() for t in self.call(self.oracle, as64))

    def implementation(self, impl: str = "reference") -> ModuleType:
        """Import this op's module from an implementation package.

        ``impl`` is ``reference`` or ``exercises`` in the course; the checker's tests also pass
        the name of a throwaway package that holds a deliberately wrong kernel.
        """
        if not impl.isidentifier():
            raise ValueError(f"implementation must be a package name, got {impl!r}")
        return importlib.import_module(f"{impl}.{self.module}")

    def kernel_function(self, impl: str = "reference") -> Callable[..., torch.Tensor]:
        return getattr(self.implementation(impl), self.function)


_ROW_SHAPES: tuple[Shape, ...] = (
    (1024, 1024),  # L2-resident: 2-8 MiB
    (16384, 4096),  # larger than the 60 MiB L2 even in fp16 (128 MiB in)
    (65536, 128),  # narrow rows: many tiny programs, the unfavourable case
    (4096, 32768),  # wide rows: a row no longer fits one block's registers
    (1823, 781),  # irregular: neither dimension a power of two
)
_ROW_CPU_SHAPES: tuple[Shape, ...] = ((16, 256), (37, 781), (5, 3000))
_GEMM_SHAPES: tuple[Shape, ...] = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 1024, 1024),  # tall and skinny: few output tiles per row of A
    (3000, 1999, 1023),  # irregular: every dimension needs a mask
)
_GEMM_CPU_SHAPES: tuple[Shape, ...] = ((64, 64, 64), (75, 93, 61))
_TRAIN_ROW_SHAPES: tuple[Shape, ...] = ((1024, 1024), (16384, 4096), (4096, 32768), (1823, 781))
_TRAIN_GEMM_SHAPES: tuple[Shape, ...] = (
    (4096, 4096, 4096),
    (16384, 1024, 1024),
    (3000, 1999, 1023),
)

_ROWS = ("M", "N")
_GEMM = ("M", "N", "K")

_SOFTMAX_BASELINES = MappingProxyType({"torch": lambda x: torch.softmax(x, dim=-1)})
_RMSNORM_BASELINES = MappingProxyType(
    {"composition": rmsnorm_composition, "torch_rms_norm": rmsnorm_torch_rms_norm}
)
_MATMUL_BASELINES = MappingProxyType({"torch": lambda a, b: torch.mm(a, b)})


def _specs() -> dict[str, OpSpec]:
    forward = dict(group="all", tolerances=FORWARD_TOLERANCES)
    row = dict(shape_names=_ROWS, default_shapes=_ROW_SHAPES, cpu_shapes=_ROW_CPU_SHAPES)
    gemm = dict(shape_names=_GEMM, default_shapes=_GEMM_SHAPES, cpu_shapes=_GEMM_CPU_SHAPES)
    specs = [
        OpSpec(
            name="add", summary="elementwise x + y", **row, **forward,
            module="kernels.add", function="add", make_inputs=_add_inputs, oracle=_oracle_add,
            baselines=MappingProxyType({"torch": lambda x, y: torch.add(x, y)}),
            logical_bytes=_bytes_add, flops=_flops_elementwise, exercise="add",
        ),
        OpSpec(
            name="sum", summary="sum over the last dimension", **row, **forward,
            module="kernels.reductions", function="row_sum", make_inputs=_row_inputs,
            oracle=_oracle_sum, baselines=MappingProxyType({"torch": lambda x: x.sum(dim=-1)}),
            logical_bytes=_bytes_row_reduction, flops=_flops_elementwise, exercise="reductions",
            reduces_rows=True,
        ),
        OpSpec(
            name="max", summary="maximum over the last dimension", **row, **forward,
            module="kernels.reductions", function="row_max", make_inputs=_row_inputs,
            oracle=_oracle_max, baselines=MappingProxyType({"torch": lambda x: x.amax(dim=-1)}),
            logical_bytes=_bytes_row_reduction, flops=_flops_elementwise, exercise="reductions",
            reduces_rows=True,
        ),
        OpSpec(
            name="softmax", summary="softmax over the last dimension", **row, **forward,
            module="kernels.softmax", function="softmax", make_inputs=_row_inputs,
            oracle=_oracle_softmax, baselines=_SOFTMAX_BASELINES,
            logical_bytes=_bytes_softmax, flops=_flops_none, exercise="softmax",
        ),
        OpSpec(
            name="rmsnorm",
            summary="residual RMSNorm, FP32 semantics: "
            "h = x + residual; y = h*rsqrt(mean(h^2)+eps)*w",
            **row, **forward,
            module="kernels.rmsnorm", function="rmsnorm", make_inputs=_rmsnorm_inputs,
            oracle=_oracle_rmsnorm, baselines=_RMSNORM_BASELINES,
            logical_bytes=_bytes_rmsnorm, flops=_flops_none, exercise="rmsnorm",
        ),
        OpSpec(
            name="matmul", summary="C = A @ B (A is MxK, B is KxN)", **gemm, **forward,
            module="kernels.matmul", function="matmul", make_inputs=_matmul_inputs,
            oracle=_oracle_matmul, baselines=_MATMUL_BASELINES,
            logical_bytes=_bytes_matmul, flops=_flops_matmul, exercise="matmul",
        ),
        OpSpec(
            name="softmax_train", summary="softmax forward + backward (dx from y and dy)",
            shape_names=_ROWS, default_shapes=_TRAIN_ROW_SHAPES, cpu_shapes=_ROW_CPU_SHAPES,
            group="training", tolerances=GRADIENT_TOLERANCES, wrt=("x",),
            module="kernels.softmax", function="softmax", make_inputs=_row_inputs,
            oracle=_oracle_softmax, baselines=_SOFTMAX_BASELINES,
            logical_bytes=_bytes_softmax_train, flops=_flops_none, exercise="softmax_train",
        ),
        OpSpec(
            name="rmsnorm_train",
            summary="residual RMSNorm forward + backward (dx = dresidual, dweight)",
            shape_names=_ROWS, default_shapes=_TRAIN_ROW_SHAPES, cpu_shapes=_ROW_CPU_SHAPES,
            group="training", tolerances=GRADIENT_TOLERANCES, wrt=("x", "residual", "weight"),
            module="kernels.rmsnorm", function="rmsnorm", make_inputs=_rmsnorm_inputs,
            oracle=_oracle_rmsnorm, baselines=_RMSNORM_BASELINES,
            logical_bytes=_bytes_rmsnorm_train, flops=_flops_none, exercise="rmsnorm_train",
        ),
        OpSpec(
            name="matmul_train", summary="GEMM forward + backward (dA = dC B^T, dB = A^T dC)",
            shape_names=_GEMM, default_shapes=_TRAIN_GEMM_SHAPES, cpu_shapes=_GEMM_CPU_SHAPES,
            group="training", tolerances=GRADIENT_TOLERANCES, wrt=("a", "b"),
            module="kernels.matmul", function="matmul", make_inputs=_matmul_inputs,
            oracle=_oracle_matmul, baselines=_MATMUL_BASELINES,
            logical_bytes=_bytes_matmul_train, flops=_flops_matmul_train, exercise="matmul_train",
        ),
    ]
    return {spec.name: spec for spec in specs}


OPS: Mapping[str, OpSpec] = MappingProxyType(_specs())
GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "all": tuple(n for n, s in OPS.items() if s.group == "all"),
        "training": tuple(n for n, s in OPS.items() if s.group == "training"),
    }
)


def get(name: str) -> OpSpec:
    """The spec called ``name``; a one-line ValueError that lists the choices otherwise."""
    try:
        return OPS[name]
    except KeyError:
        raise ValueError(f"unknown op {name!r}; choose one of {', '.join(OPS)}") from None


def resolve(name: str) -> tuple[OpSpec, ...]:
    """An op name or a group name (``all``, ``training``) -> the specs it stands for."""
    if name in GROUPS:
        return tuple(OPS[n] for n in GROUPS[name])
    if name in OPS:
        return (OPS[name],)
    choices = ", ".join([*GROUPS, *OPS])
    raise ValueError(f"unknown op {name!r}; choose one of {choices}")


def dtype_from_name(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unsupported dtype {name!r}; choose one of {', '.join(DTYPES)}") from None


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def exercises() -> dict[str, tuple[OpSpec, ...]]:
    """Kernel exercise name -> the ops it grades (``reductions`` grades ``sum`` and ``max``)."""
    table: dict[str, list[OpSpec]] = {}
    for spec in OPS.values():
        table.setdefault(spec.exercise, []).append(spec)
    return {name: tuple(specs) for name, specs in table.items()}
