"""What is compared in each case: the variants, and the implementation modules they come from.

Per case, in this order:

* ``eager``: every PyTorch baseline of the spec (``torch``; for RMSNorm ``composition`` and
  ``torch_rms_norm``). The first one is *the* eager baseline every ratio divides by.
* ``compile`` (with ``--compile``): Inductor's version of the first baseline, compiled for this
  case alone (``dynamic=False`` on a fresh copy of the function, so no case ever recompiles
  another's code with dynamic shapes), in the ``--compile-mode`` the settings record (the name
  stays ``compile`` either way). A training op compiles the forward; AOTAutograd makes the
  backward.
* ``triton``: the reference kernel. A reference module may add named variants of its own (for
  example other row plans) by defining ``benchmark_variants(shape, dtype) -> {name: callable}``
  with the kernel's signature; they appear as ``triton:<name>``.
* ``learner`` (with ``--impl learner``): the learner's kernel from ``exercises/``.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import torch

from learning import correctness, ops
from learning.bench.config import COMPILE_MODES, BenchConfig, BenchInputError
from learning.report.fingerprint import report_path


@dataclass(frozen=True)
class VariantSpec:
    name: str
    kind: str  # eager | compile | triton | learner
    fn: Callable[..., torch.Tensor]
    # How one call is made: None, ``spec.call(fn, inputs)``; a learner variant replays its
    # kernels' launches instead (``learning.bench.learner``) and returns the outputs itself.
    call: Callable[[dict], tuple] | None = None
    note: str | None = None  # how this variant is timed, when it is not the usual way

    def invoke(self, spec: ops.OpSpec, inputs: dict) -> tuple:
        """One call on ``inputs``: the outputs (forward) or the gradients (training)."""
        if self.call is not None:
            return self.call(inputs)
        return spec.call(self.fn, inputs)


@dataclass
class Implementations:
    """The kernel modules a run calls, by op name; the fingerprint is taken from these."""

    reference: dict[str, ModuleType] = field(default_factory=dict)
    learner: dict[str, ModuleType] = field(default_factory=dict)

    def modules(self) -> list[ModuleType]:
        return [*self.reference.values(), *self.learner.values()]


def _import(package: str, spec: ops.OpSpec, role: str) -> ModuleType:
    name = f"{package}.{spec.module}"
    try:
        module = spec.implementation(package)
    except NotImplementedError as error:
        raise BenchInputError(f"{role} module {name} is unfinished: {_one_line(error)}") from None
    except Exception as error:  # ImportError, SyntaxError, anything its import raises
        raise BenchInputError(
            f"cannot import the {role} module {name}: {type(error).__name__}: {_one_line(error)}"
        ) from None
    if not callable(getattr(module, spec.function, None)):
        raise BenchInputError(f"{role} module {name} has no function {spec.function}()")
    return module


def load_implementations(
    specs: list[ops.OpSpec], config: BenchConfig, device: str
) -> Implementations:
    """Import the reference (and learner) module of every op; stop early on unfinished work.

    A learner module that does not import, lacks the function, or still raises
    ``NotImplementedError`` on a tiny input is a request error (one line, exit 2) before any
    timing. A learner kernel that runs but is wrong is not: it is recorded as failed per case.
    """
    implementations = Implementations()
    for spec in specs:
        implementations.reference[spec.name] = _import(config.reference_package, spec, "reference")
        if config.impl == "learner":
            module = _import(config.learner_package, spec, "learner")
            _preflight(spec, getattr(module, spec.function), device, config.seed, module)
            implementations.learner[spec.name] = module
    return implementations


def _preflight(spec: ops.OpSpec, fn, device: str, seed: int, module: ModuleType) -> None:
    """Call the learner's kernel once on a tiny input: is it written at all?

    Unfinished means: it raises ``NotImplementedError`` (a launcher still a TODO), or its
    module still has Triton kernels whose body is ``pass`` (the exercise's TODOs) and the tiny
    call does not match the oracle. A finished kernel that is wrong is not stopped here.
    """
    file = getattr(module, "__file__", None)
    where = report_path(Path(file)) if file else module.__name__
    stubs = stub_kernels(module)
    unfinished = (
        f"exercise {spec.exercise} is unfinished ({where} still has TODO kernels: "
        f"{', '.join(stubs)}); finish it (python -m learning.check {spec.exercise}) "
        "or run --impl reference"
    )
    inputs = spec.inputs(spec.cpu_shapes[0], spec.dtypes[0], seed, device)
    try:
        outputs = spec.call(fn, inputs)
    except NotImplementedError as error:
        raise BenchInputError(
            f"exercise {spec.exercise} is unfinished ({where} raises NotImplementedError: "
            f"{_one_line(error) or 'TODO'}); finish it, or run --impl reference"
        ) from None
    except Exception:
        if stubs:
            raise BenchInputError(unfinished) from None
        return  # a written kernel that fails: recorded as failed in each case
    if stubs:
        dtype = spec.dtypes[0]
        verdicts = correctness.compare_all(
            outputs,
            spec.expected(inputs),
            spec.tolerances[dtype],
            dtype=dtype,
            labels=correctness.output_labels(spec),
        )
        if not all(v.passed for v in verdicts):
            raise BenchInputError(unfinished)


def stub_kernels(module: ModuleType) -> list[str]:
    """Names of the module's Triton kernels whose body is only ``pass`` (and a docstring)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return []
    stubs = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
        if not any(word in decorators for word in ("jit", "autotune", "heuristics")):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        if all(isinstance(statement, ast.Pass) for statement in body):
            stubs.append(node.name)
    return stubs


def fresh_compiled(fn: Callable, mode: str = "default") -> Callable:
    """``torch.compile(fn, dynamic=False)`` on a private copy of ``fn``'s code.

    Dynamo keeps its compiled entries on the code object, so compiling the same function for
    several shapes would share one cache (and hit its recompile limit). A copied code object
    gives every case its own compiled function, and so, under max-autotune, its own tuning.
    ``mode`` is a ``--compile-mode``, translated by :data:`COMPILE_MODES`.
    """
    if not isinstance(fn, types.FunctionType):
        target = fn
        fn = lambda *args, **kwargs: target(*args, **kwargs)
    copy = types.FunctionType(
        fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    copy.__kwdefaults__ = fn.__kwdefaults__
    return torch.compile(copy, dynamic=False, mode=COMPILE_MODES[mode])


def case_variants(
    spec: ops.OpSpec,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    implementations: Implementations,
    compile_mode: str | None,
) -> list[VariantSpec]:
    """The case's variants, in the order of the module docstring; ``compile_mode`` None: no
    ``compile`` variant."""
    variants = [VariantSpec(name, "eager", fn) for name, fn in spec.baselines.items()]
    if compile_mode is not None:
        first = next(iter(spec.baselines.values()))
        variants.append(VariantSpec("compile", "compile", fresh_compiled(first, compile_mode)))
    reference = implementations.reference[spec.name]
    variants.append(VariantSpec("triton", "triton", getattr(reference, spec.function)))
    extra = getattr(reference, "benchmark_variants", None)
    if callable(extra) and not spec.training:
        for name, fn in dict(extra(tuple(shape), dtype)).items():
            variants.append(VariantSpec(f"triton:{name}", "triton", fn))
    if spec.name in implementations.learner:
        learner = implementations.learner[spec.name]
        variants.append(VariantSpec("learner", "learner", getattr(learner, spec.function)))
    return variants


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""
