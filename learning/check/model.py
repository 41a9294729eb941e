"""What a check produces. Every exercise's checks return a list of :class:`CheckResult`.

A check module exposes ``run(exercise: str, impl: str, session=None) -> list[CheckResult]``
where ``impl`` is ``"exercises"`` (the learner's files, the default) or ``"reference"`` and
``session`` the :class:`~learning.check.remote.Session` whose worker runs the learner's code
(the runner passes one; a module makes its own without). The results are built in the
checker's process, from values the worker returned: nothing the learner's code does can make
one, crash the checker or hang it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class CheckResult:
    """One graded (or, with ``max_points == 0``, advisory) check.

    On failure ``message`` says, in this order: on which input, what was expected, what came
    back, and a hint that points at the likely mistake.
    """

    name: str
    passed: bool
    max_points: float
    message: str = ""
    points: float | None = None  # defaults to max_points when passed, 0 otherwise
    # What the check measured on each input, as plain data for ``--json`` (a kernel
    # exercise's traffic check: the bytes each case's kernels moved); empty for most checks.
    cases: tuple[dict, ...] = field(default=(), compare=False, hash=False)

    @property
    def earned(self) -> float:
        if self.points is not None:
            return self.points
        return self.max_points if self.passed else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "points": self.earned}
