"""Checks for lesson 7's exercise, ``<impl>/measurement.py`` (spec: ``reference/measurement.py``).

Each check calls the learner's functions on the lesson's worked examples first, then on fresh
random inputs (new values every run), so a function that returns the worked answer cannot
pass. Byte and FLOP counts are compared with the op registry (``learning.ops``): the registry
stays the one place those formulas live. The learner's file is never imported here: every call
is a request to the worker process (:class:`~learning.check.remote.RemoteModule`) with a time
limit of its own, so a loop that never ends costs one check, not the whole run.

A failed check says, in order: the input, what was expected, what came back, and a hint. The
hints know the usual mistakes (a factor of 1000 from milliseconds, an inverted ratio, a
percentage for a fraction, an output counted twice, samples sorted before they are paired ...)
and name the one that fits.
"""

from __future__ import annotations

import random

from learning.check.measurement.rates import (
    check_amdahl,
    check_fits_in_l2,
    check_logical_bytes,
    check_logical_gbps,
    check_speedup,
    check_tflops,
    check_training_bytes,
)
from learning.check.measurement.samples import (
    check_paired_speedup,
    check_result_sentence,
    check_summarize,
    paired_samples,
)
from learning.check.measurement.support import PARAMETERS, Check, Failed, Learner, load
from learning.check.model import CheckResult
from learning.check.remote import Session
from learning.check.seeds import replay_note

CHECKS = (
    Check("speedup", 1, check_speedup),
    Check("amdahl_speedup", 1, check_amdahl),
    Check("logical_gbps", 1, check_logical_gbps),
    Check("tflops and flops", 1, check_tflops),
    Check("logical_bytes (forward ops)", 1, check_logical_bytes),
    Check("logical_bytes (training steps)", 1, check_training_bytes),
    Check("fits_in_l2", 1, check_fits_in_l2),
    Check("summarize", 1, check_summarize),
    Check("paired_speedup", 1, check_paired_speedup),
    Check("result_sentence", 1, check_result_sentence),
)


def run(exercise: str, impl: str, session: Session | None = None) -> list[CheckResult]:
    """The check-module contract: every check of ``exercise`` against ``<impl>/measurement.py``,
    through ``session``'s worker (a session of its own when None)."""
    if session is None:
        with Session(exercise, impl) as own:
            return run(exercise, impl, own)
    learner = load(impl, session)
    seed = session.seed
    rng = random.Random(seed)  # fresh inputs every run, unless LEARNING_CHECK_SEED replays one
    results = []
    for index, check in enumerate(CHECKS):
        if isinstance(learner, str):
            message = learner if index == 0 else "not checked: the file did not import (see above)."
            results.append(CheckResult(check.name, False, check.points, message))
            continue
        try:
            check.function(learner, rng)
        except Failed as failure:
            message = f"{failure}\n{replay_note(seed)}"
            results.append(CheckResult(check.name, False, check.points, message))
        except Exception as error:  # a value the checks did not anticipate
            message = f"the check could not read what came back: {type(error).__name__}: {error}"
            results.append(CheckResult(check.name, False, check.points, message))
        else:
            results.append(CheckResult(check.name, True, check.points))
    return results


__all__ = ["CHECKS", "PARAMETERS", "Check", "Failed", "Learner", "check_paired_speedup",
           "load", "paired_samples", "run"]  # fmt: skip
