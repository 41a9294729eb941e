"""Checks for lesson 17's exercise, ``<impl>/harness.py``: three cheats, each graded as a cheat.

A cheat earns its point only when it is the cheat it claims to be:

(i)   it is not simply broken: on a short demonstration (one input, the same values again in
      a new tensor, new values), called as any caller would call it and read once its work has
      finished, it returns the right softmax at least once;
(ii)  the real kernel checker (:func:`learning.check.kernels.run`, exercise ``softmax``)
      refuses it: its file is copied into a temporary package whose ``kernels/softmax.py``
      calls the cheat as ``softmax``, and that package is graded as ``exercises`` would be,
      on the few planned cases that show the cheat's guard (``focus``);
(iii) the refusal is for the claimed reason: the checker's messages hold that guard's words.

A kernel the checker accepts is honest, so not a cheat; one refused only by another guard
earns nothing, and the message names the guard that caught it. The learner's module is never
imported here: each copy runs in a worker process of its own (:class:`~learning.check.remote
.Session`), and only the values that come back are compared with the float64 oracle.
"""

from __future__ import annotations

import tempfile
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from learning import correctness, ops
from learning.check import kernels
from learning.check.model import CheckResult
from learning.check.remote import REPO, RemoteModule, Session, derive_seed, python_path
from learning.check.seeds import replay_note

RECORDS_KERNELS = False  # the runner's worker is not used: each cheat gets a session of its own
CALL_LIMIT_S = 60.0  # one demonstration call (a first call compiles or interprets the kernel)
_SETTLE_LIMIT_S = 10.0  # how long a demonstration waits for a cheat's threads to finish
DEMO_SHAPE = (8, 100)

# The guards the lesson names, and the words of the checker's messages that say each caught a
# result (learning/check/kernels.py); a guard is named by the first of them that a message holds.
GUARDS: dict[str, tuple[str, ...]] = {
    "fresh outputs (poisoned memory, the same tensor twice)": (
        "output was never written",
        "same tensor an earlier call returned",
    ),
    "repeat calls on refilled tensors": (
        "the output was cached",
        "nothing may be cached between calls",
        "right in an earlier call and wrong now",
    ),
    "the settled-output check": ("the output changed after the call returned",),
    "hidden-input replay of only your kernels": (
        "did not come from your own Triton kernels",
        "replaying only your kernels' launches",
        "no Triton kernel ran",
        "your function returned something other than what your kernels stored",
        "a kernel defined outside your",
    ),
}
_FRESH, _REPEAT, _SETTLED, _REPLAY = GUARDS


def _repeat_calls(hows: tuple[str, ...]) -> Callable[[list], list]:
    """The first "repeated calls" case only, with the calls named in ``hows``."""

    def focus(cases: list) -> list:
        case = next(c for c in cases if c.check.endswith("repeated calls") and len(c.calls) > 1)
        case.calls = [call for call in case.calls if call.how in hows]
        return [case]

    return focus


def _first_shape(cases: list) -> list:
    """The registry's first CPU shape, in its first dtype: one call, replayed bit for bit."""
    return cases[:1]


@dataclass(frozen=True)
class Cheat:
    function: str  # in <impl>/harness.py
    what: str  # the cheat, in a few words
    guards: tuple[str, ...]  # names from GUARDS: any of them catching it is the claimed reason
    focus: Callable[[list], list]  # the planned cases that show it (kernels.run's focus)


CHEATS = (
    Cheat("reused_output", "an earlier call's output handed back", (_FRESH,),
          _repeat_calls(("first", "again"))),
    # A refilled tensor's call gets the stale answer back: the refill's comparison names the
    # cache; when the call launched nothing, the replay of its (absent) kernels says so first.
    Cheat("pointer_cache", "a cache keyed on the input's pointer, shape and stride",
          (_REPEAT, _REPLAY), _repeat_calls(("first", "again", "refill"))),
    Cheat("side_work", "work finished outside the call (a thread, a stream, PyTorch)",
          (_SETTLED, _REPLAY), _first_shape),
)  # fmt: skip

HONEST = "this is an honest kernel: the checker accepts it, so it is not a cheat"

_DEMO_MODULE = '''\
"""Calls the cheat as a caller would, and waits for what it left running (written by
learning.check.harness; not graded)."""

import threading

import torch

from .kernels.softmax import softmax


def settled_softmax(x, limit_s):
    before = set(threading.enumerate())
    y = softmax(x)
    for thread in set(threading.enumerate()) - before:
        thread.join(limit_s)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return y
'''


def run(exercise: str, impl: str, session: Session | None = None) -> list[CheckResult]:
    """The check-module contract: each cheat of ``<impl>/harness.py``, one point each, every
    copy of it graded in a worker of its own (``session`` gives the seed and the deadline)."""
    if session is None:
        with Session(exercise, impl) as own:
            return run(exercise, impl, own)
    source = _learner_file(impl, session)
    results = []
    with tempfile.TemporaryDirectory(prefix="harness-") as folder:
        for cheat in CHEATS:
            if isinstance(source, str):
                results.append(CheckResult(cheat.function, False, 1.0, source))
                continue
            message = _grade(cheat, source.read_text(encoding="utf-8"), Path(folder), session)
            passed = message.startswith("caught")
            results.append(CheckResult(cheat.function, passed, 1.0, message))
    return results


def _learner_file(impl: str, session: Session) -> Path | str:
    """``<impl>/harness.py`` as the worker would find it (its path, never imported here), or
    why there is none."""
    for entry in [REPO, *map(Path, python_path(session.extra_path))]:
        if (entry / impl / "__init__.py").is_file():
            path = entry / impl / "harness.py"
            if path.is_file():
                return path
            return (f"there is no {impl}/harness.py: run `python scripts/make_exercises.py` "
                    "to make it")  # fmt: skip
    return f"no package folder {impl}/ with an __init__.py was found"


def _package(cheat: Cheat, source: str, folder: Path) -> str:
    """A package whose ``kernels/softmax.py`` is the learner's file calling ``cheat`` as
    ``softmax``, and whose ``demo.py`` calls it as a caller would; its name."""
    name = f"harness_{cheat.function}_{uuid.uuid4().hex[:8]}"
    kernels_folder = folder / name / "kernels"
    kernels_folder.mkdir(parents=True)
    (folder / name / "__init__.py").write_text("import learning  # noqa: F401\n")
    (kernels_folder / "__init__.py").write_text("")
    wrapper = textwrap.dedent(f"""

        def softmax(x):  # added by the harness check: the cheat, graded as softmax
            return {cheat.function}(x)
        """)  # fmt: skip
    (kernels_folder / "softmax.py").write_text(source + wrapper, encoding="utf-8")
    (folder / name / "demo.py").write_text(_DEMO_MODULE)
    return name


def _grade(cheat: Cheat, source: str, folder: Path, session: Session) -> str:
    """The cheat's verdict: a message that starts with "caught" when it earns its point."""
    package = _package(cheat, source, folder)
    with Session("softmax", package, extra_path=[folder], seed=session.seed,
                 time_limit_s=session.time_left(), kernels=True,
                 slowdown=session.slowdown) as own:  # fmt: skip
        right, said_there = _demonstration(cheat, package, own)
        if not right:
            return said_there
        checks = kernels.run("softmax", package, own, focus=cheat.focus)
    earned = sum(check.earned for check in checks)
    possible = sum(check.max_points for check in checks)
    said = "\n".join(check.message for check in checks if not check.passed)
    caught_by = [name for name, words in GUARDS.items() if any(w in said for w in words)]
    if earned >= possible:
        return f"{cheat.function}: {HONEST}.\nIt must be {cheat.what}, and right at least once."
    claimed = [name for name in cheat.guards if name in caught_by]  # the cheat's own order
    if claimed:
        return (
            f"caught, as it should be: {said_there}; the checker refused it, by {claimed[0]}:\n"
            f"{_first_line_with(said, GUARDS[claimed[0]])}"
        )
    first = said.strip().splitlines()[:4]
    if caught_by:
        return (
            f"{cheat.function} is caught by {' and '.join(caught_by)}, not by "
            f"{' or '.join(cheat.guards)}: it is not the cheat this function claims "
            f"({cheat.what}). The checker said:\n" + "\n".join(first)
        )
    return (
        f"{cheat.function}: the checker refused it, but by none of the guards this lesson "
        "names, so it is a mistake rather than the cheat (" + cheat.what + "). The "
        "checker said:\n" + "\n".join(first)
    )


def _first_line_with(text: str, words: tuple[str, ...]) -> str:
    return next((line for line in text.splitlines() if any(w in line for w in words)), "")


def _demonstration(cheat: Cheat, package: str, session: Session) -> tuple[bool, str]:
    """Whether the cheat got a demonstration call right, and a sentence: which it got right,
    or why it got none right."""
    spec = ops.OPS["softmax"]
    dtype = torch.float32
    first = spec.inputs(DEMO_SHAPE, dtype, derive_seed(session.seed, "harness", "first"), "cpu")
    new = spec.inputs(DEMO_SHAPE, dtype, derive_seed(session.seed, "harness", "new"), "cpu")
    sequence = (("an input", first), ("the same values again", first), ("new values", new))
    demo = RemoteModule(session, f"{package}.demo")
    right, wrong = [], ""
    for label, values in sequence:
        settle = {"limit_s": session.scaled(_SETTLE_LIMIT_S)}
        outcome = demo.call("settled_softmax", [values["x"].clone()], settle,
                            limit_s=CALL_LIMIT_S)  # fmt: skip
        if outcome.timed_out:
            limit = session.scaled(CALL_LIMIT_S)
            return False, f"{cheat.function} did not return within {limit:g} s on {label}"
        if outcome.error is not None:
            error = outcome.error
            if getattr(error, "not_implemented", False):
                return False, (f"{cheat.function} is not done yet: it raises NotImplementedError. "
                        "Write the cheat its TODO describes in harness.py (its docstring "
                        "says which)")  # fmt: skip
            return False, f"{cheat.function} raised {type(error).__name__}: {error} (on {label})"
        verdicts = correctness.compare_all(
            (outcome.value,), spec.expected(values), spec.tolerances[dtype], dtype=dtype,
            labels=correctness.output_labels(spec),
        )  # fmt: skip
        if all(v.passed for v in verdicts):
            right.append(label)
        elif not wrong:
            wrong = next(v.reason for v in verdicts if not v.passed)
    if not right:
        return False, (
            f"{cheat.function} is not a cheat, just wrong: it returned no right softmax on "
            f"any input of the demonstration ({', '.join(s[0] for s in sequence)} of shape "
            f"{DEMO_SHAPE[0]}x{DEMO_SHAPE[1]} float32), so there is nothing to fool the "
            f"checker with. On {sequence[0][0]}: {wrong}\n{replay_note(session.seed)}"
        )
    return True, f"right on {', '.join(right)} of the demonstration"


__all__ = ["CHEATS", "GUARDS", "HONEST", "Cheat", "run"]
