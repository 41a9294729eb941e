"""What an operation is, as every tool in the course sees it: the :class:`OpSpec` type and the
pieces its definitions share. No operation is defined here.

Each op is one frozen :class:`OpSpec` in its own definition package
(``learning/ops/<name>/__init__.py``), and ``learning.ops`` is the index of their names. A spec
says what the operation is (its float64 oracle), how to make inputs, which PyTorch baselines
it is compared with, how many bytes and FLOPs it logically moves and does, which shapes and
dtypes it is measured at, how close to the oracle each dtype must come, and where its
implementation lives (``kernels.softmax`` resolved under ``reference/`` or ``exercises/``).

Training ops (``softmax_train`` ...) reuse their forward op's implementation and baselines: one
call is a forward and a backward pass through autograd, and the outputs compared with the
oracle are the gradients.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

import torch

from learning.ops import DTYPE_NAMES

Shape = tuple[int, ...]
Inputs = dict[str, Any]

DTYPES: Mapping[str, torch.dtype] = MappingProxyType(
    {name: getattr(torch, name) for name in DTYPE_NAMES}
)
DEFINITIONS = "learning.ops"  # the package whose module ``<name>`` defines the op ``<name>``


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

# The shapes the row ops and the GEMMs share: one tuple each, read by their definitions.
ROWS = ("M", "N")
GEMM = ("M", "N", "K")
ROW_SHAPES: tuple[Shape, ...] = (
    (1024, 1024),  # L2-resident: 2-8 MiB
    (16384, 4096),  # larger than the 60 MiB L2 even in fp16 (128 MiB in)
    (65536, 128),  # narrow rows: many tiny programs, the unfavourable case
    (4096, 32768),  # wide rows: a row no longer fits one block's registers
    (1823, 781),  # irregular: neither dimension a power of two
)
ROW_CPU_SHAPES: tuple[Shape, ...] = ((16, 256), (37, 781), (5, 3000))
GEMM_CPU_SHAPES: tuple[Shape, ...] = ((64, 64, 64), (75, 93, 61))
TRAIN_ROW_SHAPES: tuple[Shape, ...] = ((1024, 1024), (16384, 4096), (4096, 32768), (1823, 781))


# --------------------------------------------------------------------------- inputs


def generator(seed: int, device: str | torch.device) -> torch.Generator:
    made = torch.Generator(device=device)
    made.manual_seed(seed)
    return made


def randn(shape: Shape, dtype: torch.dtype, source: torch.Generator, device) -> torch.Tensor:
    # Drawn in float32 and rounded once, so every dtype sees the same distribution.
    return torch.randn(shape, generator=source, device=device, dtype=torch.float32).to(dtype)


def row_inputs(shape: Shape, dtype: torch.dtype, seed: int, device) -> Inputs:
    """One input ``x`` of the given shape: what every one-input row op takes."""
    return {"x": randn(shape, dtype, generator(seed, device), device)}


# --------------------------------------------------------------------------- bytes and FLOPs


def itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def no_flops(shape: Shape) -> int:
    return 0


def elementwise_flops(shape: Shape) -> int:
    return math.prod(shape)


def row_reduction_bytes(shape: Shape, dtype: torch.dtype) -> int:  # read M*N, write M
    rows, cols = shape
    return (rows * cols + rows) * itemsize(dtype)


# --------------------------------------------------------------------------- the policy


def numerics_policy() -> None:
    """The course's matmul numerics for every baseline: no TF32, no reduced-precision reduction.

    Called once by the checker and the benchmark before anything runs, and recorded in reports.
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


def dtype_from_name(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unsupported dtype {name!r}; choose one of {', '.join(DTYPES)}") from None


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class OpSpec:
    """One operation, as every tool in the course sees it.

    Its summary, the one line the tools print about it, is the first line of its definition
    module's docstring: words a reader may improve without changing what any report measured.
    """

    name: str
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
    wrt: tuple[str, ...] = ()  # training ops: the inputs whose gradients are checked
    dtypes: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32)
    reduces_rows: bool = False  # output is one value per row (sum, max)

    # -- where it is defined ----------------------------------------------------------------

    @property
    def definition(self) -> str:
        """The module that defines this op: ``learning.ops.<name>``."""
        return f"{DEFINITIONS}.{self.name}"

    @property
    def summary(self) -> str:
        """The first line of the definition module's docstring."""
        doc = inspect.getdoc(importlib.import_module(self.definition)) or self.name
        return doc.strip().splitlines()[0].rstrip(".")

    # -- shapes -----------------------------------------------------------------------------

    @property
    def training(self) -> bool:
        return bool(self.wrt)

    @property
    def is_gemm(self) -> bool:
        return self.shape_names == GEMM

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
            inputs["grad_output"] = randn(out_shape, dtype, generator(seed + 1, device), device)
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
