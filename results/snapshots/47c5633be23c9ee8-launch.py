"""Launching a compiled Triton kernel again, for less host time than ``kernel[grid](...)``.

``kernel[grid](*args, **meta)`` does the same work on every call, whether or not the kernel
ran a microsecond ago with the same kind of arguments. ``scripts/wrapper_overhead.py`` takes
that path apart layer by layer on the H200 machine (1024 x 1024 fp16 softmax; the recorded
run is ``results/h200/wrapper-overhead.log``, and lesson 14 quotes it): ``kernel[grid]``
costs about twice the compiled binary's runner (``compiled[grid](...)``), which costs about
1.5x Triton's launcher in Python (``CompiledKernel.run``), which costs a little more than that
launcher's C function (argument parsing, a driver check of each pointer, the launch).
``torch.softmax``, all of it, costs about as much as the C function plus one allocation.
(The machine's host clock drifts up to 2x from run to run: compare rows of one run only.)

The first half binds the arguments, computes their *specialization* (each tensor's dtype and
whether its address is a multiple of 16 bytes, each integer's type and whether it is 1 or a
multiple of 16), turns the options into a cache key, and finds the binary; then come a stream
lookup and the launch metadata Triton builds for launch hooks (built even when no hook is
registered).

:class:`Launcher` keeps, for each specialization it has seen, the binary Triton compiled and
its C launch function, and calls that function directly: the arguments still reach the driver
through Triton's own launcher (which still checks that every pointer is device memory), but
the binding, the key hashing and the metadata are skipped. Its key is Triton's own
specialization of each argument (Triton's native ``specialize_impl``, with the kernel's
backend: dtype and 16-byte alignment of a tensor; i32, i64 or u64 and "is 1", "is a multiple
of 16" of an integer), the compile-time values and the options: an argument Triton would
compile differently for always gets its own entry, and the first call with a new key goes
through ``kernel[grid]`` (which compiles if it must) and records the binary it used. It
leans on Triton 3.6's internals (that function, ``CompiledKernel.run.launch`` and its
argument order); ``tests/reference/test_launch.py`` checks them on a GPU.

Triton's path is used every time when the fast one cannot be exact or would hide a launch:
under the interpreter (there is no binary), while something watches launches (the checker
counts them by wrapping ``JITFunction.run``; a profiler such as Proton registers a launch
hook and expects its metadata), and for binaries that need scratch memory (Triton allocates
it per launch).

That still leaves the wrapper's own Python on every call: its checks, the row plan, the
grid, the launcher's key (a ``specialize_impl`` call per argument). All of it is a function
of the inputs' *signatures* (dtype, device, shape, strides), so :class:`Replays` files, per
signature, a :class:`Replay` of the launch the wrapper made the first time: a repeat call
looks the signature up (four attribute reads and a dict lookup, the way a compiled graph's
guards work), allocates its output, and calls the C function with the tensors' addresses as
integers (which also skips the driver's check of each pointer: the first call checked the
device). Only the 16-byte alignment of each address is tested again, because the binary was
compiled for it. What is left is the floor for a wrapper written in Python: one allocation
(``torch.empty_like``, from Python) and Triton's C launch function; ``torch.softmax`` does
both in C++.

An earlier version of this launcher measured no faster than ``kernel[grid]`` (14.8 against
14.1 us, ``wrapper-overhead-launcher.log``) and was removed. It never took its fast path: it
stepped aside whenever ``knobs.runtime.launch_enter_hook is not None``, and in Triton 3.6 that
knob is an empty ``HookChain``, never None. (Triton's own ``launch_metadata`` makes the same
test, which is why it builds hook metadata on every launch.) The test here asks whether the
chain holds a hook.
"""

from __future__ import annotations

from functools import partial

import torch
from triton import knobs
from triton._C.libtriton import native_specialize_impl
from triton.runtime.jit import JITFunction

_TRITONS_RUN = JITFunction.run  # Triton's own launch path, to tell when someone wraps it


def _specialization(backend, args: tuple) -> tuple | None:
    """What Triton compiles a new binary for, argument by argument, as Triton itself works it
    out (every argument specialized, which is finer than a ``do_not_specialize`` argument
    needs); None for an argument Triton cannot specialize (Triton's path then reports it)."""
    try:
        return tuple(native_specialize_impl(backend, arg, False, True, True) for arg in args)
    except TypeError:
        return None


def _watched() -> bool:
    """Does something watch launches (a wrapped ``JITFunction.run``, a launch hook)?"""
    if JITFunction.run is not _TRITONS_RUN:
        return True
    for hook in (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook):
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


class Launcher:
    """``Launcher(kernel)(grid, args, **meta)`` runs ``kernel[grid](*args, **meta)``.

    ``args`` are the kernel's run-time arguments, in order; ``meta`` its compile-time ones
    (``tl.constexpr`` parameters) and launch options (``num_warps``, ``num_stages``). Every
    parameter of the kernel after ``args`` must be in ``meta``.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.interpreted = not isinstance(kernel, JITFunction)  # TRITON_INTERPRET=1: no binary
        self.binaries: dict[tuple, tuple | None] = {}
        self.direct_launches = 0  # calls that took the fast path (the tests read it)

    def __call__(self, grid: tuple[int, ...], args: tuple, **meta) -> Replay | None:
        """Launch; return a :class:`Replay` of this launch, or None where only Triton's path
        is exact (the interpreter, a watched launch, an argument Triton cannot key)."""
        if self.interpreted or _watched():
            self.kernel[grid](*args, **meta)
            return None
        device = torch.cuda.current_device()
        backend = self.kernel.device_caches[device][3]  # what kernel[grid] specializes with
        specialization = _specialization(backend, args)
        key = None if specialization is None else (device, specialization, *meta.items())
        entry = self.binaries.get(key) if key is not None else None
        if entry is None:
            compiled = self.kernel[grid](*args, **meta)
            if key is None:
                return None
            if key not in self.binaries:
                self.binaries[key] = self._direct_entry(compiled, len(args), meta)
            entry = self.binaries[key]
        else:
            launch, function, metadata, cooperative, pdl, constants = entry
            grid_x, grid_y, grid_z = (*grid, 1, 1)[:3] if len(grid) < 3 else grid
            stream = torch._C._cuda_getCurrentRawStream(device)
            launch(grid_x, grid_y, grid_z, stream, function, cooperative, pdl, None, None,
                   metadata, None, None, None, *args, *constants)  # fmt: skip
            self.direct_launches += 1
        return self._replay(entry, device, grid, args, meta)

    def _replay(self, entry, device: int, grid, args: tuple, meta: dict) -> Replay | None:
        """A replay of this launch, if its tensors lead the arguments and are all aligned."""
        tensors = 0
        while tensors < len(args) and isinstance(args[tensors], torch.Tensor):
            if args[tensors].data_ptr() % 16:
                return None
            tensors += 1
        if entry is None or any(isinstance(a, torch.Tensor) for a in args[tensors:]):
            return None
        return Replay(self, entry, device, grid, args[tensors:], meta)

    def _direct_entry(self, compiled, n_args: int, meta: dict) -> tuple | None:
        """How to launch ``compiled`` directly, or None where only Triton's path is exact."""
        launcher = getattr(compiled, "run", None)
        launch = getattr(launcher, "launch", None)
        names = getattr(self.kernel, "arg_names", None)
        if launch is None or names is None or any(name not in meta for name in names[n_args:]):
            return None
        if launcher.global_scratch_size or launcher.profile_scratch_size:
            return None
        constants = tuple(meta[name] for name in names[n_args:])
        return (launch, compiled.function, compiled.packed_metadata,
                launcher.launch_cooperative_grid, launcher.launch_pdl, constants)  # fmt: skip


def _signature(t: torch.Tensor) -> tuple:
    return (t.dtype, t.get_device(), t.shape, t.stride())


class Replay:
    """One launch the wrapper made, to be made again on other tensors of the same signature.

    It holds everything but the pointers: the binary, its C launch function, the grid, the
    integer arguments and the compile-time values. ``replay(*tensors)`` launches it with those
    tensors' addresses, passed as integers (so the C function skips its per-pointer driver
    check: the tensors' device was checked when the replay was made). A tensor whose address
    is not a multiple of 16 bytes (the binary was compiled for aligned ones) goes through the
    launcher instead, which finds or compiles the right binary.
    """

    __slots__ = ("launcher", "grid", "meta", "device", "rest", "launch", "middle", "tail")

    def __init__(self, launcher: Launcher, entry: tuple, device: int, grid, rest: tuple, meta):
        self.launcher, self.grid, self.meta, self.device = launcher, grid, meta, device
        self.rest = rest  # the arguments after the leading tensors (integers)
        launch, function, metadata, cooperative, pdl, constants = entry
        self.launch = partial(launch, *((*grid, 1, 1)[:3] if len(grid) < 3 else grid))
        self.middle = (function, cooperative, pdl, None, None, metadata, None, None, None)
        self.tail = (*rest, *constants)

    def __call__(self, *tensors: torch.Tensor) -> None:
        # the loop, not map and reduce: this runs on every call (~0.2 us less on the H200 host)
        pointers, bits = [], 0
        for tensor in tensors:
            pointer = tensor.data_ptr()
            pointers.append(pointer)
            bits |= pointer
        if bits & 15:  # an address the binary was not compiled for
            self.launcher(self.grid, (*tensors, *self.rest), **self.meta)
            return
        stream = torch._C._cuda_getCurrentRawStream(self.device)
        self.launch(stream, *self.middle, *pointers, *self.tail)
        self.launcher.direct_launches += 1


class Replays:
    """A wrapper's launches, filed by the signature of its input tensors.

    Everything a wrapper works out before it launches (its checks, the plan, the grid, the
    arguments, the launcher's key) depends only on each input's dtype, device, shape and
    strides. ``find(*tensors)`` returns the :class:`Replay` filed under those, made the first
    time tensors of that signature passed the wrapper's checks, so that the wrapper can skip
    straight to allocating its output and launching; None when there is none, when a tensor
    is not a plain ``torch.Tensor``, when something watches launches, or when the current
    device is not the one the replay launches on. The wrapper files only what it can replay
    exactly (no conversion of an input, an output it allocates the same way every time).
    """

    def __init__(self, limit: int = 256):
        self.limit = limit  # signatures kept; a program that sees more starts over
        self.entries: dict[tuple, Replay] = {}

    def find(self, x: object, *more: object) -> Replay | None:
        if more:
            tensors = (x, *more)
            if not all(type(t) is torch.Tensor for t in tensors):
                return None
            key = tuple(map(_signature, tensors))
        elif type(x) is torch.Tensor:  # one tensor (a forward): the same key, spelled inline
            key = (x.dtype, x.get_device(), x.shape, x.stride())
        else:
            return None
        replay = self.entries.get(key)
        if replay is None or _watched() or torch._C._cuda_getDevice() != replay.device:
            return None
        return replay

    def file(self, replay: Replay | None, *tensors: torch.Tensor) -> None:
        if replay is None or replay.device != tensors[0].get_device():
            return
        if len(self.entries) >= self.limit:
            self.entries.clear()
        key = _signature(tensors[0]) if len(tensors) == 1 else tuple(map(_signature, tensors))
        self.entries[key] = replay
