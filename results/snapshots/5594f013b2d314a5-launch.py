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
compiled for it.

Triton's C launch function is generic: it parses some twenty arguments on every call
(``PyArg_ParseTuple``: the grid, the stream, the function, flags, hooks, then each kernel
argument, then the metadata tuple), and most of them never change for one replay. So a
:class:`Replay` packs everything but the tensors' addresses into one ``bytes`` object when it
is made (the function handle, the grid, the block, the shared memory, and every kernel
argument laid out as the driver reads it), and launches through a function of this module's
own (``_C_SOURCE``: ``launch(packed, stream, *addresses)``, ``METH_FASTCALL``, the driver's
``cuLaunchKernel``), built at first use by Triton's own ``compile_module_from_src``, the way
and with the compiler Triton builds its launchers (nothing to build at install time). A
launch it cannot pack exactly (a float or tensor-descriptor argument, a cluster, a
cooperative or PDL launch) keeps Triton's C function; so does a thread with no CUDA context
current, where Triton's function would make one. ``Replays.run_like`` is the repeat call of a
one-input wrapper whose output is ``torch.empty_like`` of its input, in one Python frame:
the signature lookup, the allocation and that launch, with no call into the wrapper's body.
What is left is the floor for a wrapper written in Python, one allocation
(``torch.empty_like``, from Python) and the launch, plus the lookup; ``torch.softmax`` does
all three in C++. ``scripts/host_cost_probe.py`` times these paths whole against each other
(``results/h200/host-cost-probe.log``).

An earlier version of this launcher measured no faster than ``kernel[grid]`` (14.8 against
14.1 us, ``wrapper-overhead-launcher.log``) and was removed. It never took its fast path: it
stepped aside whenever ``knobs.runtime.launch_enter_hook is not None``, and in Triton 3.6 that
knob is an empty ``HookChain``, never None. (Triton's own ``launch_metadata`` makes the same
test, which is why it builds hook metadata on every launch.) The test here asks whether the
chain holds a hook.
"""

from __future__ import annotations

import functools
import struct
from functools import partial

import torch
from triton import knobs
from triton._C.libtriton import native_specialize_impl
from triton.runtime.jit import JITFunction

_TRITONS_RUN = JITFunction.run  # Triton's own launch path, to tell when someone wraps it

# The launch function: everything constant packed once (see the module's docstring). The
# packed bytes are a Header, then one 8-byte slot per kernel parameter (an integer in its
# low bytes, little-endian, as the driver reads it through a pointer), then, for each
# address passed at the call, the index of the slot it fills.
_C_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_kernel_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, void *, void **, void **);
typedef int (*get_context_t)(void **);
typedef int (*error_string_t)(int, const char **);

static launch_kernel_t launch_kernel;
static get_context_t get_context;
static error_string_t error_string;

typedef struct {
  uint64_t function;
  uint32_t grid[3], block, shared, n_params, n_pointers, unused;
} Header;

enum { MAX_PARAMS = 64 };

static int load_driver(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver == NULL) {
    PyErr_Format(PyExc_RuntimeError, "cannot load the CUDA driver: %s", dlerror());
    return 0;
  }
  get_context = (get_context_t)dlsym(driver, "cuCtxGetCurrent");
  error_string = (error_string_t)dlsym(driver, "cuGetErrorString");
  launch_kernel = (launch_kernel_t)dlsym(driver, "cuLaunchKernel");
  if (get_context == NULL || error_string == NULL || launch_kernel == NULL) {
    launch_kernel = NULL;
    PyErr_SetString(PyExc_RuntimeError, "the CUDA driver lacks cuLaunchKernel");
    return 0;
  }
  return 1;
}

/* launch(packed, stream, *addresses) -> True once launched, False with no CUDA context
   current on this thread (the caller then goes through Triton's launcher, which makes one). */
static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  Header header;
  uint64_t values[MAX_PARAMS];
  void *params[MAX_PARAMS];
  void *context = NULL;
  int status;
  if (nargs < 2 || !PyBytes_CheckExact(args[0])) {
    PyErr_SetString(PyExc_TypeError, "launch(packed: bytes, stream: int, *addresses: int)");
    return NULL;
  }
  const char *packed = PyBytes_AS_STRING(args[0]);
  Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
  if (size < (Py_ssize_t)sizeof header) goto malformed;
  memcpy(&header, packed, sizeof header);
  if (header.n_params > MAX_PARAMS || (Py_ssize_t)header.n_pointers != nargs - 2 ||
      size != (Py_ssize_t)(sizeof header + 8 * header.n_params + 4 * header.n_pointers))
    goto malformed;
  memcpy(values, packed + sizeof header, 8 * (size_t)header.n_params);
  for (uint32_t k = 0; k < header.n_pointers; ++k) {
    uint32_t slot;
    memcpy(&slot, packed + sizeof header + 8 * header.n_params + 4 * k, 4);
    if (slot >= header.n_params) goto malformed;
    values[slot] = PyLong_AsUnsignedLongLong(args[2 + k]);
    if (values[slot] == (uint64_t)-1 && PyErr_Occurred()) return NULL;
  }
  void *stream = PyLong_AsVoidPtr(args[1]);
  if (stream == NULL && PyErr_Occurred()) return NULL;
  if (launch_kernel == NULL && !load_driver()) return NULL;
  if (get_context(&context) != 0 || context == NULL) Py_RETURN_FALSE;
  if ((uint64_t)header.grid[0] * header.grid[1] * header.grid[2] == 0) Py_RETURN_TRUE;
  for (uint32_t i = 0; i < header.n_params; ++i) params[i] = &values[i];
  Py_BEGIN_ALLOW_THREADS
  status = launch_kernel((void *)(uintptr_t)header.function, header.grid[0], header.grid[1],
                         header.grid[2], header.block, 1, 1, header.shared, stream, params, NULL);
  Py_END_ALLOW_THREADS
  if (status != 0) {
    const char *reason = NULL;
    error_string(status, &reason);
    PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed: %s (CUDA error %d)",
                 reason ? reason : "unknown", status);
    return NULL;
  }
  Py_RETURN_TRUE;
malformed:
  PyErr_SetString(PyExc_ValueError, "launch: the packed launch does not match its addresses");
  return NULL;
}

static PyMethodDef methods[] = {
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "launch a packed kernel"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "workshop_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_workshop_launch(void) { return PyModule_Create(&module); }
"""

_HEADER = struct.Struct("<Q8I")  # the C Header: function, grid x/y/z, block, shared, counts
_MAX_PARAMS = 64  # the C source's MAX_PARAMS: a kernel with more keeps Triton's launcher
_SCALARS = {  # Triton's scalar types -> struct codes, as the kernel parameter is laid out
    "i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "fp32": "f",
}  # fmt: skip


@functools.cache
def direct_launch():
    """The launch function of ``_C_SOURCE`` (built once, cached by Triton), or None with the
    reason it could not be built (no C compiler); Triton's C function is used then."""
    from triton.runtime.build import compile_module_from_src

    try:
        return compile_module_from_src(_C_SOURCE, "workshop_launch").launch
    except Exception as error:  # the compiler's own message is in Triton's log
        direct_launch.reason = f"{type(error).__name__}: {error}"
        return None


def pack_launch(compiled, grid: tuple, values: tuple, n_tensors: int) -> bytes | None:
    """The ``packed`` argument of the launch function for ``compiled`` launched on ``grid``
    with ``values`` (every kernel parameter, in order; the first ``n_tensors`` are tensors,
    whose addresses come at the call), or None where only Triton's launcher is exact."""
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    metadata = getattr(compiled, "metadata", None)
    if not isinstance(signature, dict) or len(signature) != len(values) or metadata is None:
        return None
    if (getattr(metadata, "num_ctas", 1) != 1 or getattr(metadata, "launch_cooperative_grid", 0)
            or getattr(metadata, "launch_pdl", 0)):  # fmt: skip
        return None
    slots, pointers = [], []
    try:
        for index, (kind, value) in enumerate(zip(signature.values(), values, strict=True)):
            if kind == "constexpr":  # compiled in, not passed
                continue
            if isinstance(kind, str) and kind.startswith("*") and index < n_tensors:
                pointers.append(len(slots))
                slots.append(bytes(8))
            elif kind in _SCALARS and not isinstance(value, torch.Tensor):
                slots.append(struct.pack("<" + _SCALARS[kind], value).ljust(8, b"\0"))
            else:  # a float of another width, a tensor descriptor, a tuple: Triton's launcher
                return None
        slots += [bytes(8)] * 2  # the global and profile scratch pointers Triton appends (none)
        grid_xyz = (*grid, 1, 1)[:3]
        header = _HEADER.pack(compiled.function, *grid_xyz, 32 * metadata.num_warps,
                              metadata.shared, len(slots), len(pointers), 0)  # fmt: skip
    except (struct.error, OverflowError, TypeError):
        # a value its C type cannot hold (an fp32 beyond 3.4e38, which Triton's launcher
        # passes as inf): Triton's launcher then, which does what it always did
        return None
    if len(pointers) != n_tensors or len(slots) > _MAX_PARAMS:
        return None
    return header + b"".join(slots) + struct.pack(f"<{len(pointers)}I", *pointers)


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
    runtime = knobs.runtime
    try:  # Triton 3.6's hook chains (this runs on every replayed call: the short way first)
        return bool(runtime.launch_enter_hook.calls or runtime.launch_exit_hook.calls)
    except AttributeError:  # a hook assigned as a plain function, or None
        hooks = (runtime.launch_enter_hook, runtime.launch_exit_hook)
        return any(hook is not None and getattr(hook, "calls", True) for hook in hooks)


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
            launch, function, metadata, cooperative, pdl, constants, _ = entry
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
        return Replay(self, entry, device, grid, args[tensors:], meta, tensors)

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
        cooperative, pdl = launcher.launch_cooperative_grid, launcher.launch_pdl
        return (launch, compiled.function, compiled.packed_metadata, cooperative, pdl, constants,
                compiled)  # fmt: skip


def _signature(t: torch.Tensor) -> tuple:
    return (t.dtype, t.get_device(), t.shape, t.stride())


class Replay:
    """One launch the wrapper made, to be made again on other tensors of the same signature.

    It holds everything but the pointers: the binary, the grid, the integer arguments and the
    compile-time values, packed for the module's launch function (``packed``; None where only
    Triton's C function is exact, which it then holds too). ``replay(*tensors)`` launches it
    with those tensors' addresses, passed as integers (so no per-pointer driver check: the
    tensors' device was checked when the replay was made). A tensor whose address is not a
    multiple of 16 bytes (the binary was compiled for aligned ones) goes through the launcher
    instead, which finds or compiles the right binary.
    """

    __slots__ = ("launcher", "grid", "meta", "device", "rest", "launch", "middle", "tail",
                 "packed", "direct")  # fmt: skip

    def __init__(self, launcher: Launcher, entry: tuple, device: int, grid, rest: tuple, meta,
                 n_tensors: int):  # fmt: skip
        self.launcher, self.grid, self.meta, self.device = launcher, grid, meta, device
        self.rest = rest  # the arguments after the leading tensors (integers)
        launch, function, metadata, cooperative, pdl, constants, compiled = entry
        self.launch = partial(launch, *((*grid, 1, 1)[:3] if len(grid) < 3 else grid))
        self.middle = (function, cooperative, pdl, None, None, metadata, None, None, None)
        self.tail = (*rest, *constants)
        values = (*(None,) * n_tensors, *self.tail)
        packed = pack_launch(compiled, grid, values, n_tensors)
        self.direct = None if packed is None else direct_launch()  # the launch function
        self.packed = None if self.direct is None else packed

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
        if self.direct is None or not self.direct(self.packed, stream, *pointers):
            self.launch(stream, *self.middle, *pointers, *self.tail)  # Triton's C function
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

    def run_like(self, x: object) -> torch.Tensor | None:
        """A one-input wrapper's repeat call in one step: ``y = torch.empty_like(x)``, the
        launch filed for ``x``'s signature replayed on ``(x, y)``, and ``y``; None (nothing
        allocated, nothing launched) where :meth:`find` would find nothing. The wrapper's
        output must be ``torch.empty_like(x)`` and its kernel's tensors ``(x, y)``."""
        if type(x) is not torch.Tensor:
            return None
        replay = self.entries.get((x.dtype, x.get_device(), x.shape, x.stride()))
        if replay is None or torch._C._cuda_getDevice() != replay.device or _watched():
            return None
        y = torch.empty_like(x)
        x_address, y_address = x.data_ptr(), y.data_ptr()
        direct = replay.direct
        if (
            direct is None
            or (x_address | y_address) & 15
            or not direct(replay.packed, torch._C._cuda_getCurrentRawStream(replay.device),
                          x_address, y_address)  # fmt: skip
        ):
            replay(x, y)  # the general path: Triton's C function, or the launcher
            return y
        replay.launcher.direct_launches += 1
        return y

    def file(self, replay: Replay | None, *tensors: torch.Tensor) -> None:
        if replay is None or replay.device != tensors[0].get_device():
            return
        if len(self.entries) >= self.limit:
            self.entries.clear()
        key = _signature(tensors[0]) if len(tensors) == 1 else tuple(map(_signature, tensors))
        self.entries[key] = replay
