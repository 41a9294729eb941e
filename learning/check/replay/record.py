"""The recorder: every Triton launch of one call, written down as plain data.

While a :class:`TraceRecorder` is active it wraps Triton's two launch paths
(``JITFunction.run`` for compiled kernels, ``InterpretedFunction.run`` under the CPU
interpreter) and PyTorch's allocation functions, so that every buffer a kernel is handed has
an identity:

* an **input** (declared with :meth:`TraceRecorder.add_input`): named, and identified by its
  storage, so that a tensor argument anywhere in it is ``input x, at element k``;
* an **alloc**: memory from ``torch.empty`` / ``empty_like`` / ``empty_strided`` /
  ``Tensor.new_empty``. The recorder fills it with the checker's marked NaN at once, so that
  at the first launch that is handed it, it can tell whether PyTorch wrote into it meanwhile:
  still marked, it stays an alloc (the replay gives a fresh one); one value everywhere (a
  ``zero_()``), it becomes a constant; anything else, a tensor PyTorch computed (*opaque*);
* a **const**: ``torch.zeros`` / ``ones`` / ``full`` and their ``_like`` / ``new_`` forms,
  one value everywhere;
* **opaque**: any other memory (the result of a PyTorch op, an allocation PyTorch wrote
  before a kernel saw it). A replay refuses a launch that reads one, except when every element
  holds one value: that carries no answer and is recorded as a constant.

Besides the launches it writes down the *steps* (:mod:`learning.check.replay.plumbing`): each
copy and conversion of a tensor the call made between them (``x.contiguous()``,
``aligned.copy_(a)``, ``y32.to(torch.float16)``), with the memory each made recorded as a
buffer of its own, so that a replay can make them again from its own tensors. A buffer that a
``copy_`` writes into before any kernel saw it keeps what it held until then (``start``).

Every buffer is kept alive until the recorder is garbage-collected, so that no address is
reused for another buffer while it records. Autotuning runs (the candidates Triton times
before it picks one) are not recorded, nor the memory they allocate: only the launch made with
the chosen configuration. Their kernels write into the call's buffers all the same, so each
allocation's first use is looked at before the first of them runs.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch
from triton.runtime.autotuner import Autotuner
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from learning.check.kernel_guards import _UNWRITTEN_BITS, GUARD_BYTE
from learning.check.replay import plumbing
from learning.check.replay.traceformat import (
    FORMAT,
    MAX_LAUNCHES,
    Unrecordable,
    dtype_name,
    encode_fill,
    encode_scalar,
    span,
)

_EMPTY = ("empty", "empty_like", "empty_strided")
_CONSTANT = ("zeros", "zeros_like", "ones", "ones_like", "full", "full_like")
_TENSOR_EMPTY = ("new_empty",)
_TENSOR_CONSTANT = ("new_zeros", "new_ones", "new_full")


class TraceRecorder:
    """Records the Triton launches made while it is active (a context manager).

    Used inside the process that runs the learner's code, so it is a convenience, not a guard:
    whatever it writes down is checked by replaying it. Enter it *inside* an
    :class:`~learning.check.kernel_guards.AllocationTrap` when both are used
    (``with trap, recorder:``), so that it sees the guarded allocations the trap hands out.

    ``package_root`` is the folder of the learner's package: a kernel defined in a file under
    it is recorded as ``"<path relative to it>::<name>"``, any other as
    ``"outside:<module>.<name>"``.
    """

    def __init__(self, package_root: Path):
        self.package_root = Path(package_root).resolve()
        self._buffers: list[dict] = []
        self._storages: dict[tuple[str, int], int] = {}  # (device, storage address) -> id
        self._bases: list[int] = []  # buffer id -> the address its offsets count from
        self._checked: set[int] = set()  # allocations whose first use was looked at
        self._keep: list[Any] = []  # everything recorded, alive so no address is reused
        self._launches: list[dict] = []
        self._scalars: dict[str, Any] = {}
        self._truncated = False
        self._benchmarking = 0
        self._active = False
        self._patched: list[tuple[Any, str, Any, bool]] = []
        self._signatures: dict[Any, inspect.Signature] = {}
        self._stream: Any = None  # the CUDA stream current when the call began
        self._side_streams: list[str] = []  # kernels launched on any other stream
        self._steps: list[dict] = []  # copies and casts between the launches (plumbing.py)
        self._launching = 0  # inside a launch: the interpreter's own copies are no steps
        self._busy = False  # the recorder's own work: no steps either
        self._watch: plumbing.PlumbingWatch | None = None

    # -- what the caller declares -----------------------------------------------------------

    def add_input(self, name: str, tensor: torch.Tensor | object) -> None:
        """Declare an input of the call: its memory becomes buffer ``input:<name>``.

        A non-tensor input (``eps``) is written down with the trace, under ``scalars``: a
        replay can only reproduce the value it was recorded with.
        """
        if any(b["kind"] == "input" and b["name"] == name for b in self._buffers):
            raise ValueError(f"input {name!r} was declared twice")
        if not isinstance(tensor, torch.Tensor):
            try:
                self._scalars[name] = encode_scalar(tensor)
            except Unrecordable as why:
                raise ValueError(f"input {name!r}: {why}") from None
            return
        dtype = dtype_name(tensor.dtype)
        if dtype is None or tensor.layout != torch.strided:
            raise ValueError(f"input {name!r}: a {tensor.dtype} {tensor.layout} tensor")
        size, stride = tuple(tensor.shape), tuple(tensor.stride())
        if any(s < 0 for s in stride):
            raise ValueError(f"input {name!r} has a negative stride")
        self._add_buffer(
            tensor, tensor.data_ptr(), span(size, stride) * tensor.element_size(),
            dict(kind="input", name=name, dtype=dtype, size=list(size), stride=list(stride)),
        )  # fmt: skip

    # -- the context manager ----------------------------------------------------------------

    def __enter__(self) -> TraceRecorder:
        if self._active:
            raise RuntimeError("this TraceRecorder is already active")
        for cls in (InterpretedFunction, JITFunction):
            self._patch(cls, "run", self._wrap_run(cls.run))
        if hasattr(Autotuner, "_bench"):
            self._patch(Autotuner, "_bench", self._wrap_bench(Autotuner._bench))
        for name in (*_EMPTY, *_CONSTANT):
            original = getattr(torch, name)
            self._patch(torch, name, self._wrap_allocation(original, f"torch.{name}"))
        for name in (*_TENSOR_EMPTY, *_TENSOR_CONSTANT):
            original = getattr(torch.Tensor, name)
            self._patch(torch.Tensor, name, self._wrap_allocation(original, f"Tensor.{name}"))
        self._stream = _current_stream()
        self._watch = plumbing.PlumbingWatch(self)
        self._watch.__enter__()
        self._active = True
        return self

    def __exit__(self, *exc_info) -> None:
        self._active = False
        if self._watch is not None:
            self._watch.__exit__(None, None, None)
            self._watch = None
        while self._patched:
            owner, name, original, own = self._patched.pop()
            if own:
                setattr(owner, name, original)
            else:  # inherited (Tensor.new_empty comes from the C base class): just remove ours
                delattr(owner, name)

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._patched.append((owner, name, getattr(owner, name), name in vars(owner)))
        setattr(owner, name, replacement)

    # -- what it hands back -----------------------------------------------------------------

    def trace(self) -> dict:
        """``{"format", "buffers", "launches", "scalars"}``, JSON-serialisable (see
        :mod:`learning.check.replay.traceformat`)."""
        trace = {
            "format": FORMAT,
            "buffers": [dict(b) for b in self._buffers],
            "launches": [dict(launch) for launch in self._launches],
            "scalars": dict(self._scalars),
        }
        if self._steps:
            trace["steps"] = [dict(step) for step in self._steps]
        if self._truncated:
            trace["truncated"] = True
        if self._side_streams:
            trace["side_streams"] = list(dict.fromkeys(self._side_streams))
        return trace

    def describe_outputs(self, outputs: tuple) -> list[dict]:
        """Each output as a view of a recorded buffer:
        ``{"buffer", "offset", "dtype", "shape", "stride"}``; ``{"error": why}`` for an output
        that is not a plain tensor in a buffer the trace holds (it adds no buffer: the trace
        may be taken before or after)."""
        described = []
        for output in outputs:
            if type(output) is not torch.Tensor:
                described.append({"error": f"a {type(output).__name__}, not a torch.Tensor"})
                continue
            storage = output.untyped_storage()
            if (str(storage.device), storage.data_ptr()) not in self._storages:
                described.append({"error": f"a tensor PyTorch computed ({_describe(output)}): "
                                  "return the tensor your kernel stored into"})  # fmt: skip
                continue
            try:
                view = self._tensor(output)
            except Unrecordable as why:
                described.append({"error": str(why)})
                continue
            if any(s < 0 for s in output.stride()):
                described.append({"error": "a view with a negative stride"})
                continue
            view.update(shape=list(output.shape), stride=list(output.stride()))
            described.append(view)
        return described

    # -- buffers ----------------------------------------------------------------------------

    def _add_buffer(self, keep: Any, base: int, nbytes: int, entry: dict) -> int:
        storage = keep.untyped_storage() if isinstance(keep, torch.Tensor) else keep
        key = (str(storage.device), storage.data_ptr())
        identity = len(self._buffers)
        entry = {"id": identity, "kind": entry.pop("kind"), "name": None, "nbytes": nbytes,
                 "fill": None, **entry}  # fmt: skip
        self._buffers.append(entry)
        self._bases.append(base)
        self._storages.setdefault(key, identity)
        self._keep.append(keep)
        return identity

    def _allocated(self, tensor: torch.Tensor, how: str) -> None:
        if (
            type(tensor) is not torch.Tensor
            or tensor.layout != torch.strided
            or tensor.numel() == 0
            or dtype_name(tensor.dtype) is None
            or any(s < 0 for s in tensor.stride())
        ):
            return
        constant = how.rpartition(".")[2] in (*_CONSTANT, *_TENSOR_CONSTANT)
        flat = _flat(tensor)
        entry = dict(kind="const" if constant else "alloc", dtype=dtype_name(tensor.dtype),
                     label=f"{how} -> {_describe(tensor)}")  # fmt: skip
        if constant:
            entry["fill"] = encode_fill(flat[0].item())
        else:
            _mark(flat)
        self._add_buffer(tensor, tensor.data_ptr(), flat.numel() * tensor.element_size(), entry)

    def _first_use(self, identity: int) -> None:
        """An allocation's content when a kernel is first handed it: still as made, one
        value everywhere (a constant now), or written by PyTorch (opaque)."""
        self._checked.add(identity)
        entry = self._buffers[identity]
        content = self._content(identity)
        if content == {"kind": "alloc"}:
            return
        if content is not None:
            entry.update(content)
        else:
            entry.update(kind="opaque", fill=None,
                         label=f"{entry.get('label', '')}, then written by PyTorch")  # fmt: skip

    def _content(self, identity: int) -> dict | None:
        """What an allocation holds now: ``{"kind": "alloc"}`` (still as made), a constant
        ``{"kind": "const", "fill": value}``, or None (anything else)."""
        entry = self._buffers[identity]
        flat = _flat(self._keep[identity])
        if entry["kind"] == "alloc" and _is_marked(flat):
            return {"kind": "alloc"}
        first = flat[0]
        if bool((flat == first).all()) or (first.is_floating_point() and bool(flat.isnan().all())):
            return {"kind": "const", "fill": encode_fill(first.item())}
        return None

    def _opaque(self, tensor: torch.Tensor) -> int:
        """Memory the recorder did not see made: opaque, or a constant if it holds one value."""
        storage = tensor.untyped_storage()
        entry: dict[str, Any] = dict(kind="opaque", dtype=dtype_name(tensor.dtype),
                                     label=_describe(tensor))
        itemsize = tensor.element_size()
        if storage.nbytes() % itemsize == 0 and storage.nbytes():
            flat = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
            flat.set_(storage, 0, (storage.nbytes() // itemsize,), (1,))
            if bool((flat == flat[0]).all()):
                entry.update(kind="const", fill=encode_fill(flat[0].item()))
        identity = self._add_buffer(storage, storage.data_ptr(), storage.nbytes(), entry)
        self._checked.add(identity)
        return identity

    def _tensor(self, tensor: torch.Tensor, look: bool = True) -> dict:
        """``tensor`` as a view of a recorded buffer (memory not seen made is recorded now);
        ``look``: an allocation's first use, whose content decides its kind."""
        dtype = dtype_name(tensor.dtype)
        if dtype is None:
            raise Unrecordable(f"a {tensor.dtype} tensor")
        storage = tensor.untyped_storage()
        identity = self._storages.get((str(storage.device), storage.data_ptr()))
        if identity is None:
            identity = self._opaque(tensor)
        elif look and identity not in self._checked and self._buffers[identity]["kind"] != "input":
            self._first_use(identity)
        delta = tensor.data_ptr() - self._bases[identity]
        if delta % tensor.element_size():
            raise Unrecordable("a view that does not start on a whole element of its buffer")
        return {"buffer": identity, "offset": delta // tensor.element_size(), "dtype": dtype}

    # -- steps (plumbing.PlumbingWatch calls these) ------------------------------------------

    def _records_steps(self) -> bool:
        return self._active and not (self._benchmarking or self._launching or self._busy)

    def _writing(self, tensor: torch.Tensor) -> None:
        """``tensor`` is about to be written by a ``copy_``: note what its buffer held so far,
        if no kernel has seen it yet (its ``start``), or record memory not seen made. Never
        raises: the call goes on whatever the recorder makes of its tensors."""
        if type(tensor) is not torch.Tensor or dtype_name(tensor.dtype) is None:
            return
        self._busy = True
        try:
            storage = tensor.untyped_storage()
            identity = self._storages.get((str(storage.device), storage.data_ptr()))
            if identity is None:
                self._tensor(tensor)
                return
            entry = self._buffers[identity]
            if identity not in self._checked and entry["kind"] != "input" and "start" not in entry:
                entry["start"] = self._content(identity)
        except Exception:  # a tensor the trace cannot describe (sparse, a misaligned view ...)
            pass
        finally:
            self._busy = False

    def _step(self, op: str, to: Any, source: Any) -> None:
        """``to`` now holds ``source``'s values (converted to its dtype): a step. A pair the
        trace cannot describe is left out (the replay then differs); this never raises."""
        if type(to) is not torch.Tensor or type(source) is not torch.Tensor or not to.numel():
            return
        if len(self._steps) >= plumbing.MAX_STEPS:
            self._truncated = True
            return
        self._busy = True
        try:
            if to.shape != source.shape:
                source = source.expand(to.shape)  # copy_ broadcasts
            if any(s < 0 for s in (*to.stride(), *source.stride())):
                return
            storage = to.untyped_storage()
            if (str(storage.device), storage.data_ptr()) not in self._storages:
                self._made(to, f"{plumbing.OPS[op]} -> {_describe(to)}")
            # a destination's kind is still what a kernel first finds in it; a source's is now
            written, read = self._tensor(to, look=False), self._tensor(source)
            written.update(shape=list(to.shape), stride=list(to.stride()))
            read.update(shape=list(source.shape), stride=list(source.stride()))
        except Exception:  # a tensor the trace cannot describe (sparse, a misaligned view ...)
            return
        finally:
            self._busy = False
        self._steps.append({"after": len(self._launches), "op": op, "to": written,
                            "from": read})  # fmt: skip

    def _made(self, tensor: torch.Tensor, label: str) -> None:
        """Memory a step made (``x.contiguous()``'s): a buffer of its own, opaque until a
        replay makes the step again."""
        dtype = dtype_name(tensor.dtype)
        if dtype is None:
            raise Unrecordable(f"a {tensor.dtype} tensor")
        storage = tensor.untyped_storage()
        identity = self._add_buffer(storage, storage.data_ptr(), storage.nbytes(),
                                    dict(kind="opaque", dtype=dtype, label=label))  # fmt: skip
        self._checked.add(identity)

    # -- launches ---------------------------------------------------------------------------

    def _record(self, kernel: Any, args: tuple, grid: Any, kwargs: dict) -> Any:
        """Write the launch down; return the grid resolved (what the launch then uses)."""
        function = kernel.fn
        signature = self._signatures.get(function)
        if signature is None:
            signature = self._signatures[function] = inspect.signature(function)
        params = {k: v for k, v in kwargs.items() if k in signature.parameters}
        options = {k: v for k, v in kwargs.items() if k not in signature.parameters}
        try:
            bound = signature.bind(*args, **params)
        except TypeError:
            return grid  # Triton's launch raises the same error
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        resolved = grid(arguments) if callable(grid) else grid
        if len(self._launches) > MAX_LAUNCHES:
            self._truncated = True
            return resolved
        if _current_stream() != self._stream:  # the caller's stream does not wait for it
            self._side_streams.append(self._kernel_name(function))
        launch = {"kernel": self._kernel_name(function), "grid": _grid(resolved),
                  "args": {name: self._value(v) for name, v in arguments.items()},
                  "options": {name: self._option(v) for name, v in options.items()}}
        self._launches.append(launch)
        return resolved

    def _touch(self, values: tuple) -> None:
        """An autotuning run, not recorded: its kernels write into the buffers they are handed,
        so each allocation's first use is looked at now, before they do."""
        for value in values:
            if not isinstance(value, torch.Tensor):
                continue
            storage = value.untyped_storage()
            identity = self._storages.get((str(storage.device), storage.data_ptr()))
            if identity is not None and identity not in self._checked:
                if self._buffers[identity]["kind"] != "input":
                    self._first_use(identity)

    def _kernel_name(self, function: Any) -> str:
        name = getattr(function, "__name__", "?")
        try:
            path = Path(function.__code__.co_filename).resolve()
            return f"{path.relative_to(self.package_root).as_posix()}::{name}"
        except (AttributeError, ValueError, OSError):
            return f"outside:{getattr(function, '__module__', '?')}.{name}"

    def _value(self, value: Any) -> Any:
        try:
            if isinstance(value, torch.Tensor):
                return {"tensor": self._tensor(value)}
            if isinstance(value, tuple) and any(isinstance(v, torch.Tensor) for v in value):
                raise Unrecordable("a tuple holding tensors")
            return encode_scalar(value)
        except Unrecordable as why:
            return {"unrecordable": str(why)}

    def _option(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        return {"unrecordable": f"a {type(value).__name__}"}

    # -- wrappers ---------------------------------------------------------------------------

    def _wrap_run(self, original):
        recorder = self

        def run(kernel, *args, grid, warmup, **kwargs):
            if recorder._active and not warmup:
                if recorder._benchmarking:
                    recorder._touch((*args, *kwargs.values()))
                else:
                    grid = recorder._record(kernel, args, grid, kwargs)
            recorder._launching += 1
            try:
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                recorder._launching -= 1

        return run

    def _wrap_bench(self, original):
        recorder = self

        def bench(autotuner, *args, **kwargs):
            recorder._benchmarking += 1
            try:
                return original(autotuner, *args, **kwargs)
            finally:
                recorder._benchmarking -= 1

        return bench

    def _wrap_allocation(self, original, how: str):
        recorder = self

        def allocate(*args, **kwargs):
            made = original(*args, **kwargs)
            if (
                recorder._active
                and not recorder._benchmarking  # the autotuner's own scratch memory
                and kwargs.get("out") is None
                and isinstance(made, torch.Tensor)
            ):
                recorder._allocated(made, how)
            return made

        allocate.__name__ = getattr(original, "__name__", how)
        allocate.__doc__ = getattr(original, "__doc__", None)
        return allocate


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    """The elements of ``tensor``'s span, first to last, as one flat tensor of its dtype."""
    flat = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    size = span(tuple(tensor.shape), tuple(tensor.stride()))
    return flat.set_(tensor.untyped_storage(), tensor.storage_offset(), (size,), (1,))


def _mark(flat: torch.Tensor) -> None:
    bits = _UNWRITTEN_BITS.get(flat.dtype)
    if bits is None:
        flat.view(torch.uint8).fill_(GUARD_BYTE)
    else:
        flat.view(bits[0]).fill_(bits[1])


def _is_marked(flat: torch.Tensor) -> bool:
    bits = _UNWRITTEN_BITS.get(flat.dtype)
    if bits is None:
        return bool((flat.view(torch.uint8) == GUARD_BYTE).all())
    return bool((flat.view(bits[0]) == bits[1]).all())


def _grid(grid: Any) -> Any:
    if isinstance(grid, int):
        grid = (grid,)
    if not isinstance(grid, tuple | list) or not 1 <= len(grid) <= 3:
        return {"unrecordable": f"a grid {type(grid).__name__}"}
    values = [int(g) if isinstance(g, int) else g for g in grid]
    if not all(isinstance(g, int) for g in values):
        return {"unrecordable": "a grid of something other than integers"}
    return [*values, 1, 1][:3]


def _describe(tensor: torch.Tensor) -> str:
    shape = "x".join(str(d) for d in tensor.shape) or "scalar"
    return f"{shape} {dtype_name(tensor.dtype)}"


def _current_stream() -> Any:
    """The CUDA stream Triton launches on now (torch's current stream), or None on a CPU."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch.cuda.current_stream().cuda_stream
