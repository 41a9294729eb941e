"""The correctness policy, in one place: how an output is compared with the float64 oracle.

Used by the checker (which adds teaching diagnostics on top), the benchmark's gate before any
variant is timed, the tests and the grader. The rule:

* the output must be a plain ``torch.Tensor`` (no subclass, no lazy object) of the expected
  shape and dtype, on the expected device;
* NaN or Inf anywhere never passes (unless the oracle has the same non-finite value there);
* element-wise ``|out - ref| <= atol * max|ref| + rtol * |ref|`` with the op's per-dtype
  :class:`~learning.ops.Tolerance`: ``atol`` is relative to the output's magnitude, so an
  all-zeros or an input-echo output fails at any scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

from learning.ops import Tolerance


@dataclass(frozen=True)
class Verdict:
    """The result of comparing one output (or gradient) with the oracle."""

    passed: bool
    reason: str  # "" when passed; one line naming the fault otherwise
    max_abs_error: float | None = None
    tolerance_used: float | None = None  # worst |err| / bound: 1.0 is at the tolerance
    worst_index: tuple[int, ...] | None = None
    expected_value: float | None = None
    actual_value: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def compare(
    actual: object,
    expected: torch.Tensor,
    tolerance: Tolerance,
    *,
    dtype: torch.dtype,
    label: str = "output",
) -> Verdict:
    """Compare one output with the float64 oracle ``expected`` under ``tolerance``."""
    if type(actual) is not torch.Tensor:
        kind = type(actual).__name__
        if isinstance(actual, torch.Tensor):
            return Verdict(
                False, f"{label} is a tensor subclass ({kind}); return a plain torch.Tensor"
            )
        return Verdict(False, f"{label} is a {kind}, not a torch.Tensor")
    if tuple(actual.shape) != tuple(expected.shape):
        return Verdict(
            False, f"{label} has shape {tuple(actual.shape)}; expected {tuple(expected.shape)}"
        )
    if actual.dtype != dtype:
        return Verdict(
            False,
            f"{label} has dtype {str(actual.dtype).removeprefix('torch.')}; "
            f"expected {str(dtype).removeprefix('torch.')} (the input's dtype)",
        )
    if actual.is_meta or actual.device.type != expected.device.type:
        return Verdict(
            False, f"{label} is on {actual.device}; expected {expected.device.type}"
        )
    if actual.numel() == 0:
        return Verdict(True, "", 0.0, 0.0)

    got = actual.detach().double()
    ref = expected.detach().double()
    finite_ref = torch.isfinite(ref)
    bad = ~torch.isfinite(got) & finite_ref
    if bool(bad.any()):
        index = _unravel(int(bad.flatten().nonzero()[0]), got.shape)
        count = int(bad.sum())
        value = float(got[index])
        return Verdict(
            False,
            f"{label} has {count} non-finite value(s) (first {value} at {list(index)})",
            worst_index=index,
            actual_value=value,
            expected_value=float(ref[index]),
        )

    scale = float(ref[finite_ref].abs().max()) if bool(finite_ref.any()) else 1.0
    scale = scale if scale > 0 else 1.0
    error = (got - ref).abs()
    error = torch.where(finite_ref, error, torch.where(got == ref, 0.0, torch.inf))
    bound = tolerance.atol * scale + tolerance.rtol * ref.abs()
    used = error / bound
    worst_flat = int(used.flatten().argmax())
    worst = _unravel(worst_flat, got.shape)
    max_abs_error = float(error.max())
    tolerance_used = float(used.flatten()[worst_flat])
    verdict = dict(
        max_abs_error=max_abs_error,
        tolerance_used=tolerance_used,
        worst_index=worst,
        expected_value=float(ref[worst]),
        actual_value=float(got[worst]),
    )
    if tolerance_used <= 1.0:
        return Verdict(True, "", **verdict)
    count = int((used > 1.0).sum())
    return Verdict(
        False,
        f"{label}: {count} of {got.numel()} values outside tolerance; worst at {list(worst)}: "
        f"expected {float(ref[worst]):.6g}, got {float(got[worst]):.6g} "
        f"(|error| {float(error[worst]):.3g} > bound {float(bound[worst]):.3g})",
        **verdict,
    )


def compare_all(
    actual: Sequence[object],
    expected: Sequence[torch.Tensor],
    tolerance: Tolerance,
    *,
    dtype: torch.dtype,
    labels: Sequence[str],
) -> list[Verdict]:
    """Compare each output (a forward output, or each gradient) with its oracle."""
    if len(actual) != len(expected):
        return [Verdict(False, f"returned {len(actual)} outputs; expected {len(expected)}")]
    return [
        compare(a, e, tolerance, dtype=dtype, label=label)
        for a, e, label in zip(actual, expected, labels, strict=True)
    ]


def output_labels(spec) -> tuple[str, ...]:
    """Names for an op's compared outputs: ``output`` or ``grad_<input>``."""
    return tuple(f"grad_{name}" for name in spec.wrt) if spec.training else ("output",)


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    index = []
    for dim in reversed(tuple(shape)):
        index.append(flat % dim)
        flat //= dim
    return tuple(reversed(index))
