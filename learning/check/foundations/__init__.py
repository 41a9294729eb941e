"""Checks for the foundations exercises (lessons 01-06), which run on any CPU.

``run(exercise, impl)`` imports ``<impl>.foundations.<module>`` and grades it with that
exercise's checks (one module here per lesson). Every check pairs a worked example with
properties tested on fresh random inputs (a new seed each run, so returning the worked
example's constant fails), reads shapes, bytes, FLOPs, tolerances and oracles from
:mod:`learning.ops`, and compares tensors with :func:`learning.correctness.compare` wherever a
tolerance is involved. A failure says on which input, what was expected, what came back and
where to look; a function still raising NotImplementedError says where to start.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from learning import ops
from learning.check.foundations import (
    gemm_arithmetic,
    oracles,
    rmsnorm_semantics,
    rounding,
    stable_softmax,
    tensors,
)
from learning.check.foundations.support import Check, Failed, Learner
from learning.check.model import CheckResult
from learning.check.seeds import replay_note, run_seed


@dataclass(frozen=True)
class Exercise:
    module: str  # the learner's module, under <impl>.foundations
    checks: tuple[Check, ...]


# exercise name -> what it grades, in lesson order (01 ... 06)
EXERCISES: Mapping[str, Exercise] = MappingProxyType(
    {
        "tensors": Exercise("bytes_and_layout", tensors.CHECKS),
        "oracles": Exercise("oracles", oracles.CHECKS),
        "rounding": Exercise("rounding", rounding.CHECKS),
        "stable_softmax": Exercise("stable_softmax", stable_softmax.CHECKS),
        "rmsnorm_semantics": Exercise("rmsnorm_semantics", rmsnorm_semantics.CHECKS),
        "gemm_arithmetic": Exercise("gemm_arithmetic", gemm_arithmetic.CHECKS),
    }
)


def run(exercise: str, impl: str = "exercises") -> list[CheckResult]:
    """Grade one foundations exercise against ``<impl>.foundations``; one point a check."""
    if exercise not in EXERCISES:
        choices = ", ".join(EXERCISES)
        raise ValueError(f"unknown foundations exercise {exercise!r}; choose one of {choices}")
    spec = EXERCISES[exercise]
    module_name = f"{impl}.foundations.{spec.module}"
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # a syntax error or a bad import in the learner's file
        message = f"could not import {module_name}: {type(error).__name__}: {error}"
        return [CheckResult(f"import {module_name}", False, float(len(spec.checks)), message)]
    ops.numerics_policy()
    seed = run_seed(2**32)
    results = []
    for check in spec.checks:
        rng = random.Random(f"{seed}/{check.name}")  # each check's inputs are independent
        try:
            check.function(Learner(module), rng)
        except Failed as failure:
            message = str(failure)
            if message.startswith("input:"):  # drawn inputs: the seed reproduces them
                message += f"\n{replay_note(seed)}"
            results.append(CheckResult(check.name, False, 1.0, message))
        except Exception as error:  # what came back could not even be examined
            message = (
                f"examining what your code returned raised {type(error).__name__}: {error}\n"
                "hint: compare the return type and shape with the function's docstring"
            )
            results.append(CheckResult(check.name, False, 1.0, message))
        else:
            results.append(CheckResult(check.name, True, 1.0))
    return results
