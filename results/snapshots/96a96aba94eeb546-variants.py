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
* ``learner`` (with ``--impl learner``): the learner's kernels from ``exercises/``, timed by
  replaying the launches its function made, with no learner Python in this process
  (``learning.bench.learner``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import torch

from learning import ops
from learning.bench.config import COMPILE_MODES, BenchConfig, BenchInputError

if TYPE_CHECKING:  # imported when a learner is timed: a reference run never loads it
    from learning.bench.learner import Learner


@dataclass(frozen=True)
class VariantSpec:
    name: str
    kind: str  # eager | compile | triton | learner
    fn: Callable[..., torch.Tensor]
    # How one call is made: None, ``spec.call(fn, inputs)``; a learner variant replays its
    # kernels' launches instead (``learning.bench.learner``) and returns the outputs itself.
    call: Callable[[dict], tuple] | None = None
    note: str | None = None  # how this variant is timed, when it is not the usual way
    rejected: str | None = None  # why it fails before any call (a learner kernel not verified)

    def invoke(self, spec: ops.OpSpec, inputs: dict) -> tuple:
        """One call on ``inputs``: the outputs (forward) or the gradients (training)."""
        if self.call is not None:
            return self.call(inputs)
        return spec.call(self.fn, inputs)


@dataclass
class Implementations:
    """The kernel modules a run calls, by op name; the fingerprint is taken from these."""

    reference: dict[str, ModuleType] = field(default_factory=dict)
    learner: Learner | None = None  # the learner's kernels, never imported here

    def modules(self) -> list[ModuleType]:
        return list(self.reference.values())

    def learner_files(self) -> list[Path]:
        return list(self.learner.files) if self.learner else []


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


def load_implementations(selection: list, config: BenchConfig, device: str) -> Implementations:
    """Import the reference module of every op; record and verify the learner's variants.

    The learner's package is never imported here (``learning.bench.learner``). A learner
    module that is missing, does not import, lacks the function, still raises
    ``NotImplementedError`` or has TODO kernels is a request error (one line, exit 2) before
    any timing. A learner kernel that runs but cannot be verified is not: it is recorded as
    failed per case.
    """
    implementations = Implementations()
    specs = list({spec.name: spec for spec, _, _ in selection}.values())
    for spec in specs:
        implementations.reference[spec.name] = _import(config.reference_package, spec, "reference")
    if config.impl == "learner":
        from learning.bench.learner import prepare_learner

        implementations.learner = prepare_learner(
            selection, config.learner_package, config.seed, device, config.worker_timeout_s
        )
    return implementations


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
    learner = implementations.learner
    if learner is not None:
        from learning.bench.learner import METHOD_NOTE

        case = learner.cases.get((spec.name, tuple(shape), ops.dtype_name(dtype)))
        if case is not None:
            variants.append(
                VariantSpec(
                    "learner",
                    "learner",
                    None,
                    call=case.call,
                    note=METHOD_NOTE,
                    rejected=case.reason,
                )  # fmt: skip
            )
    return variants


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""
