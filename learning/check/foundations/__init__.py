"""Checks for the foundations exercises (lessons 01-06), which run on any CPU.

``run(exercise, impl)`` imports ``<impl>.foundations.<module>`` and grades it with that
exercise's checks (one module here per lesson). Every check pairs a worked example with
properties tested on fresh random inputs (a new seed each run, so returning the worked
example's constant fails), reads shapes, bytes, FLOPs, tolerances and oracles from
:mod:`learning.ops`, and compares tensors with :func:`learning.correctness.compare` wherever a
tolerance is involved. A failure says on which input, what was expected, what came back and
where to look; a function still raising NotImplementedError says where to start. The learner's
module is never imported here: :class:`~learning.check.foundations.support.Learner` sends each
call to the worker process, and only the values that come back are examined.
"""

from __future__ import annotations

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
from learning.check.remote import RemoteModule, Session
from learning.check.seeds import replay_note

IMPORT_LIMIT_S = 30.0


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


def run(
    exercise: str, impl: str = "exercises", session: Session | None = None
) -> list[CheckResult]:
    """Grade one foundations exercise against ``<impl>.foundations``; one point a check (a
    check of no points reports what the worker saw, :data:`Check.points`)."""
    if exercise not in EXERCISES:
        choices = ", ".join(EXERCISES)
        raise ValueError(f"unknown foundations exercise {exercise!r}; choose one of {choices}")
    if session is None:
        with Session(exercise, impl) as own:
            return run(exercise, impl, own)
    spec = EXERCISES[exercise]
    module_name = f"{impl}.foundations.{spec.module}"
    module = RemoteModule(session, module_name)
    imported = module.load(IMPORT_LIMIT_S)
    points = float(sum(check.points for check in spec.checks))
    if imported.timed_out:
        limit = session.scaled(IMPORT_LIMIT_S)
        message = (f"importing {module_name} did not finish within {limit:g} s: is there "
                   "a loop at the top level of the file that never ends?")  # fmt: skip
        return [CheckResult(f"import {module_name}", False, points, message)]
    if imported.error is not None:  # a syntax error or a bad import in the learner's file
        error = imported.error
        message = f"could not import {module_name}: {type(error).__name__}: {error}"
        return [CheckResult(f"import {module_name}", False, points, message)]
    ops.numerics_policy()
    seed = session.seed
    results = []
    for check in spec.checks:
        rng = random.Random(f"{seed}/{check.name}")  # each check's inputs are independent
        try:
            check.function(Learner(module), rng)
        except Failed as failure:
            message = str(failure)
            if message.startswith("input:"):  # drawn inputs: the seed reproduces them
                message += f"\n{replay_note(seed)}"
            results.append(CheckResult(check.name, False, check.points, message))
        except Exception as error:  # what came back could not even be examined
            message = (
                f"examining what your code returned raised {type(error).__name__}: {error}\n"
                "hint: compare the return type and shape with the function's docstring"
            )
            results.append(CheckResult(check.name, False, check.points, message))
        else:
            results.append(CheckResult(check.name, True, check.points))
    return results
