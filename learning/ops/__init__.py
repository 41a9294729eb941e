"""The op registry: an index of the course's operations by name, and nothing else.

Each op is defined in a package of its own, ``learning/ops/<name>/__init__.py``, as one frozen
:class:`~learning.ops.spec.OpSpec` called ``SPEC`` (the package's other modules hold what only
the checker reads, which no run imports); the type and what the definitions share
are in ``learning/ops/spec.py``. This index names the ops, in the order the tools list them,
and the groups a run can ask for. Nothing here decides what a measurement does: a report
binds each case to its op's definition module and kernels, never to this index (see
``learning.report.binding``), so adding an op or regrouping stales no recorded case.

Importing it imports no torch: the names are here, and a spec is loaded when it is first asked
for (``OPS["softmax"]``), with torch. Loop over :data:`OPS` (or :data:`GROUPS`) instead of
listing the ops anywhere else.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from learning.ops.spec import OpSpec

GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "all": ("add", "sum", "max", "softmax", "rmsnorm", "matmul"),
        "training": ("softmax_train", "rmsnorm_train", "matmul_train"),
        # Not in "all" or "training": their recorded sweeps would gain cases no file records.
        "attention": ("attention", "attention_causal", "attention_train", "attention_causal_train"),
    }
)
NAMES: tuple[str, ...] = tuple(name for members in GROUPS.values() for name in members)
DTYPE_NAMES: tuple[str, ...] = ("float16", "bfloat16", "float32")  # spec.DTYPES' keys


def check_names(op: str, dtype: str | None = None) -> None:
    """A ValueError in one line for an op (or group) or dtype name the course does not have;
    without importing a definition (or torch), so a mistyped command line is refused at once."""
    if op not in GROUPS and op not in NAMES:
        raise ValueError(f"unknown op {op!r}; choose one of {', '.join([*GROUPS, *NAMES])}")
    if dtype is not None and dtype not in DTYPE_NAMES:
        raise ValueError(f"unsupported dtype {dtype!r}; choose one of {', '.join(DTYPE_NAMES)}")


class _Registry(Mapping):
    """``name -> OpSpec`` in index order; each definition module imported when first read."""

    def __getitem__(self, name: str) -> OpSpec:
        if name not in NAMES:
            raise KeyError(name)
        return importlib.import_module(f"{__name__}.{name}").SPEC

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)

    def __contains__(self, name: object) -> bool:
        return name in NAMES

    def __repr__(self) -> str:
        return f"<op registry: {', '.join(NAMES)}>"


OPS: Mapping[str, OpSpec] = _Registry()


def get(name: str) -> OpSpec:
    """The spec called ``name``; a one-line ValueError that lists the choices otherwise."""
    try:
        return OPS[name]
    except KeyError:
        raise ValueError(f"unknown op {name!r}; choose one of {', '.join(NAMES)}") from None


def resolve(name: str) -> tuple[OpSpec, ...]:
    """An op name or a group name (``all``, ``training``, ``attention``) -> the specs it stands
    for."""
    if name in GROUPS:
        return tuple(OPS[n] for n in GROUPS[name])
    if name in NAMES:
        return (OPS[name],)
    choices = ", ".join([*GROUPS, *NAMES])
    raise ValueError(f"unknown op {name!r}; choose one of {choices}")


def exercises() -> dict[str, tuple[OpSpec, ...]]:
    """Kernel exercise name -> the ops it grades (``reductions`` grades ``sum`` and ``max``)."""
    table: dict[str, list[OpSpec]] = {}
    for spec in OPS.values():
        table.setdefault(spec.exercise, []).append(spec)
    return {name: tuple(specs) for name, specs in table.items()}


# What the tools import from the registry by name, and where it lives.
_ELSEWHERE = {
    **dict.fromkeys(
        ("OpSpec", "Tolerance", "DTYPES", "FORWARD_TOLERANCES", "GRADIENT_TOLERANCES",
         "Shape", "Inputs", "numerics_policy", "dtype_from_name", "dtype_name"),
        "spec",
    ),  # fmt: skip
    **dict.fromkeys(("RMSNORM_EPS", "rmsnorm_composition", "rmsnorm_torch_rms_norm"), "rmsnorm"),
}


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        return getattr(importlib.import_module(f"{__name__}.{_ELSEWHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
