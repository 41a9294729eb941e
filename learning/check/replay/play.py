"""Replaying a trace with the extracted kernels, on inputs the recording never saw.

The trace is untrusted JSON: :func:`_parse` checks every field's type and range before any of
it is used, and refuses (:class:`~learning.check.replay.ReplayError`) a trace with more than
``MAX_LAUNCHES`` launches or more than ``max_bytes`` of buffers, a launch of a kernel from
outside the package (``outside:...``) or of one the bundle does not hold, and a launch that
reads a tensor PyTorch computed. Only then are the kernels loaded: the bundle's modules are
written to a temporary folder (Triton reads a kernel's source from its file) and imported
from there under a fresh package name, after checking that they are exactly what
:func:`~learning.check.replay.extract_kernels` makes of them (a bundle that was edited on
its way here is refused).

Buffers are made afresh for every replay. With ``fill="poison"`` (checking) each allocation
holds the checker's marked NaN between guard regions of :data:`GUARD_BYTE`, like the
checker's own :class:`~learning.check.kernel_guards.AllocationTrap`, and each input sits
between NaN guards, so a store outside any buffer, a value never stored and an unmasked load
past the end all show; with ``fill="none"`` (timing) they are plain ``torch.empty``
allocations, and :class:`ReplayProgram` uses the caller's input tensors where they lie.
Under Triton's interpreter a poisoned replay also watches every load and store the kernels
issue (:mod:`learning.check.replay.watch`): a load outside every buffer is reported with its
kernel and program id (an unmasked load need not change the result to be a fault), and the
bytes each kernel moved are counted, by tensor.

Between the launches a replay makes the trace's *steps* again, the copies and casts the
recorded call made of its tensors (``x.contiguous()``, ``y32.to(torch.float16)``), on its own
buffers: :mod:`learning.check.replay.plumbing` says which it makes, and which buffers they
make replayable.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import shutil
import sys
import tempfile
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import triton

from learning.check.kernel_guards import _UNWRITTEN_BITS, GUARD_BYTE, guard_elements, unwritten_mask
from learning.check.replay import plumbing
from learning.check.replay.errors import KernelSourceError, ReplayError
from learning.check.replay.extract import KernelBundle, extract_sources
from learning.check.replay.traceformat import (
    DEFAULT_MAX_BYTES,
    MAX_BUFFERS,
    MAX_GRID,
    MAX_LAUNCHES,
    OPTIONS,
    Unrecordable,
    decode_fill,
    decode_scalar,
    encode_scalar,
    integer,
    integers,
    require,
    span,
    text,
    torch_dtype,
)

_KINDS = ("input", "alloc", "const", "opaque")
_ALIGN = 16  # bytes: every buffer's interior is padded to this, and starts on it


@dataclass
class ReplayResult:
    """What a replay stored, and what went wrong around it (poison fill only)."""

    outputs: tuple[torch.Tensor, ...]  # the described outputs, views of the replayed buffers
    unwritten: list[str] = field(default_factory=list)  # "output 0: 12 of 4096 elements ..."
    stray_stores: list[str] = field(default_factory=list)  # stores into any buffer's guards
    inputs_changed: list[str] = field(default_factory=list)  # inputs the kernels wrote to
    # Seen in the interpreter's loads and stores (replay/watch.py; None where not interpreted):
    stray_loads: list[str] = field(default_factory=list)  # loads outside every buffer
    traffic: dict | None = None  # bytes loaded and stored, in all, by tensor and by kernel
    owners: tuple[torch.Tensor | None, ...] = ()  # per output: who stored each element last


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class _Buffer:
    id: int
    kind: str
    name: str | None
    nbytes: int
    dtype: torch.dtype
    fill: Any
    label: str
    size: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    start: tuple[str, Any] | None = None  # what it held before a step first wrote into it

    @property
    def shown(self) -> str:
        if self.kind == "input":
            return f"input {self.name}"
        return f"buffer {self.id} ({self.label})" if self.label else f"buffer {self.id}"

    @property
    def computed(self) -> str:
        """What an opaque buffer is, for a message."""
        what = "a tensor PyTorch computed"
        return f"{what} ({self.label})" if self.label else what


@dataclass(frozen=True)
class _View:
    buffer: int
    byte_offset: int
    dtype: torch.dtype
    size: tuple[int, ...] | None = None  # None: a kernel argument (a pointer, no shape)
    stride: tuple[int, ...] | None = None


@dataclass(frozen=True)
class _Launch:
    index: int
    kernel: str
    grid: tuple[int, int, int]
    values: dict[str, Any]  # scalar and constexpr arguments
    tensors: dict[str, _View]
    options: dict[str, Any]

    @property
    def shown(self) -> str:
        return f"launch {self.index} ({self.kernel})"


@dataclass(frozen=True)
class _Plan:
    buffers: tuple[_Buffer, ...]
    launches: tuple[_Launch, ...]
    outputs: tuple[_View, ...]
    scalars: dict[str, Any]
    steps: tuple[plumbing.Step, ...] = ()  # the copies and casts made between the launches


def _parse(trace: Any, outputs: Any, max_bytes: int) -> _Plan:
    """The trace and output descriptions, every field checked (see the module docstring)."""
    require(isinstance(trace, dict), "the trace", "a dict", type(trace).__name__)
    if trace.get("truncated"):
        raise ReplayError(f"the trace was cut short after {MAX_LAUNCHES} launches; a replay "
                          f"takes at most {MAX_LAUNCHES}")  # fmt: skip
    raw_buffers, raw_launches = trace.get("buffers"), trace.get("launches")
    require(isinstance(raw_buffers, list), "trace.buffers", "a list", raw_buffers)
    require(isinstance(raw_launches, list), "trace.launches", "a list", raw_launches)
    if len(raw_launches) > MAX_LAUNCHES:
        raise ReplayError(f"the trace has {len(raw_launches)} launches; a replay takes at most "
                          f"{MAX_LAUNCHES}")  # fmt: skip
    if len(raw_buffers) > MAX_BUFFERS:
        raise ReplayError(f"the trace has {len(raw_buffers)} buffers; at most {MAX_BUFFERS}")
    buffers = tuple(_parse_buffer(b, i) for i, b in enumerate(raw_buffers))
    names = [b.name for b in buffers if b.kind == "input"]
    if len(set(names)) != len(names):
        raise ReplayError("trace.buffers: two inputs have the same name")
    total = sum(b.nbytes for b in buffers)
    if total > max_bytes:
        raise ReplayError(f"the trace's buffers hold {total} bytes; a replay allows at most "
                          f"{max_bytes}")  # fmt: skip
    raw_steps = trace.get("steps", [])
    require(isinstance(raw_steps, list), "trace.steps", "a list", raw_steps)
    if len(raw_steps) > plumbing.MAX_STEPS:
        raise ReplayError(f"the trace has {len(raw_steps)} steps; a replay takes at most "
                          f"{plumbing.MAX_STEPS}")  # fmt: skip
    steps = tuple(_parse_step(s, i, buffers, len(raw_launches)) for i, s in enumerate(raw_steps))
    named = {o.get("buffer") for o in outputs if isinstance(o, dict)} if isinstance(
        outputs, list) else set()  # fmt: skip
    buffers, steps = plumbing.rebuild(buffers, steps, named)
    launches = tuple(_parse_launch(launch, i, buffers) for i, launch in enumerate(raw_launches))
    require(isinstance(outputs, list), "the outputs", "a list of views", outputs)
    views = tuple(_parse_output(o, i, buffers) for i, o in enumerate(outputs))
    scalars = trace.get("scalars", {})
    require(isinstance(scalars, dict) and all(isinstance(k, str) for k in scalars),
            "trace.scalars", "a dict of named values", scalars)  # fmt: skip
    scalars = {k: decode_scalar(v, f"trace.scalars[{k!r}]") for k, v in scalars.items()}
    return _Plan(buffers, launches, views, scalars, steps)


def _parse_buffer(entry: Any, index: int) -> _Buffer:
    where = f"trace.buffers[{index}]"
    require(isinstance(entry, dict), where, "a dict", entry)
    integer(entry.get("id"), f"{where}.id", index, index)
    kind = entry.get("kind")
    require(kind in _KINDS, f"{where}.kind", f"one of {', '.join(_KINDS)}", kind)
    nbytes = integer(entry.get("nbytes"), f"{where}.nbytes")
    dtype = torch_dtype(entry.get("dtype"), f"{where}.dtype")
    label = entry.get("label") or ""
    require(isinstance(label, str), f"{where}.label", "a string", label)
    label = text(label, 100)[1:-1] if label else ""
    name, fill, size, stride = None, None, (), ()
    itemsize = dtype.itemsize
    if kind != "opaque" and nbytes % itemsize:
        raise ReplayError(f"{where}: {nbytes} bytes is not a whole number of {dtype} elements")
    if kind == "input":
        name = entry.get("name")
        require(isinstance(name, str) and name.isidentifier(), f"{where}.name", "a name", name)
        size = integers(entry.get("size"), f"{where}.size")
        stride = integers(entry.get("stride"), f"{where}.stride")
        if len(size) != len(stride) or span(size, stride) * itemsize != nbytes:
            raise ReplayError(f"{where}: its size and stride do not span its {nbytes} bytes")
    if kind == "const":
        fill = decode_fill(entry.get("fill"), f"{where}.fill")
    start = _parse_start(entry.get("start"), f"{where}.start") if kind == "opaque" else None
    return _Buffer(index, kind, name, nbytes, dtype, fill, label, size, stride, start)


def _parse_start(entry: Any, where: str) -> tuple[str, Any] | None:
    """What an opaque buffer held before a step first wrote into it: an allocation's poison
    or one constant (anything else, or nothing said: poison)."""
    if entry is None:
        return None
    require(isinstance(entry, dict) and entry.get("kind") in ("alloc", "const"), where,
            "{'kind': 'alloc'} or {'kind': 'const', 'fill': value}", entry)  # fmt: skip
    if entry["kind"] == "const":
        return "const", decode_fill(entry.get("fill"), f"{where}.fill")
    return "alloc", None


def _parse_step(entry: Any, index: int, buffers: tuple[_Buffer, ...],
                launches: int) -> plumbing.Step:  # fmt: skip
    where = f"step {index}"
    require(isinstance(entry, dict), where, "a dict", entry)
    after = integer(entry.get("after"), f"{where}.after", 0, launches)
    op = entry.get("op")
    require(op in plumbing.OPS, f"{where}.op", f"one of {', '.join(plumbing.OPS)}", op)
    to = _parse_view(entry.get("to"), f"{where}: to", buffers, shaped=True)
    source = _parse_view(entry.get("from"), f"{where}: from", buffers, shaped=True)
    require(to.size == source.size, f"{where}: from", f"the shape {list(to.size)}",
            list(source.size))  # fmt: skip
    return plumbing.Step(index, after, op, to, source)


def _parse_launch(entry: Any, index: int, buffers: tuple[_Buffer, ...]) -> _Launch:
    where = f"launch {index}"
    require(isinstance(entry, dict), where, "a dict", entry)
    kernel = entry.get("kernel")
    require(isinstance(kernel, str) and 0 < len(kernel) <= 300, f"{where}.kernel",
            "a kernel name", kernel)  # fmt: skip
    where = f"launch {index} ({kernel})"
    grid = integers(entry.get("grid"), f"{where}: the grid")
    if len(grid) != 3 or any(g > limit for g, limit in zip(grid, MAX_GRID, strict=True)):
        raise ReplayError(f"{where}: the grid {list(grid)} is not 3 sizes within {list(MAX_GRID)}")
    args, options = entry.get("args"), entry.get("options", {})
    require(isinstance(args, dict), f"{where}: args", "a dict", args)
    require(isinstance(options, dict), f"{where}: options", "a dict", options)
    values, tensors = {}, {}
    for name, value in args.items():
        require(isinstance(name, str) and name.isidentifier(), f"{where}: an argument",
                "a parameter name", name)  # fmt: skip
        shown = f"{where}, argument {name}"
        if isinstance(value, dict) and set(value) == {"tensor"}:
            view = _parse_view(value["tensor"], shown, buffers, shaped=False)
            buffer = buffers[view.buffer]
            if buffer.kind == "opaque":
                raise ReplayError(f"{shown}: {buffer.computed}; the "
                                  "checker can only replay kernels, so every tensor a kernel "
                                  "reads must be an input or memory your code allocated with "
                                  "torch.empty/zeros/full and filled with kernels, or a copy "
                                  "or cast of those (.contiguous(), .to(), copy_)")  # fmt: skip
            tensors[name] = view
        else:
            values[name] = decode_scalar(value, shown)
    checked = {}
    for name, value in options.items():
        shown = f"{where}, option {text(name, 40)}"
        require(name in OPTIONS, shown, f"one of {', '.join(sorted(OPTIONS))}", name)
        ok = value is None or isinstance(value, bool) or (isinstance(value, int) and
                                                          0 <= value <= 1024)  # fmt: skip
        require(ok, shown, "an integer from 0 to 1024, a bool or null", value)
        checked[name] = value
    return _Launch(index, kernel, grid, values, tensors, checked)


def _parse_output(entry: Any, index: int, buffers: tuple[_Buffer, ...]) -> _View:
    where = f"output {index}"
    require(isinstance(entry, dict), where, "a dict", entry)
    if "error" in entry:
        raise ReplayError(f"{where} cannot be replayed: {text(entry['error'], 120)[1:-1]}")
    view = _parse_view(entry, where, buffers, shaped=True)
    if buffers[view.buffer].kind == "opaque":
        raise ReplayError(f"{where} is {buffers[view.buffer].computed}; the checker can only "
                          "replay kernels: return the tensor your kernel stored into")
    return view


def _parse_view(entry: Any, where: str, buffers: tuple[_Buffer, ...], shaped: bool) -> _View:
    require(isinstance(entry, dict), where, "a view of a buffer", entry)
    identity = integer(entry.get("buffer"), f"{where}: buffer", 0, max(len(buffers) - 1, 0))
    if not buffers:
        raise ReplayError(f"{where}: the trace has no buffers")
    buffer = buffers[identity]
    dtype = torch_dtype(entry.get("dtype"), f"{where}: dtype")
    offset = integer(entry.get("offset"), f"{where}: offset", -(2**62), 2**62)
    byte_offset = offset * dtype.itemsize
    size = stride = None
    extent = 0
    if shaped:
        size = integers(entry.get("shape"), f"{where}: shape")
        stride = integers(entry.get("stride"), f"{where}: stride")
        require(len(size) == len(stride), f"{where}: stride", f"{len(size)} strides", stride)
        extent = span(size, stride) * dtype.itemsize
    if byte_offset < 0 or byte_offset + extent > buffer.nbytes:
        raise ReplayError(f"{where}: elements {offset}.. of {buffer.shown} lie outside its "
                          f"{buffer.nbytes} bytes")  # fmt: skip
    return _View(identity, byte_offset, dtype, size, stride)


# --------------------------------------------------------------------------- the kernels


class _Kernels:
    """The bundle's modules, written to a temporary folder and imported from it."""

    def __init__(self, bundle: KernelBundle):
        if not isinstance(bundle, KernelBundle):
            raise ReplayError(f"expected a KernelBundle, got {type(bundle).__name__}")
        try:
            again = extract_sources(bundle.modules, bundle.package)
        except KernelSourceError as error:
            raise ReplayError(f"the kernel bundle does not pass extraction: {error}") from None
        if again.modules != bundle.modules or again.kernels != bundle.kernels:
            raise ReplayError("the kernel bundle is not what extract_kernels makes of its own "
                              "modules: it was changed after extraction")  # fmt: skip
        self.bundle = bundle
        self.folder = Path(tempfile.mkdtemp(prefix="kernel-replay-"))
        self.package = f"_replayed_{bundle.package}_{uuid.uuid4().hex[:12]}"
        self._finalizer = weakref.finalize(self, _unload, self.folder, self.package)
        root = self.folder / self.package
        root.mkdir()
        for relpath, source in bundle.modules.items():
            path = root / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source, encoding="utf-8")
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            (folder / "__init__.py").touch(exist_ok=True)
        spec = importlib.util.spec_from_file_location(
            self.package, root / "__init__.py", submodule_search_locations=[str(root)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.package] = module
        spec.loader.exec_module(module)
        self._functions: dict[str, Any] = {}

    def function(self, launch: _Launch) -> Any:
        name = launch.kernel
        if name.startswith("outside:"):
            raise ReplayError(
                f"launch {launch.index} runs {name.removeprefix('outside:')}, a kernel defined "
                f"outside your {self.bundle.package} package: the checker replays only the "
                "@triton.jit functions in your own files"
            )
        if name not in self.bundle.kernels:
            raise ReplayError(
                f"launch {launch.index} runs {name}, which is not a @triton.jit function found "
                f"in the files of your {self.bundle.package} package"
            )
        if name not in self._functions:
            relpath, _, function = name.partition("::")
            dotted = relpath.removesuffix(".py").removesuffix("__init__").strip("/")
            module = importlib.import_module(".".join(filter(None, [self.package,
                                                                    dotted.replace("/", ".")])))
            self._functions[name] = getattr(module, function)
        return self._functions[name]

    def close(self) -> None:
        self._finalizer()


def _unload(folder: Path, package: str) -> None:
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    shutil.rmtree(folder, ignore_errors=True)


def _bind(kernels: _Kernels, plan: _Plan) -> list[tuple[_Launch, Any]]:
    """Each launch with its kernel, its arguments matched against the kernel's parameters."""
    bound = []
    for launch in plan.launches:
        function = kernels.function(launch)
        params = list(getattr(function, "arg_names", ()))
        given = set(launch.values) | set(launch.tensors)
        missing = [p for p in params if p not in given]
        extra = sorted(given - set(params))
        if missing or extra:
            what = (f"argument {missing[0]} was not recorded" if missing
                    else f"argument {extra[0]} is not a parameter of the kernel")  # fmt: skip
            raise ReplayError(f"{launch.shown}: {what}")
        bound.append((launch, function))
    return bound


# --------------------------------------------------------------------------- memory


class _Memory:
    """One replayed buffer: its bytes live in ``storage`` from byte ``base`` on, with
    ``head`` guard bytes before (0 without guards) and the rest of the storage after."""

    def __init__(self, buffer: _Buffer, storage, base: int, head: int, device):
        self.buffer, self.storage, self.base = buffer, storage, base
        self.head, self.device = head, device
        self.snapshot: torch.Tensor | None = None  # the input's bytes, guards included

    def view(self, view: _View) -> torch.Tensor:
        itemsize = view.dtype.itemsize
        position = self.base + view.byte_offset
        if position % itemsize or position < 0:
            raise ReplayError(f"a {view.dtype} view of {self.buffer.shown} does not start on a "
                              "whole element")  # fmt: skip
        if view.size is None:  # a kernel's pointer: everything up to the storage's end
            size, stride = ((self.storage.nbytes() - position) // itemsize,), (1,)
        else:
            size, stride = view.size, view.stride
        tensor = torch.empty(0, dtype=view.dtype, device=self.device)
        return tensor.set_(self.storage, position // itemsize, size, stride)

    def raw(self) -> torch.Tensor:
        tensor = torch.empty(0, dtype=torch.uint8, device=self.device)
        return tensor.set_(self.storage, 0, (self.storage.nbytes(),), (1,))

    def interior(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        dtype = dtype or self.buffer.dtype
        whole = _View(self.buffer.id, 0, dtype, (self.buffer.nbytes // dtype.itemsize,), (1,))
        return self.view(whole)


def _padded(nbytes: int) -> int:
    return -(-max(nbytes, 1) // _ALIGN) * _ALIGN


def _fresh(buffer: _Buffer, device, guarded: bool) -> _Memory:
    """A new buffer: marked NaN (alloc), its constant (const), nothing yet (input)."""
    numel = buffer.nbytes // buffer.dtype.itemsize
    guard = guard_elements(numel) * buffer.dtype.itemsize if guarded else 0
    guard = -(-guard // _ALIGN) * _ALIGN
    body = _padded(buffer.nbytes)
    raw = torch.empty((guard + body + guard,), dtype=torch.uint8, device=device)
    memory = _Memory(buffer, raw.untyped_storage(), guard, guard, raw.device)
    if guarded:
        if buffer.kind == "input" and buffer.dtype.is_floating_point:
            whole = torch.empty(0, dtype=buffer.dtype, device=raw.device)
            whole.set_(memory.storage, 0, (raw.numel() // buffer.dtype.itemsize,), (1,))
            whole.fill_(float("nan"))  # an unmasked load past the input reads NaN
        else:
            raw.fill_(GUARD_BYTE)
    if buffer.kind == "alloc" and guarded:
        bits = _UNWRITTEN_BITS.get(buffer.dtype)
        if bits is not None:
            memory.interior(bits[0]).fill_(bits[1])
    elif buffer.kind == "const":
        memory.interior().fill_(buffer.fill)
    return memory


def _input_memory(buffer: _Buffer, value: Any, device, fill: str, direct: bool) -> _Memory:
    if not isinstance(value, torch.Tensor):
        raise ReplayError(f"input {buffer.name} must be a tensor, got {type(value).__name__}")
    if value.dtype != buffer.dtype or tuple(value.shape) != buffer.size:
        raise ReplayError(
            f"input {buffer.name} is {str(value.dtype).removeprefix('torch.')} "
            f"{tuple(value.shape)}; the trace was recorded with "
            f"{str(buffer.dtype).removeprefix('torch.')} {buffer.size}"
        )
    same_layout = tuple(value.stride()) == buffer.stride and _on(value.device, device)
    if direct:
        if not same_layout:
            raise ReplayError(f"input {buffer.name} has strides {tuple(value.stride())} on "
                              f"{value.device}; the trace was recorded with {buffer.stride} "
                              f"on {device}")  # fmt: skip
        storage = value.untyped_storage()
        return _Memory(buffer, storage, value.storage_offset() * value.element_size(), 0,
                       value.device)  # fmt: skip
    memory = _fresh(buffer, device, guarded=fill == "poison")
    target = _View(buffer.id, 0, buffer.dtype, buffer.size, buffer.stride)
    with torch.no_grad():
        memory.view(target).copy_(value.detach())
    if fill == "poison":
        memory.snapshot = memory.raw().clone()
    return memory


def _on(actual: torch.device, wanted: torch.device) -> bool:
    return actual.type == wanted.type and wanted.index in (None, actual.index)


def _memories(plan: _Plan, inputs: dict, device, fill: str, direct: bool) -> list[_Memory]:
    if not isinstance(inputs, dict):
        raise ReplayError(f"inputs must be a dict of name -> tensor, got {type(inputs).__name__}")
    for name, recorded in plan.scalars.items():
        if name not in inputs:
            continue
        try:
            same = decode_scalar(encode_scalar(inputs[name]), name) == recorded
        except (Unrecordable, ReplayError):
            same = False
        if not same:
            raise ReplayError(
                f"input {name} is {text(inputs[name], 40)} here but the trace was recorded "
                f"with {text(recorded, 40)}: the recorded launches hold that value"
            )
    memories = []
    for buffer in plan.buffers:
        if buffer.kind == "input":
            if buffer.name not in inputs:
                raise ReplayError(f"input {buffer.name} is missing (the trace reads it)")
            memories.append(_input_memory(buffer, inputs[buffer.name], device, fill, direct))
        elif buffer.kind == "opaque":
            memories.append(None)  # never read: _parse refused every use
        else:
            memories.append(_fresh(buffer, device, guarded=fill == "poison"))
    return memories



def _run(plan: _Plan, bound: list, memories: list[_Memory], watch=None) -> None:
    """The recorded launches in order, each step made after the launches recorded before it."""
    steps = list(plan.steps)
    for launch, function in [*bound, (None, None)]:
        while steps and (launch is None or steps[0].after <= launch.index):
            plumbing.run(steps.pop(0), memories)
        if launch is not None:
            _launch(launch, function, memories, watch)


def _launch(launch: _Launch, function: Any, memories: list[_Memory], watch=None) -> None:
    if watch is not None:
        watch.launching(launch.kernel.partition("::")[2] or launch.kernel, launch.index)
    arguments = dict(launch.values)
    for name, view in launch.tensors.items():
        arguments[name] = memories[view.buffer].view(view)
    try:
        function[launch.grid](**arguments, **launch.options)
    except Exception as error:  # the kernel's own fault, reported as this launch's
        first = (str(error).strip().splitlines() or [""])[0]
        raise ReplayError(f"{launch.shown} failed: {type(error).__name__}: {first[:200]}") from None


def _outputs(plan: _Plan, memories: list[_Memory]) -> tuple[torch.Tensor, ...]:
    return tuple(memories[view.buffer].view(view) for view in plan.outputs)


def _set_allocator(device: torch.device) -> None:
    """Scratch memory for kernels that build tensor descriptors on the GPU (Triton asks)."""
    if device.type == "cuda":
        triton.set_allocator(
            lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device)
        )


# --------------------------------------------------------------------------- the checks


def _stray(memory: _Memory) -> str | None:
    """Where a store fell in a guard region of this buffer, if anywhere."""
    if memory.head == 0:
        return None
    raw, buffer = memory.raw(), memory.buffer
    head = raw[: memory.head]
    tail = raw[memory.head + buffer.nbytes :]
    if memory.snapshot is not None:
        head_changed = head != memory.snapshot[: memory.head]
        tail_changed = tail != memory.snapshot[memory.head + buffer.nbytes :]
    else:
        head_changed, tail_changed = head != GUARD_BYTE, tail != GUARD_BYTE
    itemsize = buffer.dtype.itemsize
    found = []
    changed = head_changed.nonzero()
    if len(changed):
        found.append(f"{-(-(memory.head - int(changed[0])) // itemsize)} elements before the "
                     "start")  # fmt: skip
    changed = tail_changed.nonzero()
    if len(changed):
        found.append(f"{int(changed[-1]) // itemsize + 1} elements past the end")
    return f"{buffer.shown}: a store {' and '.join(found)}" if found else None


def _changed(memory: _Memory) -> str | None:
    buffer = memory.buffer
    now = memory.raw()[memory.head : memory.head + buffer.nbytes]
    before = memory.snapshot[memory.head : memory.head + buffer.nbytes]
    differs = now != before
    if not bool(differs.any()):
        return None
    elements = int(torch.unique(differs.nonzero().flatten() // buffer.dtype.itemsize).numel())
    total = buffer.nbytes // buffer.dtype.itemsize
    return f"input {buffer.name}: the kernels changed {elements} of its {total} elements"


def _check(result: ReplayResult, memories: list[_Memory]) -> None:
    for index, output in enumerate(result.outputs):
        mask = unwritten_mask(output)
        if mask is not None and bool(mask.any()):
            result.unwritten.append(f"output {index}: {int(mask.sum())} of {output.numel()} "
                                    "elements never stored")  # fmt: skip
    for memory in memories:
        if memory is None:
            continue
        stray = _stray(memory)
        if stray:
            result.stray_stores.append(stray)
        if memory.buffer.kind == "input" and memory.snapshot is not None:
            changed = _changed(memory)
            if changed:
                result.inputs_changed.append(changed)


# --------------------------------------------------------------------------- the entry points


def _device(device: Any) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise ReplayError(f"device must be a torch device (cpu, cuda): {device!r:.40}") from None


def replay(bundle: KernelBundle, trace: dict, outputs: list[dict],
           inputs: dict[str, torch.Tensor | object], *, device: str, fill: str = "poison",
           max_bytes: int = DEFAULT_MAX_BYTES, owners: bool = False) -> ReplayResult:  # fmt: skip
    """Make the recorded launches again with the bundle's kernels, on ``inputs``.

    ``inputs`` are the call's inputs by name (the tensors must have the recorded dtypes and
    shapes; any values). ``fill="poison"`` fills allocations with the checker's marked NaN
    inside guard regions and copies the inputs between NaN guards, then reports what was never
    stored, stores outside any buffer, loads outside every buffer, the bytes moved and inputs
    the kernels changed; ``fill="none"`` allocates plainly and checks nothing (for timing).
    ``max_bytes`` bounds the buffers' total size; ``owners`` asks for who stored each output
    element (:func:`replay_with`). Raises :class:`~learning.check.replay.ReplayError` for a
    trace it cannot replay, before running anything.
    """
    if fill not in ("poison", "none"):
        raise ValueError(f"fill must be 'poison' or 'none', got {fill!r:.40}")
    kernels = _Kernels(bundle)
    try:
        return replay_with(kernels, trace, outputs, inputs, device=device, fill=fill,
                           max_bytes=max_bytes, owners=owners)  # fmt: skip
    finally:
        kernels.close()


def replay_with(kernels: _Kernels, trace: dict, outputs: list[dict], inputs: dict, *,
                device: str, fill: str = "poison", max_bytes: int = DEFAULT_MAX_BYTES,
                owners: bool = False) -> ReplayResult:  # fmt: skip
    """:func:`replay`'s steps with the kernels already loaded: parse the trace, bind its
    launches, make fresh buffers, launch, check what was stored. With the poison fill under
    the interpreter, a :class:`~learning.check.replay.watch.MemoryWatch` sees every load and
    store too (``owners``: and keeps who stored each output element)."""
    where = _device(device)
    plan = _parse(trace, outputs, max_bytes)
    bound = _bind(kernels, plan)
    memories = _memories(plan, inputs, where, fill, direct=False)
    _set_allocator(where)
    watch = _watch(plan, memories, owners) if fill == "poison" and where.type == "cpu" else None
    with watch or contextlib.nullcontext():
        _run(plan, bound, memories, watch)
    if where.type == "cuda":
        torch.cuda.synchronize(where)
    result = ReplayResult(_outputs(plan, memories))
    if fill == "poison":
        _check(result, memories)
    if watch is not None:
        result.stray_loads = watch.stray_loads()
        result.traffic = watch.traffic()
        if owners:
            result.owners = _owners(plan, memories, watch)
    return result


def _region_name(buffer: _Buffer, plan: _Plan) -> str:
    if buffer.kind == "input":
        return buffer.name
    lying = [i for i, view in enumerate(plan.outputs) if view.buffer == buffer.id]
    return f"output {lying[0]}" if lying else buffer.shown


def _watch(plan: _Plan, memories: list[_Memory], owners: bool):
    from learning import runtime
    from learning.check.replay.watch import MemoryWatch, Region

    if not runtime.interpreting():
        return None
    outputs = {view.buffer for view in plan.outputs}
    regions = []
    for memory in memories:
        if memory is None:
            continue
        start, buffer = memory.storage.data_ptr(), memory.buffer
        regions.append(Region(_region_name(buffer, plan), start, start + memory.storage.nbytes(),
                              start + memory.base, buffer.nbytes, buffer.dtype.itemsize,
                              owned=owners and buffer.id in outputs))  # fmt: skip
    return MemoryWatch(regions)


def _owners(plan: _Plan, memories: list[_Memory], watch) -> tuple[torch.Tensor | None, ...]:
    """Per output, an int64 tensor of its shape: who stored each element last (-1: nobody);
    None for an output a step wrote into (a copy or cast has no program to name)."""
    found = []
    copied = {step.to.buffer for step in plan.steps}
    for view in plan.outputs:
        buffer = memories[view.buffer].buffer
        owners = watch.owners.get(_region_name(buffer, plan))
        itemsize = view.dtype.itemsize
        if owners is None or view.dtype != buffer.dtype or view.byte_offset % itemsize or (
                view.buffer in copied):  # fmt: skip
            found.append(None)
            continue
        found.append(torch.from_numpy(owners).as_strided(view.size, view.stride,
                                                          view.byte_offset // itemsize).clone())
    return tuple(found)


class ReplayProgram:
    """A trace as a callable: ``program(**inputs)`` replays it on any inputs of its layout.

    The kernels are loaded and the trace checked once. Every call allocates fresh buffers
    (``torch.empty``, or the recorded constant fill), launches the recorded kernels on the
    input tensors where they lie (they must have the recorded dtypes, shapes and strides, on
    ``device``) and returns the outputs, with no host synchronisation: a call can be captured
    in a CUDA graph once a first call has compiled the kernels.
    """

    def __init__(self, bundle: KernelBundle, trace: dict, outputs: list[dict], *, device: str,
                 max_bytes: int = DEFAULT_MAX_BYTES):  # fmt: skip
        self.device = _device(device)
        self._plan = _parse(trace, outputs, max_bytes)
        self._kernels = _Kernels(bundle)
        try:
            self._bound = _bind(self._kernels, self._plan)
        except ReplayError:
            self._kernels.close()
            raise

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self._plan.buffers if b.kind == "input")

    def __call__(self, **inputs) -> tuple[torch.Tensor, ...]:
        memories = _memories(self._plan, inputs, self.device, "none", direct=True)
        _set_allocator(self.device)
        _run(self._plan, self._bound, memories)
        return _outputs(self._plan, memories)

    def close(self) -> None:
        """Remove the kernels' temporary folder (also done when the program is collected)."""
        self._kernels.close()
