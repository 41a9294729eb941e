"""The trace's JSON format, shared by the recorder and the replay: dtype names, how a launch
argument is written down, and how an untrusted value is read back (every type checked).

A trace is ``{"format": 1, "buffers": [...], "launches": [...], "scalars": {...}}``:

* buffer: ``{"id", "kind": "input"|"alloc"|"const"|"opaque", "name", "nbytes", "dtype",
  "fill", "label"}``; an input adds ``"size"`` and ``"stride"`` (its view's geometry), a
  ``const`` buffer's ``fill`` is the one value every element holds;
* launch: ``{"kernel": "<relpath>::<name>" or "outside:<module>.<name>", "grid": [x, y, z],
  "args": {param: value}, "options": {"num_warps": 4, ...}}``;
* value: ``{"tensor": {"buffer": id, "offset": elements, "dtype": name}}``, a JSON scalar
  (a non-finite float as ``{"float": "inf"}``), a string, ``{"dtype": "fp16"}`` for a
  ``tl.dtype``, a list for a tuple, or ``{"unrecordable": why}``;
* scalars: the call's non-tensor inputs (``eps``), which a replay can only reproduce;
* steps (absent when there are none): ``{"after": launches before it, "op": "copy_" |
  "clone" | "_to_copy", "to": view, "from": view}``, each view ``{"buffer", "offset",
  "dtype", "shape", "stride"}`` (:mod:`learning.check.replay.plumbing`); an opaque buffer may
  say what it held before a step first wrote into it, ``"start": {"kind": "alloc"}`` or
  ``{"kind": "const", "fill": value}``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton.language as tl

from learning.check.kernel_guards import _span as span  # noqa: F401 (shared here)
from learning.check.replay.errors import ReplayError

FORMAT = 1
MAX_LAUNCHES = 10_000
MAX_BUFFERS = 10_000
DEFAULT_MAX_BYTES = 16 << 30  # all buffers of one replay together, guards not counted
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_DEPTH = 8  # nesting of tuples in one argument

TORCH_DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.int8, torch.int16, torch.int32, torch.int64,
        torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.bool,
        torch.float8_e4m3fn, torch.float8_e5m2,
    )
}  # fmt: skip
TRITON_DTYPES: dict[str, tl.dtype] = {
    name: tl.dtype(name)
    for name in (*tl.dtype.SINT_TYPES, *tl.dtype.UINT_TYPES, *tl.dtype.FP_TYPES)
}
# Triton's launch options a replay passes on; the values are int, bool or None.
OPTIONS = frozenset(
    {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
     "launch_cooperative_grid", "launch_pdl", "debug"}
)  # fmt: skip
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def dtype_name(dtype: torch.dtype) -> str | None:
    name = str(dtype).removeprefix("torch.")
    return name if TORCH_DTYPES.get(name) is dtype else None


class Unrecordable(Exception):
    """A launch argument the trace format cannot hold (the replay then refuses it)."""


def encode_scalar(value: Any, depth: int = 0) -> Any:
    """A launch's non-tensor argument as JSON; :class:`Unrecordable` for anything else."""
    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not -(2**64) < value < 2**64:
            raise Unrecordable(f"the integer {value} does not fit 64 bits")
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, tl.dtype) and str(value) in TRITON_DTYPES:
        return {"dtype": str(value)}
    if isinstance(value, tuple) and depth < MAX_DEPTH:
        return [encode_scalar(item, depth + 1) for item in value]
    raise Unrecordable(f"a {type(value).__name__} (the trace holds numbers, strings, dtypes)")


def encode_fill(value: Any) -> Any:
    """The one value of a constant buffer (a number), as JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def decode_scalar(value: Any, where: str, depth: int = 0) -> Any:
    """A recorded non-tensor argument back as a Python value, every type checked."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not -(2**64) < value < 2**64:
            raise ReplayError(f"{where}: the integer {value} does not fit 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ReplayError(f"{where}: a non-finite float must be written {{'float': 'inf'}}")
        return value
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise ReplayError(f"{where}: tuples nested deeper than {MAX_DEPTH}")
        return tuple(decode_scalar(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    if isinstance(value, dict) and len(value) == 1:
        ((key, item),) = value.items()
        if key == "float" and item in _NON_FINITE:
            return _NON_FINITE[item]
        if key == "dtype" and isinstance(item, str) and item in TRITON_DTYPES:
            return TRITON_DTYPES[item]
        if key == "unrecordable":
            raise ReplayError(f"{where}: the recorder could not write it down: {text(item)}")
    raise ReplayError(f"{where}: {text(value)} is not a value the trace format holds")


def decode_fill(value: Any, where: str) -> float | int | bool:
    fill = decode_scalar(value, where)
    if isinstance(fill, bool | int | float):
        return fill
    raise ReplayError(f"{where}: a constant buffer's fill must be a number, got {text(fill)}")


def require(condition: bool, where: str, expected: str, got: Any) -> None:
    if not condition:
        raise ReplayError(f"{where}: expected {expected}, got {text(got)}")


def integer(value: Any, where: str, low: int = 0, high: int = 2**63 - 1) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    require(ok, where, f"an integer from {low} to {high}", value)
    return value


def integers(value: Any, where: str, low: int = 0, high: int = 2**63 - 1) -> tuple[int, ...]:
    require(isinstance(value, list) and len(value) <= 16, where, "a list of integers", value)
    return tuple(integer(v, f"{where}[{i}]", low, high) for i, v in enumerate(value))


def torch_dtype(value: Any, where: str) -> torch.dtype:
    require(isinstance(value, str) and value in TORCH_DTYPES, where, "a dtype name", value)
    return TORCH_DTYPES[value]


def text(value: Any, limit: int = 80) -> str:
    """An untrusted value shown in a message: repr, one line, at most ``limit`` characters."""
    shown = repr(value).replace("\n", " ")
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."

