"""Teaching diagnostics for a kernel whose output failed the oracle.

``learning.correctness`` decides pass or fail; nothing here changes a verdict. These functions
only explain a failure: where the wrong values sit (which rows, which columns, only the tail),
whether the output was never written, and whether it matches a typical mistake (the wrong
axis, a softmax without its row-sum term, a dropped K tail ...). Each mistake is recognised by
computing what the mistaken kernel would have produced, in float64, and comparing. The
mistakes of the first ops are written here; an op may keep its own in its definition package
(``learning/ops/attention/check.py``, read through ``learning.check.op_data``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import torch

from learning import correctness, ops
from learning.check import op_data
from learning.check.kernel_guards import unwritten_mask
from learning.ops import OpSpec, Tolerance

Alternative = tuple[str, torch.Tensor, str]  # (output label, what the mistake gives, hint)


def explain(
    spec: OpSpec,
    inputs: dict,
    outputs: tuple,
    expected: tuple[torch.Tensor, ...],
    verdicts: list[correctness.Verdict],
    *,
    dtype: torch.dtype,
    start_here: str,
    pads: Mapping[str, int] | None = None,
    extra: Mapping[str, tuple[torch.dtype, str]] | None = None,
) -> list[str]:
    """Hints, most specific first, for the failed ``verdicts`` of one call; ``pads``: the
    inputs whose rows lay further apart than their width (row stride minus width); ``extra``:
    the outputs after the op's own (a wrapper's, such as the attention forward's saved
    log-sum-exp), each with the dtype it must have and why.

    A hint that names a fault is given only on evidence of that fault: a failed output that
    matches what the mistaken kernel computes, or a pattern only that fault leaves (row 0
    right and later rows wrong, where rows lie apart). Where the values are wrong is said
    after them."""
    extra = dict(extra or {})
    labels = (*correctness.output_labels(spec), *extra)
    dtypes = {label: extra[label][0] if label in extra else dtype for label in labels}
    failed = {label for index, label in enumerate(labels)
              if index >= len(verdicts) or not verdicts[index].passed}  # fmt: skip
    hints: list[str] = []
    for label, alternative, hint in _alternatives(spec, inputs, dtype):
        if label not in failed:
            continue
        index = labels.index(label)
        tolerance = spec.tolerances[dtypes[label]]
        if index < len(outputs) and _matches(outputs[index], alternative, tolerance):
            hints.append(hint)
    never = [
        label
        for label, got, ref in zip(labels, outputs, expected, strict=False)
        if _never_written(got, ref)
    ]
    if never:
        hints.append(
            f"{', '.join(never)} {'was' if len(never) == 1 else 'were'} never written: "
            "still the NaN the checker filled in. If you have not started, this exercise is not "
            f"done yet: start with the TODOs in {start_here}. Otherwise check that the grid "
            "launches programs and that tl.store writes to the output pointer"
        )
    for label, got, ref, verdict in zip(labels, outputs, expected, verdicts, strict=False):
        if verdict.passed or label in never:
            continue
        if type(got) is not torch.Tensor:
            hints.append("return the torch.Tensor your kernel stored into, as it is")
            continue
        if tuple(got.shape) != tuple(ref.shape):
            hints.append(_shape_hint(spec, label, tuple(got.shape), tuple(ref.shape), inputs))
            continue
        if label in extra:
            hint = _precision_hint(label, got, *extra[label], dtype)
            if hint:
                hints.append(hint)
                continue
        if label not in extra and got.dtype != dtype:
            hints.append(
                "allocate the output with the input's dtype (torch.empty_like(x)); tl.store "
                "converts to the pointer's element type"
            )
            continue
        tolerance = spec.tolerances[dtypes[label]]
        hints += _row_stride_hint(label, got, ref, tolerance, pads or {})
        hints += _value_hints(label, got, ref, inputs, tolerance)
    return hints


def steps_by_width(
    spec: OpSpec, outputs: tuple, expected: tuple[torch.Tensor, ...], *, dtype: torch.dtype,
    pads: Mapping[str, int] | None,
) -> bool:
    """Does some output show the row-stride fault (see :func:`_row_stride_hint`)? Then what
    lies past a row says nothing more: the kernel read the gap between rows, not past a row's
    end, and the checker does not ask."""
    tolerance = spec.tolerances[dtype]
    return any(
        type(got) is torch.Tensor and tuple(got.shape) == tuple(ref.shape)
        and bool(_row_stride_hint("output", got, ref, tolerance, pads or {}))
        for got, ref in zip(outputs, expected, strict=False)
    )  # fmt: skip


# --------------------------------------------------------------------------- where it is wrong


def _value_hints(label, got, ref, inputs, tolerance) -> list[str]:
    hints: list[str] = []
    got64, ref64 = got.detach().double(), ref.detach().double()
    finite_ref = torch.isfinite(ref64)
    unwritten = unwritten_mask(got)
    if unwritten is not None:
        unwritten &= finite_ref
    if unwritten is not None and bool(unwritten.any()):
        hints.append(
            f"{label} was never written {_where(unwritten)}{_tail_note(unwritten, rows=True)}"
        )
    non_finite = ~torch.isfinite(got64) & finite_ref
    if unwritten is not None:
        non_finite &= ~unwritten
    if bool(non_finite.any()):
        hints.append(f"non-finite values {_where(non_finite)}{_tail_note(non_finite)}")
    if bool((got64 == 0).all()) and bool((ref64 != 0).any()):
        hints.append(
            f"{label} is all zeros: check that tl.store writes the result (not a fresh "
            "accumulator) to the output pointer"
        )
    for name, value in inputs.items():
        if torch.is_tensor(value) and value.shape == got.shape and torch.equal(
            value.detach().double(), got64
        ):
            hints.append(f"{label} equals the input {name}: the kernel copied its input")
    bound = tolerance.atol * _scale_of(ref64) + tolerance.rtol * ref64.abs()
    wrong = ((got64 - ref64).abs() > bound) | non_finite
    if unwritten is not None:
        wrong &= ~unwritten
    if bool(wrong.any()):
        hints.append(f"wrong values {_where(wrong)}{_tail_note(wrong)}")
    return hints


def _row_stride_hint(label, got, ref, tolerance, pads: Mapping[str, int]) -> list[str]:
    """Row 0 right and later rows wrong, where the rows lay further apart than their width:
    the kernel stepped from row to row by the width. Rows never written are not evidence
    (a grid of one program leaves them so)."""
    if not pads or got.dim() == 0 or got.shape[0] < 2:
        return []
    got64, ref64 = got.detach().double(), ref.detach().double()
    bound = tolerance.atol * _scale_of(ref64) + tolerance.rtol * ref64.abs()
    wrong = ~((got64 - ref64).abs() <= bound)  # NaN counts as wrong
    unwritten = unwritten_mask(got)
    if unwritten is not None:
        wrong &= ~unwritten
    # rows of the last dimension where there are more than two (a head's query rows)
    by_row = (wrong.reshape(-1, wrong.shape[-1]) if wrong.dim() > 2
              else wrong.reshape(wrong.shape[0], -1)).any(dim=1)  # fmt: skip
    if bool(by_row[0]) or not bool(by_row[1:].any()):
        return []
    apart = ", ".join(f"{name}'s rows lie width + {pad} apart" for name, pad in pads.items())
    return [
        f"{label}: row 0 is right and later rows are wrong, on inputs whose rows lie further "
        f"apart than their width ({apart}): the kernel steps from one row to the next by the "
        "width. Step by the row stride the wrapper passes (x.stride(0), x_row_stride), never "
        "by N"
    ]


def _precision_hint(label: str, got: torch.Tensor, wanted: torch.dtype, why: str,
                    dtype: torch.dtype) -> str | None:  # fmt: skip
    """An output that must be ``wanted`` (wider than the inputs' ``dtype``) allocated in
    another dtype, or holding only values ``dtype`` can hold: rounded on its way to memory."""
    def name(kind):
        return str(kind).removeprefix("torch.")

    if got.dtype != wanted:
        return (f"{label} is {name(got.dtype)}; it must be {name(wanted)}: {why}. Allocate it "
                f"as {name(wanted)}")  # fmt: skip
    values = got.detach()[torch.isfinite(got.detach())]
    if dtype == wanted or not values.numel() or not torch.equal(values.to(dtype).to(wanted),
                                                                values):  # fmt: skip
        return None
    return (f"{label} holds only values a {name(dtype)} can hold: it was rounded to "
            f"{name(dtype)} on its way to memory (a {name(dtype)} buffer, or a cast before "
            f"the store). {why}. Keep it {name(wanted)} from the accumulator to the store")


def _never_written(got: object, ref: torch.Tensor) -> bool:
    """Does ``got`` still hold the checker's fill wherever the oracle is finite?"""
    if type(got) is not torch.Tensor or tuple(got.shape) != tuple(ref.shape):
        return False
    unwritten = unwritten_mask(got)
    finite = torch.isfinite(ref)
    return unwritten is not None and bool(finite.any()) and bool(unwritten[finite].all())


def _scale_of(ref: torch.Tensor) -> float:
    finite = ref[torch.isfinite(ref)]
    scale = float(finite.abs().max()) if finite.numel() else 1.0
    return scale if scale > 0 else 1.0


def _where(mask: torch.Tensor) -> str:
    """'in rows 3-5 (3 of 37), columns 768-780 (13 of 781)' for a boolean mask."""
    if mask.dim() == 1:
        return f"in rows {_ranges(mask)}"
    if mask.dim() == 0:
        return "at the one value"
    if mask.dim() != 2:  # by dimension: attention's b, h, the query rows n, the columns d
        spans = [_ranges(mask.transpose(0, dim).reshape(mask.shape[dim], -1).any(dim=1))
                 for dim in range(mask.dim())]  # fmt: skip
        return f"at {int(mask.sum())} positions, indices by dimension: {'; '.join(spans)}"
    return f"in rows {_ranges(mask.any(dim=1))}, columns {_ranges(mask.any(dim=0))}"


def _ranges(mask: torch.Tensor) -> str:
    indices = mask.nonzero().flatten().tolist()
    total = mask.numel()
    if len(indices) == total:
        return f"0-{total - 1} (all {total})"
    spans: list[str] = []
    start = previous = indices[0]
    for index in [*indices[1:], None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if index is not None:
            start = previous = index
    shown = ", ".join(spans[:4]) + (", ..." if len(spans) > 4 else "")
    return f"{shown} ({len(indices)} of {total})"


def _tail_note(mask: torch.Tensor, rows: bool = False) -> str:
    """Explain a wrong region that is exactly the end of every row (or, with ``rows``, the
    last rows of a one-value-per-row output: programs that never ran)."""
    if mask.dim() > 2:
        return ""
    columns = mask.any(dim=0) if mask.dim() == 2 else mask
    indices = columns.nonzero().flatten()
    if not len(indices):
        return ""
    first, count = int(indices[0]), columns.numel()
    is_suffix = first > 0 and int(indices[-1]) == count - 1 and len(indices) == count - first
    if not is_suffix:
        return ""
    if mask.dim() == 2:
        return (
            f": only the end of each row, from column {first}. The last block of columns is "
            f"partial: cover it (BLOCK >= N, or loop over the row) and mask it "
            f"(offsets < n_cols)"
        )
    if not rows:
        return ""
    return (
        f": only the last {count - first} rows. Launch one program per row "
        f"(grid = (n_rows,)) or cover every row in the loop"
    )


def _shape_hint(spec, label, got_shape, ref_shape, inputs) -> str:
    if spec.reduces_rows and len(got_shape) == 1 and got_shape[0] == inputs["x"].shape[1]:
        return (
            f"{label} has one value per column: that is a reduction over the wrong axis "
            "(dim 0). Reduce over the last dimension: one value per row"
        )
    if len(got_shape) == 2 and got_shape == ref_shape[::-1]:
        return f"{label} is transposed: allocate it as {ref_shape} and index it row-major"
    return f"allocate {label} with the shape {ref_shape}"


# --------------------------------------------------------------------------- typical mistakes


def _matches(got: object, alternative: torch.Tensor, tolerance: Tolerance) -> bool:
    """Does ``got`` agree with what a mistaken kernel produces (within a loose tolerance)?
    Where the mistake gives NaN or an infinity, ``got`` must hold the same there."""
    if type(got) is not torch.Tensor or tuple(got.shape) != tuple(alternative.shape):
        return False
    loose = Tolerance(atol=4 * tolerance.atol, rtol=4 * tolerance.rtol)
    finite = torch.isfinite(alternative)
    if not bool(finite.all()):
        got64 = got.detach().double()
        same = all(torch.equal(kind(got64), kind(alternative))
                   for kind in (torch.isnan, torch.isposinf, torch.isneginf))  # fmt: skip
        if not same:
            return False
        got, alternative = got[finite], alternative[finite]
    verdict = correctness.compare(got, alternative, loose, dtype=got.dtype)
    return verdict.passed


def _alternatives(spec: OpSpec, inputs: dict, dtype: torch.dtype) -> Iterator[Alternative]:
    make = _MISTAKES.get(spec.name)
    if make is None:
        return iter(())
    as64 = {k: v.detach().double() if torch.is_tensor(v) else v for k, v in inputs.items()}
    return make(as64, dtype)


def _reduction_mistakes(reduce: Callable) -> Callable:
    def mistakes(inputs, dtype):
        x = inputs["x"]
        rows, cols = x.shape
        if cols >= rows:
            yield (
                "output",
                reduce(x.T[:rows], dim=-1),
                "the output matches a reduction down the columns (dim 0): program i read "
                "column i. Program i must read row i: x_ptr + row * stride_row + cols",
            )
        block = 16
        while block < cols:
            yield (
                "output",
                reduce(x[:, :block], dim=-1),
                f"the output matches a reduction over only the first {block} columns of each "
                f"row: loop over the row in blocks until n_cols (or make BLOCK >= n_cols)",
            )
            block *= 2

    return mistakes


def _softmax_mistakes(inputs, dtype):
    x = inputs["x"]
    shifted = (x - x.amax(dim=-1, keepdim=True)).exp()
    yield (
        "output",
        torch.softmax(x, dim=0),
        "the output matches a softmax down the columns (dim 0): normalise over each row",
    )
    yield "output", shifted, "the output is exp(x - max) without the division by the row sum"
    # exp(x) / sum(exp(x)) without the max, computed as a kernel would (float32, or the input
    # dtype): NaN wherever exp overflowed. Only an output that holds NaN exactly there and is
    # right elsewhere shows the missing max; NaN from anywhere else is not this fault.
    for compute in dict.fromkeys((torch.float32, dtype)):
        numerator = x.to(compute).exp()
        if bool(torch.isfinite(numerator).all()):
            continue  # no overflow on these inputs: the mistake gives the right answer
        yield (
            "output",
            (numerator / numerator.sum(dim=-1, keepdim=True)).double(),
            f"the output is NaN exactly where exp(x) overflows {str(compute)[6:]} and right "
            "elsewhere: subtract the row max before exponentiating, softmax(x) = "
            "softmax(x - max(x)) is exact and never overflows",
        )


def _softmax_train_mistakes(inputs, dtype):
    x, dy = inputs["x"], inputs["grad_output"]
    y = torch.softmax(x, dim=-1)
    yield (
        "grad_x",
        y * dy,
        "grad_x matches y * dy: it is missing the row-sum term. "
        "dx = y * (dy - sum(y * dy, over the row))",
    )
    yield (
        "grad_x",
        y * (dy - dy.sum(dim=-1, keepdim=True)),
        "grad_x uses sum(dy) over the row; the term is sum(y * dy)",
    )
    yield "grad_x", dy, "grad_x equals dy: the backward kernel passed the gradient through"


def _rmsnorm_parts(inputs):
    x, residual, weight, eps = (inputs[k] for k in ("x", "residual", "weight", "eps"))
    h = x + residual
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return x, residual, weight, eps, h, inv_rms


def _rmsnorm_mistakes(inputs, dtype):
    x, residual, weight, eps, h, inv_rms = _rmsnorm_parts(inputs)
    yield (
        "output",
        x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight,
        "the output matches RMSNorm of x alone: add the residual first (h = x + residual)",
    )
    yield "output", h * inv_rms, "the output is not multiplied by weight"
    yield (
        "output",
        h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True)) * weight,
        "the output matches RMSNorm without eps: add eps inside the rsqrt, "
        "rsqrt(mean(h^2) + eps), using the eps argument",
    )
    yield (
        "output",
        h * weight / (h.pow(2).mean(dim=-1, keepdim=True).sqrt() + eps),
        "eps is added outside the square root: rsqrt(mean(h^2) + eps)",
    )
    if dtype != torch.float32:
        h_low = h.to(dtype).double()  # h rounded to the input dtype before the mean
        yield (
            "output",
            h_low * torch.rsqrt(h_low.pow(2).mean(dim=-1, keepdim=True) + eps) * weight,
            f"h = x + residual was rounded to {str(dtype).removeprefix('torch.')} before "
            "the mean: add and accumulate in float32 (x.to(tl.float32))",
        )


def _rmsnorm_train_mistakes(inputs, dtype):
    x, residual, weight, eps, h, inv_rms = _rmsnorm_parts(inputs)
    dy = inputs["grad_output"]
    contribution = dy * h * inv_rms  # each row's share of grad_weight
    rows = contribution.shape[0]
    prefix = contribution.cumsum(dim=0)
    for row in range(rows - 1):
        yield (
            "grad_weight",
            prefix[row],
            f"grad_weight holds only rows 0-{row}'s contribution: the per-row terms "
            "dy * h * inv_rms must be summed over ALL rows (a partial per program, then a "
            "reduction over the programs)",
        )
        yield (
            "grad_weight",
            prefix[-1] - prefix[row],
            f"grad_weight holds only rows {row + 1}-{rows - 1}'s contribution: each program "
            "overwrote grad_weight with its own partial sum; sum the partials over all rows",
        )
    yield (
        "grad_x",
        dy * weight * inv_rms,
        "grad_x is missing the term from inv_rms depending on h: "
        "dx = inv_rms * (w*dy - h * mean(w*dy*h) * inv_rms^2)",
    )


def _matmul_mistakes(inputs, dtype):
    a, b = inputs["a"], inputs["b"]
    m, k = a.shape
    n = b.shape[1]
    if m == k:
        yield "output", a.T @ b, "the output matches A^T @ B: A was read transposed"
    if k == n:
        yield "output", a @ b.T, "the output matches A @ B^T: B was read transposed"
    for block_k in (16, 32, 64, 128):
        kept = k - k % block_k
        if 0 < kept < k:
            yield (
                "output",
                a[:, :kept] @ b[:kept],
                f"the output matches A @ B over only the first {kept} of K={k}: the K loop "
                f"dropped the last {k - kept}. Loop to cdiv(K, BLOCK_K) and mask the loads "
                f"with offs_k < K - k * BLOCK_K",
            )


def _matmul_train_mistakes(inputs, dtype):
    a, b, grad_c = inputs["a"], inputs["b"], inputs["grad_output"]
    m, k = a.shape
    n = b.shape[1]
    if n == k:
        yield ("grad_a", grad_c @ b, "grad_a matches dC @ B: B must be read transposed, "
               "dA = dC @ B^T (pass b.T: the same memory, strides swapped)")  # fmt: skip
    if m == k:
        yield ("grad_b", a @ grad_c, "grad_b matches A @ dC: A must be read transposed, "
               "dB = A^T @ dC (pass a.T)")  # fmt: skip
    if m == k and n == k:
        yield ("grad_a", grad_c @ a, "grad_a matches dC @ A: dA multiplies dC by B^T, the "
               "operands of the two gradient products were swapped")  # fmt: skip
    for block in (16, 32, 64, 128):
        kept = n - n % block
        if 0 < kept < n:
            yield ("grad_a", grad_c[:, :kept] @ b[:, :kept].T,
                   f"grad_a matches dC @ B^T over only the first {kept} of N={n}: the "
                   "reduction loop of dA (over N) dropped its tail; loop to cdiv and mask "
                   "the last step")  # fmt: skip
        kept = m - m % block
        if 0 < kept < m:
            yield ("grad_b", a[:kept].T @ grad_c[:kept],
                   f"grad_b matches A^T @ dC over only the first {kept} of M={m} rows: the "
                   "reduction of dB (over M, the token count) dropped its tail; loop to "
                   "cdiv(M, BLOCK_K) and mask the last step")  # fmt: skip
    # split-K: the first slice's partial sum alone (slices are whole steps of BLOCK_K rows)
    firsts = {_cdiv(_cdiv(m, splits), block) * block for splits in range(2, 9)
              for block in (16, 32, 64)}  # fmt: skip
    for length in sorted(n for n in firsts if n < m):
        yield ("grad_b", a[:length].T @ grad_c[:length],
               f"grad_b matches the first reduction slice alone (rows 0-{length - 1} of M): "
               "with split-K each slice writes a partial sum, and all of them must be added "
               "(a second kernel over the partials)")  # fmt: skip


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _add_mistakes(inputs, dtype):
    x = inputs["x"]
    yield "output", x + x, "the output is x + x: the second load reads x_ptr, not y_ptr"
    yield "output", x, "the output is x alone: y was never added"


_WRITTEN_HERE: dict[str, Callable] = {
    "add": _add_mistakes,
    "sum": _reduction_mistakes(torch.sum),
    "max": _reduction_mistakes(torch.amax),
    "softmax": _softmax_mistakes,
    "softmax_train": _softmax_train_mistakes,
    "rmsnorm": _rmsnorm_mistakes,
    "rmsnorm_train": _rmsnorm_train_mistakes,
    "matmul": _matmul_mistakes,
    "matmul_train": _matmul_train_mistakes,
}


class _Mistakes(Mapping):
    """op name -> its typical mistakes: those written above, else the ``mistakes`` its
    definition package keeps (``learning.check.op_data``)."""

    def __getitem__(self, name: str) -> Callable:
        if name in _WRITTEN_HERE:
            return _WRITTEN_HERE[name]
        found = op_data.value(name, "mistakes")
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter([name for name in ops.NAMES if name in self])

    def __len__(self) -> int:
        return len(list(self))


_MISTAKES: Mapping[str, Callable] = _Mistakes()
