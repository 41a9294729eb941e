"""Three changes to Triton's CPU interpreter, so that a graded run on the CPU sees what a GPU does.

The checker grades kernels on the CPU through Triton's interpreter
(``triton/runtime/interpreter.py``, Triton 3.6). In three ways the interpreter does not do what
a compiled kernel does, and each would let a kernel pass on the CPU that fails on a GPU, or
fail one that passes there:

* **Rounding to 16 bits.** A compiled kernel converts a float32 value to bfloat16 by rounding
  to the nearest bfloat16 (ties to the even one), as PyTorch does. The interpreter cuts the
  low 16 bits off instead (``InterpreterBuilder.cast_impl`` calls ``_convert_float`` with no
  rounding mode), so about a quarter of the results of a bfloat16 kernel that computes in
  float32 came out one step smaller in magnitude than PyTorch's. Its ``_convert_float`` is
  also wrong for an explicit ``.to(..., fp_downcast_rounding="rtz")``: a NaN whose payload
  lies in the low bits becomes infinity, and a float32 too large for float16 becomes a NaN
  where the GPU stores float16's largest value. :func:`install` replaces these conversions
  (float32 and float64 to bfloat16 and float16, in both rounding modes, and bfloat16 to and
  from the other types) with ones that store exactly the bits a GPU stores. A NaN stays a
  NaN, though its payload may differ from the GPU's. Float32 to float16 in the default mode
  was already right (NumPy rounds to nearest even).
* **The order of programs.** A GPU runs the programs of one launch at once, in no order
  anyone can rely on. The interpreter runs them one after another, program 0 first. A kernel
  whose program 1 reads what program 0 stored would always pass on the CPU, yet on a GPU
  program 1 may read that memory before program 0 has written it. In a graded run the
  programs of a launch run in a shuffled order instead, in which program 0 is never first and
  the last program never last: the same order for the same grid within one check run (so a
  replay stores the same bits as the call it replays, atomics included), and a different
  order in the next run. A kernel whose programs do not depend on each other gives the same
  result in any order, and so does one whose programs combine their results with atomics or
  in a second launch.

* **The precision of** ``tl.dot``. On float32 tiles ``tl.dot`` runs on the tensor cores in
  TF32 unless it is asked for ``input_precision="ieee"`` (or ``"tf32x3"``): TF32 is Triton's
  default, and the tensor cores read only the top 10 of each operand's 23 mantissa bits (the
  low 13 are ignored, not rounded: Triton issue 4574). The interpreter multiplies in full
  float32 whatever it is asked, so a float32 GEMM that forgot ``input_precision="ieee"``
  passed on the CPU and misses float32's tolerance on a GPU by about a hundred times. In a
  graded run a TF32 ``tl.dot`` drops those 13 bits of each operand first. The interpreter's
  bfloat16 ``tl.dot`` multiplies the raw bit patterns as integers (Triton issue 11584); in a
  graded run it multiplies the bfloat16 values, as the tensor cores do: exactly, summed in
  float32. :class:`exact_dots` turns the TF32 change off for a while (the checker reruns a
  failing float32 call so to say that TF32 is what failed it).

* **Arithmetic on bfloat16.** The interpreter holds bfloat16 values as their raw bits
  (uint16) and hands those to NumPy as integers: ``x + y`` on two bfloat16 tensors added the
  bit patterns (wrong in nearly every element), ``tl.maximum`` and ``tl.max`` compared them as
  integers (every negative value above every positive one), ``tl.sum`` summed them. A kernel
  that computes straight on bfloat16, right on a GPU, failed on the CPU. In a graded run every
  floating-point operation, comparison, reduction and scan on bfloat16 computes on the values
  and rounds each result to nearest even, as a GPU's bfloat16 instructions do; a bfloat16
  ``tl.sum`` adds pairwise, rounding each partial sum, as a GPU's reduction tree does.

Only the checker's processes install these changes; the course's tests and lessons run the
interpreter as it is.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import numpy as np

ORDER_SEED_VARIABLE = "LEARNING_GRID_ORDER_SEED"

_installed: list[tuple[object, str, object]] = []  # (owner, name, the original) once installed
# Changes the worker can switch off for a while, to rerun a failing call for a hint: the
# shuffled order of programs ("order"), TF32's dropped bits ("tf32").
_off = {"order": False, "tf32": False}


def install() -> None:
    """Patch the interpreter's 16-bit conversions and its order of programs (once a process)."""
    if _installed:
        return
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    names = ("cast_impl", "create_fp_to_fp", "set_grid_dim", "set_grid_idx", "create_dot",
             *_BF16_ARITHMETIC, *_BF16_COMPARISONS)  # fmt: skip
    _installed.extend((builder, name, vars(builder)[name]) for name in names)
    reduce_ops, scan_ops = interpreter.ReduceOps, interpreter.ScanOps
    _installed.extend((owner, method.__name__, method) for owner, method in (
        (reduce_ops, reduce_ops.sum), (reduce_ops, reduce_ops.min_max),
        (scan_ops, scan_ops.cumsum)))  # fmt: skip
    _install_conversions(interpreter)
    _install_order(interpreter, _order_seed())
    _install_dot(interpreter)
    _install_bfloat16_arithmetic(interpreter)


def uninstall() -> None:
    """Put the interpreter's own methods back (for tests that install the changes for a while)."""
    while _installed:
        owner, name, original = _installed.pop()
        setattr(owner, name, original)


@contextlib.contextmanager
def _switched_off(change: str) -> Iterator[None]:
    before, _off[change] = _off[change], True
    try:
        yield
    finally:
        _off[change] = before


def in_order() -> contextlib.AbstractContextManager[None]:
    """Within this block the programs of a launch run 0, 1, 2 ... as the interpreter's own
    loop runs them (the checker compares with this to say that a failure depends on order)."""
    return _switched_off("order")


def exact_dots() -> contextlib.AbstractContextManager[None]:
    """Within this block a float32 ``tl.dot`` asked for TF32 multiplies in full float32, as the
    interpreter's own does (the checker compares with this to say that TF32 failed a call)."""
    return _switched_off("tf32")


# --------------------------------------------------------------------------- conversions


def bfloat16_bits(values: np.ndarray, toward_zero: bool = False) -> np.ndarray:
    """The bits (uint16) of ``values`` (float32 or float64) rounded to bfloat16: to nearest,
    ties to even, or toward zero."""
    values = np.asarray(values)
    if values.dtype == np.float64:
        values = _float32_round_to_odd(values)  # exact for a second rounding to fewer bits
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    if toward_zero:
        out = bits >> 16
    else:
        out = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = np.where(nan, (bits >> 16) | 0x0040, out)  # a quiet NaN of the same sign
    return out.astype(np.uint16)


def float16_values(values: np.ndarray, toward_zero: bool = False) -> np.ndarray:
    """``values`` (float32 or float64) rounded to float16: to nearest, ties to even (NumPy's
    own conversion), or toward zero (past the largest float16, its largest value)."""
    values = np.asarray(values)
    with np.errstate(over="ignore"):
        out = values.astype(np.float16)
    if toward_zero:
        out = _step_toward_zero(out, values, np.uint16)
    return out


def _float32_round_to_odd(values: np.ndarray) -> np.ndarray:
    """float64 to float32 rounded toward zero, with the last bit set where that was inexact:
    rounding this once more to a format of at least two bits fewer gives the correctly
    rounded result of ``values`` (no double rounding)."""
    with np.errstate(over="ignore"):
        out = values.astype(np.float32)
    out = _step_toward_zero(out, values, np.uint32)
    inexact = (out.astype(np.float64) != values) & ~np.isnan(values)
    bits = out.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32)


def _step_toward_zero(rounded: np.ndarray, exact: np.ndarray, uint) -> np.ndarray:
    """``rounded`` (to nearest) moved one step toward zero where it is larger in magnitude
    than ``exact``: the result of rounding toward zero."""
    with np.errstate(invalid="ignore"):
        over = np.abs(rounded.astype(np.float64)) > np.abs(exact.astype(np.float64))
    bits = rounded.view(uint).copy()
    bits[over] -= 1  # one step toward zero in magnitude, for either sign
    return bits.view(rounded.dtype)


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) as float32 values: exact."""
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def _install_conversions(interpreter) -> None:
    import triton.language as tl

    builder = interpreter.InterpreterBuilder
    original_cast, original_fp_to_fp = builder.cast_impl, builder.create_fp_to_fp
    rtz, rtne = interpreter._ir.ROUNDING_MODE.RTZ, interpreter._ir.ROUNDING_MODE.RTNE
    wide = (tl.float32, tl.float64)

    def convert(data, source, target, toward_zero):
        """The converted data, or None where the interpreter's own conversion is kept."""
        if source == tl.bfloat16 and target != tl.bfloat16:
            data, source = bfloat16_to_float32(data), tl.float32
            if target == tl.float32:
                return data
            if target != tl.float16:
                return None  # float32 to the target: the interpreter's own (NumPy's) cast
        if source in wide or (source.is_int() and target == tl.bfloat16):
            if source.is_int():  # exact in float64 up to 2**53
                data = data.astype(np.float64)
            if target == tl.bfloat16:
                return bfloat16_bits(data, toward_zero)
            if target == tl.float16:
                return float16_values(data, toward_zero)
        return None

    def cast_impl(self, src, dst_type):
        source, target = src.dtype.scalar, dst_type.scalar
        converted = convert(src.data, source, target, False)
        if converted is None and source == tl.bfloat16 and target != tl.bfloat16:
            float32 = interpreter.TensorHandle(bfloat16_to_float32(src.data), tl.float32)
            return original_cast(self, float32, dst_type)
        if converted is None:
            return original_cast(self, src, dst_type)
        return interpreter.TensorHandle(converted, target)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        source, target = src.dtype.scalar, dst_type.scalar
        converted = None
        if rounding_mode in (rtz, rtne) and source in wide + (tl.bfloat16,):
            converted = convert(src.data, source, target, rounding_mode == rtz)
        if converted is None:
            return original_fp_to_fp(self, src, dst_type, rounding_mode)
        return interpreter.TensorHandle(converted, target)

    builder.cast_impl, builder.create_fp_to_fp = cast_impl, create_fp_to_fp


# --------------------------------------------------------------------------- program order


def _order_seed() -> int | None:
    text = os.environ.get(ORDER_SEED_VARIABLE, "").strip()
    return int(text) if text.isdigit() else None


def program_order(grid: tuple[int, int, int], seed: int | None) -> list[int]:
    """The order (flat program numbers, ``(x * ny + y) * nz + z``) in which a launch of
    ``grid`` runs its programs: a shuffle drawn from ``seed`` and the grid in which program 0
    never runs first and the last program never runs last (the two orders a kernel most often
    takes for granted: "program 0 sets up", "the last program finishes"), so the order is
    never the interpreter's own; reversed when there is no seed or the grid is too small to
    shuffle so."""
    count = grid[0] * grid[1] * grid[2]
    order = list(range(count))
    if seed is not None and count >= 3:
        draw = random.Random(f"{seed}/{grid}")
        for _ in range(_ORDER_DRAWS):  # at least half the shuffles qualify: 64 misses are ~1e-19
            draw.shuffle(order)
            if order[0] != 0 and order[-1] != count - 1:
                return order
        order.sort()
    order.reverse()
    return order


_ORDER_DRAWS = 64


def _install_order(interpreter, seed: int | None) -> None:
    """The interpreter's loop visits (x, y, z) in order and announces each program with
    ``set_grid_idx``: the k-th announced program becomes the k-th of :func:`program_order`."""
    builder = interpreter.InterpreterBuilder
    original_dim, original_idx = builder.set_grid_dim, builder.set_grid_idx
    orders: dict[tuple, list[int]] = {}

    def set_grid_dim(self, nx, ny, nz):
        original_dim(self, nx, ny, nz)
        grid = (nx, ny, nz)
        if grid not in orders:
            orders[grid] = program_order(grid, seed)
        self._program_order = None if _off["order"] else orders[grid]

    def set_grid_idx(self, x, y, z):
        order = getattr(self, "_program_order", None)
        if order is not None:
            ny, nz = self.grid_dim[1], self.grid_dim[2]
            flat = order[(x * ny + y) * nz + z]
            x, y, z = flat // (ny * nz), flat // nz % ny, flat % nz
        original_idx(self, x, y, z)

    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx


# --------------------------------------------------------------------------- bfloat16 arithmetic

# The interpreter keeps bfloat16 as its raw bits (uint16) and hands them to NumPy as integers:
# ``x + y`` on two bfloat16 tensors added bit patterns, ``tl.max`` compared them as integers
# (every negative value above every positive one) and ``tl.sum`` summed them. In a graded run
# each of these operations computes on the values, in float64, and rounds the result to
# bfloat16 to nearest even: what a GPU's bfloat16 instructions give for one operation.
_BF16_ARITHMETIC = (
    "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem",
    "create_precise_divf", "create_minimumf", "create_minnumf", "create_maximumf",
    "create_maxnumf", "create_fma", "create_clampf", "create_cos", "create_exp", "create_exp2",
    "create_floor", "create_ceil", "create_log", "create_log2", "create_precise_sqrt",
    "create_sqrt", "create_sin", "create_rsqrt", "create_erf",
)  # fmt: skip
_BF16_COMPARISONS = tuple(
    f"create_fcmp{kind}{order}" for kind in "OU" for order in ("LT", "GT", "LE", "GE", "EQ", "NE")
)


def _install_bfloat16_arithmetic(interpreter) -> None:
    import triton.language as tl

    handle = interpreter.TensorHandle

    def is_bf16(arg) -> bool:
        return isinstance(arg, handle) and arg.dtype.scalar == tl.bfloat16

    def widened(arg):
        return handle(bfloat16_to_float32(arg.data).astype(np.float64), tl.float64)

    def patched(name: str, original, comparison: bool):
        def method(self, *args):
            if not any(is_bf16(arg) for arg in args):
                return original(self, *args)
            out = original(self, *(widened(a) if is_bf16(a) else a for a in args))
            if comparison:  # 0 or 1, held as the interpreter holds a bfloat16 comparison's
                return handle(np.asarray(out.data).astype(np.uint16), tl.bfloat16)
            return handle(bfloat16_bits(np.asarray(out.data, dtype=np.float64)), tl.bfloat16)

        method.__name__ = name
        return method

    builder = interpreter.InterpreterBuilder
    for names, comparison in ((_BF16_ARITHMETIC, False), (_BF16_COMPARISONS, True)):
        for name in names:
            setattr(builder, name, patched(name, vars(builder)[name], comparison))

    reduce_ops, scan_ops = interpreter.ReduceOps, interpreter.ScanOps
    original_sum, original_min_max = reduce_ops.sum, reduce_ops.min_max
    original_cumsum = scan_ops.cumsum

    def values(tensor) -> np.ndarray:
        return bfloat16_to_float32(tensor.handle.data)

    def sum_(self, input):
        if input.dtype != tl.bfloat16:
            return original_sum(self, input)
        return self.to_tensor(_bfloat16_tree_sum(values(input), self.axis, self.keep_dims),
                              input.dtype)  # fmt: skip

    def min_max(self, input, val_reduce_op, idx_reduce_op=None):
        first = input[0] if isinstance(input, tuple) else input
        if first.dtype != tl.bfloat16:
            return original_min_max(self, input, val_reduce_op, idx_reduce_op)
        as_float = self.to_tensor(values(first), tl.float32)
        found = original_min_max(self, as_float, val_reduce_op, idx_reduce_op)
        value = found[0] if isinstance(found, tuple) else (found if val_reduce_op else None)
        if value is not None:  # the selected values, exact, back in bfloat16
            value = self.to_tensor(bfloat16_bits(np.asarray(value.handle.data)), tl.bfloat16)
        if isinstance(found, tuple):
            return value, found[1]
        return value if val_reduce_op else found

    def cumsum(self, input):
        if input.dtype != tl.bfloat16:
            return original_cumsum(self, input)
        totals = np.cumsum(values(input).astype(np.float64), axis=self.axis)
        return [self.to_tensor(bfloat16_bits(totals), tl.bfloat16)]

    reduce_ops.sum, reduce_ops.min_max, scan_ops.cumsum = sum_, min_max, cumsum


def _bfloat16_tree_sum(values: np.ndarray, axis, keep_dims: bool) -> np.ndarray:
    """The bfloat16 bits of ``values`` summed along ``axis`` as a GPU's reduction sums them:
    in bfloat16, pairwise, each partial sum rounded to bfloat16 (a tree of halvings)."""
    data = np.asarray(values, dtype=np.float32)
    if axis is None:
        data, axis = data.reshape(-1), 0
    data = np.moveaxis(data, axis, -1)
    while data.shape[-1] > 1:
        if data.shape[-1] % 2:
            data = np.concatenate([data, np.zeros_like(data[..., :1])], axis=-1)
        pairs = data[..., 0::2].astype(np.float64) + data[..., 1::2]
        data = bfloat16_to_float32(bfloat16_bits(pairs))
    out = bfloat16_bits(data[..., 0] if data.shape[-1] else np.zeros(data.shape[:-1]))
    if keep_dims:
        out = np.expand_dims(out, axis)
    return out


# --------------------------------------------------------------------------- tl.dot


def tf32_values(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` as the tensor cores read them for a TF32 product: the low 13 of the
    23 mantissa bits dropped (toward zero). A NaN stays a NaN."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    kept = np.where(nan, bits | 0x00400000, bits & np.uint32(0xFFFFE000))
    return kept.astype(np.uint32).view(np.float32)


def _install_dot(interpreter) -> None:
    import triton.language as tl

    builder = interpreter.InterpreterBuilder
    original = builder.create_dot
    tf32 = interpreter._ir.INPUT_PRECISION.TF32

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        left, right = a.dtype.scalar, b.dtype.scalar
        if left == tl.bfloat16 and right == tl.bfloat16:
            a = interpreter.TensorHandle(bfloat16_to_float32(a.data), tl.float32)
            b = interpreter.TensorHandle(bfloat16_to_float32(b.data), tl.float32)
        elif left == right == tl.float32 and input_precision == tf32 and not _off["tf32"]:
            a = interpreter.TensorHandle(tf32_values(a.data), tl.float32)
            b = interpreter.TensorHandle(tf32_values(b.data), tl.float32)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    builder.create_dot = create_dot
