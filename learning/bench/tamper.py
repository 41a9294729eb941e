"""Tamper evidence: are the timers, the gate and the baselines the ones the run started with?

The learner's Python never runs in the benchmark's process (``learning.bench.learner``), so
nothing it does can replace a timer or the comparison there. Other code does run there: the
reference package (a test's throwaway one, say), whatever it imports, torch.compile's output.
:class:`Snapshot` records, when a run starts, every function and class the measurement depends
on (``learning.bench``'s timers, gate and engine, ``learning.correctness``, the op spec type and
every op's definition module with its baselines, oracle and tolerances, the report writer, and
the public functions
of ``torch`` and ``time`` they call), by identity and by code object. :meth:`Snapshot.changes`
names each one that is different when the run ends; the engine writes them into the report's
``warnings``. It is evidence, not a guard: it says that a figure may not be what it claims.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Iterator, Mapping
from types import FunctionType, MethodType, ModuleType

# The course's modules a measurement depends on (each is snapshotted whole). The learner path
# (learning.bench.learner) is left out: it runs before timing, and a reference run never
# loads it.
COURSE_MODULES = (
    "learning.bench.timers",
    "learning.bench.gate",
    "learning.bench.engine",
    "learning.bench.record",
    "learning.bench.variants",
    "learning.bench.schedule",
    "learning.correctness",
    "learning.ops.spec",
    "learning.report",
    "learning.report.fingerprint",
    "learning.report.stats",
    "learning.guards",
)
# Outside the course: only the public callables, which is what the measurement calls.
LIBRARY_OWNERS = ("time", "torch", "torch.nn.functional", "torch.autograd", "torch.cuda")


def _code(value: object) -> object:
    wrapped = isinstance(value, MethodType | classmethod | staticmethod)
    function = value.__func__ if wrapped else value
    return getattr(function, "__code__", None) if isinstance(function, FunctionType) else None


def _entries() -> Iterator[tuple[str, object, str, object]]:
    """(label, owner, attribute, value) for everything watched."""
    for name in COURSE_MODULES:
        module = sys.modules.get(name) or _try_import(name)
        if module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if attribute.startswith("__"):
                continue
            yield f"{name}.{attribute}", module, attribute, value
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    if not member.startswith("__") and (callable(inner) or _code(inner)):
                        yield f"{name}.{attribute}.{member}", value, member, inner
    from learning import ops

    for op in ops.NAMES:  # each definition module whole, as the course's modules above
        name = f"{ops.__name__}.{op}"
        module = sys.modules.get(name) or _try_import(name)
        for attribute, value in list(vars(module).items()) if module else ():
            if not attribute.startswith("__"):
                yield f"{name}.{attribute}", module, attribute, value
    for op, spec in ops.OPS.items():
        label = f"learning.ops.OPS[{op!r}]"
        for field in dataclasses.fields(spec):
            value = getattr(spec, field.name)
            yield f"{label}.{field.name}", spec, field.name, value
            if field.name in ("baselines", "tolerances"):
                for key, inner in value.items():
                    yield f"{label}.{field.name}[{key}]", value, key, inner
    for name in LIBRARY_OWNERS:
        module = sys.modules.get(name) or _try_import(name)
        if module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if not attribute.startswith("_") and callable(value):
                yield f"{name}.{attribute}", module, attribute, value
    import torch

    for owner, label in ((torch.Tensor, "torch.Tensor"), (torch._C.TensorBase, "torch.Tensor")):
        for attribute, value in list(vars(owner).items()):
            if not attribute.startswith("_") and callable(value):
                yield f"{label}.{attribute}", owner, attribute, value


def _try_import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_MISSING = object()


def _current(owner: object, attribute: object) -> object:
    if isinstance(owner, type | ModuleType):
        return vars(owner).get(attribute, _MISSING)
    if isinstance(owner, Mapping):
        return owner.get(attribute, _MISSING)
    return getattr(owner, attribute, _MISSING)  # an op's spec (a frozen dataclass)


class Snapshot:
    """What the watched names refer to now; :meth:`changes` compares later.

    ``compiling``: the run will build torch.compile baselines. Importing ``torch._dynamo``
    (which compiling does) replaces ``torch.manual_seed`` with a wrapped version of itself, so
    it is imported first and the watch starts from the functions the run will really use;
    otherwise every compiled run would report that change.
    """

    def __init__(self, compiling: bool = False) -> None:
        if compiling:
            import torch._dynamo  # noqa: F401  (its import-time wrapping, before the snapshot)
        self._entries = [
            (label, owner, attribute, value, _code(value))
            for label, owner, attribute, value in _entries()
        ]

    def changes(self) -> list[str]:
        """One phrase per replaced object or code, e.g. ``learning.bench.timers.CpuTimer.prepare
        was replaced``."""
        found: list[str] = []
        for label, owner, attribute, value, code in self._entries:
            now = _current(owner, attribute)
            if now is _MISSING:
                found.append(f"{label} was deleted")
            elif now is not value:
                found.append(f"{label} was replaced")
            elif code is not None and _code(now) is not code:
                found.append(f"{label}'s code was replaced")
        return list(dict.fromkeys(found))


def warning(changes: list[str]) -> str | None:
    """The report's warning for ``changes`` (None when there are none)."""
    if not changes:
        return None
    more = f" and {len(changes) - 12} more" if len(changes) > 12 else ""
    shown = ", ".join(changes[:12]) + more
    return (
        "what this run measured with was changed while it ran, so its figures and verdicts may "
        f"not be this course's: {shown}"
    )
