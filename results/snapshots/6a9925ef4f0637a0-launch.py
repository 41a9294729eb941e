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
current, where Triton's function would make one.

A one-input wrapper whose output is ``torch.empty_like`` of its input
(``Replays(like=True)``) makes its repeat call whole in C: ``Replays.repeat``, the module's
``repeat`` bound to the Replays' state. In Python, even with no frame but the wrapper's, the
lookup's four tensor attribute reads, the tuple, its hash, the hooks test, two addresses,
the allocation and the launch are a dozen calls with bytecode between them; in C the same
calls through Python's C API cost the calls alone, and the signature is tested first with
torch's own guard of a compiled graph's tensor input (``TensorGuards.check``: dtype, device,
requires_grad, sizes, strides and dispatch keys, read in C++ at once) for the signature the
last call found, with the lookup only when that guard fails. On this course's CPU machine
(CPU tensors, a stand-in driver) that path costs 1.12 us where ``run_like`` in Python costs
1.86, and 0.59 of it is ``torch.empty_like``. ``Replays.run_like`` calls it first and keeps
the same steps in Python for what it leaves (a replay with no packed launch, a thread with no
CUDA context). What is left is the floor for a wrapper with no C++ of its own: the
allocation, called through Python's C API, the attribute reads the guard does not cover (two
addresses, the stream) and the launch; ``torch.softmax`` does the allocation and the launch
in C++ with no Python object between. ``scripts/host_cost_probe.py`` times these paths whole
against each other (``results/h200/host-cost-probe.log``).

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
from triton.knobs import HookChain
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

#ifdef WORKSHOP_STAND_IN_DRIVER
/* The tests' driver (a CPU has none): one context, and each launch recorded, not made. */
static uint64_t recorded[7], recorded_params[MAX_PARAMS];
static uint32_t n_recorded;
static int stand_in_context(void **context) {
  *context = (void *)0x600d;
  return 0;
}
static int stand_in_error(int status, const char **reason) {
  *reason = "stand-in";
  return 0;
}
static int stand_in_launch(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared, void *stream,
                           void **params, void **extra) {
  uint64_t fields[7] = {(uintptr_t)function, gx, gy, gz, bx, shared, (uintptr_t)stream};
  memcpy(recorded, fields, sizeof fields);
  for (n_recorded = 0; n_recorded < MAX_PARAMS && params[n_recorded]; ++n_recorded)
    recorded_params[n_recorded] = *(uint64_t *)params[n_recorded];
  return 0;
}
/* last_launch() -> (function, grid, block, shared, stream, params) of the last launch */
static PyObject *last_launch(PyObject *self, PyObject *unused) {
  PyObject *params = PyTuple_New(n_recorded);
  if (params == NULL) return NULL;
  for (uint32_t i = 0; i < n_recorded; ++i)
    PyTuple_SET_ITEM(params, i, PyLong_FromUnsignedLongLong(recorded_params[i]));
  return Py_BuildValue("(K(KKK)KKKN)", recorded[0], recorded[1], recorded[2], recorded[3],
                       recorded[4], recorded[5], recorded[6], params);
}
#endif

static int load_driver(void) {
#ifdef WORKSHOP_STAND_IN_DRIVER
  get_context = stand_in_context;
  error_string = stand_in_error;
  launch_kernel = stand_in_launch;
  return 1;
#endif
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

/* Launch `packed` on `stream` with these addresses in its pointer slots: 1 once launched,
   0 with no CUDA context current on this thread, -1 with an exception set. */
static int launch_packed(PyObject *packed_object, void *stream, const uint64_t *addresses,
                         Py_ssize_t n_addresses) {
  Header header;
  uint64_t values[MAX_PARAMS];
  void *params[MAX_PARAMS + 1];
  void *context = NULL;
  int status;
  const char *packed = PyBytes_AS_STRING(packed_object);
  Py_ssize_t size = PyBytes_GET_SIZE(packed_object);
  if (size < (Py_ssize_t)sizeof header) goto malformed;
  memcpy(&header, packed, sizeof header);
  if (header.n_params > MAX_PARAMS || (Py_ssize_t)header.n_pointers != n_addresses ||
      size != (Py_ssize_t)(sizeof header + 8 * header.n_params + 4 * header.n_pointers))
    goto malformed;
  memcpy(values, packed + sizeof header, 8 * (size_t)header.n_params);
  for (uint32_t k = 0; k < header.n_pointers; ++k) {
    uint32_t slot;
    memcpy(&slot, packed + sizeof header + 8 * header.n_params + 4 * k, 4);
    if (slot >= header.n_params) goto malformed;
    values[slot] = addresses[k];
  }
  if (launch_kernel == NULL && !load_driver()) return -1;
  if (get_context(&context) != 0 || context == NULL) return 0;
  if ((uint64_t)header.grid[0] * header.grid[1] * header.grid[2] == 0) return 1;
  for (uint32_t i = 0; i < header.n_params; ++i) params[i] = &values[i];
  params[header.n_params] = NULL;
  Py_BEGIN_ALLOW_THREADS
  status = launch_kernel((void *)(uintptr_t)header.function, header.grid[0], header.grid[1],
                         header.grid[2], header.block, 1, 1, header.shared, stream, params, NULL);
  Py_END_ALLOW_THREADS
  if (status != 0) {
    const char *reason = NULL;
    error_string(status, &reason);
    PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed: %s (CUDA error %d)",
                 reason ? reason : "unknown", status);
    return -1;
  }
  return 1;
malformed:
  PyErr_SetString(PyExc_ValueError, "launch: the packed launch does not match its addresses");
  return -1;
}

/* launch(packed, stream, *addresses) -> True once launched, False with no CUDA context
   current on this thread (the caller then goes through Triton's launcher, which makes one). */
static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  uint64_t addresses[MAX_PARAMS];
  if (nargs < 2 || !PyBytes_CheckExact(args[0])) {
    PyErr_SetString(PyExc_TypeError, "launch(packed: bytes, stream: int, *addresses: int)");
    return NULL;
  }
  if (nargs - 2 > MAX_PARAMS) {
    PyErr_SetString(PyExc_ValueError, "launch: the packed launch does not match its addresses");
    return NULL;
  }
  for (Py_ssize_t k = 0; k < nargs - 2; ++k) {
    addresses[k] = PyLong_AsUnsignedLongLong(args[2 + k]);
    if (addresses[k] == (uint64_t)-1 && PyErr_Occurred()) return NULL;
  }
  void *stream = PyLong_AsVoidPtr(args[1]);
  if (stream == NULL && PyErr_Occurred()) return NULL;
  int launched = launch_packed(args[0], stream, addresses, nargs - 2);
  if (launched < 0) return NULL;
  return PyBool_FromLong(launched);
}

/* context() -> the CUDA context current on this thread as an integer (0: none). */
static PyObject *context(PyObject *self, PyObject *unused) {
  void *current = NULL;
  if (launch_kernel == NULL && !load_driver()) return NULL;
  if (get_context(&current) != 0) current = NULL;
  return PyLong_FromVoidPtr(current);
}

/* The repeat call of a one-input wrapper whose output is torch.empty_like(x), bound to the
   state its Replays keeps (a list, read here by index): */
enum {
  COUNT,       /* the calls this function launched (an int it replaces) */
  ENTRIES,     /* (x.dtype, x.get_device(), x.shape, x.stride()) ->
                  (packed, context, device, check): check(x) is True for x of that signature
                  (torch's compiled-graph guard), or None */
  LAST,        /* the entry the last call found, whose check is tried first; or None */
  TENSOR,      /* torch.Tensor: a subclass may override anything, so it steps aside */
  EMPTY_LIKE,  /* torch.empty_like */
  STREAM,      /* torch._C._cuda_getCurrentRawStream */
  GRAD_MODE,   /* torch.is_grad_enabled */
  JIT,         /* triton's JITFunction, and */
  RUN,         /* its own run: another there means something counts launches */
  RUNTIME,     /* triton.knobs.runtime, whose launch hooks must be */
  CHAIN,       /* HookChain objects with no hook in them */
  STATE_SIZE
};
#define STATE(index) PyList_GET_ITEM(state, index)

static PyObject *s_requires_grad, *s_run, *s_enter, *s_exit, *s_calls, *s_dtype, *s_shape,
    *s_get_device, *s_stride, *s_data_ptr;

/* 1: a HookChain with no hook; 0: anything else (a hook, or a knob replaced). Steals hook. */
static int quiet(PyObject *hook, PyObject *chain) {
  int result = 0;
  if (hook == NULL) return 0;
  if ((PyObject *)Py_TYPE(hook) == chain) {
    PyObject *calls = PyObject_GetAttr(hook, s_calls);
    result = calls != NULL && PyList_CheckExact(calls) && PyList_GET_SIZE(calls) == 0;
    Py_XDECREF(calls);
  }
  Py_DECREF(hook);
  return result;
}

static int address_of(PyObject *tensor, uint64_t *address) {
  PyObject *pointer = PyObject_CallMethodNoArgs(tensor, s_data_ptr);
  if (pointer == NULL) return 0;
  *address = PyLong_AsUnsignedLongLong(pointer);
  Py_DECREF(pointer);
  return !(*address == (uint64_t)-1 && PyErr_Occurred());
}

/* repeat(x) -> y, launched, or None where the wrapper's own path must run: a new signature,
   not a plain tensor, autograd recording, a launch watched, another context current, an
   address the binary was not compiled for. Whatever fails while it only looks is left to
   that path to report; an allocation or a launch that fails raises here. */
static PyObject *repeat(PyObject *state, PyObject *x) {
  PyObject *item, *key, *entry, *y = NULL, *stream_object;
  uint64_t addresses[2];
  void *current = NULL, *stream;
  int flag, launched;
  if (!PyList_CheckExact(state) || PyList_GET_SIZE(state) != STATE_SIZE) {
    PyErr_SetString(PyExc_TypeError, "repeat: its state is not a Replays' state");
    return NULL;
  }
  if ((PyObject *)Py_TYPE(x) != STATE(TENSOR)) Py_RETURN_NONE;
  item = PyObject_GetAttr(STATE(JIT), s_run);
  if (item == NULL) goto step_aside;
  flag = item == STATE(RUN);
  Py_DECREF(item);
  if (!flag || !quiet(PyObject_GetAttr(STATE(RUNTIME), s_enter), STATE(CHAIN)) ||
      !quiet(PyObject_GetAttr(STATE(RUNTIME), s_exit), STATE(CHAIN)))
    goto step_aside;
  /* the last signature's guard first: dtype, device, requires_grad (filed False), sizes,
     strides and dispatch keys, read in C++ at once; then the lookup the guard stands for */
  entry = STATE(LAST);
  flag = 0;
  if (entry != Py_None && PyTuple_GET_ITEM(entry, 3) != Py_None) {
    item = PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 3), x);
    if (item == NULL) goto step_aside;
    flag = item == Py_True;
    Py_DECREF(item);
  }
  if (!flag) {
    item = PyObject_GetAttr(x, s_requires_grad);
    if (item == NULL) goto step_aside;
    flag = item == Py_True;
    Py_DECREF(item);
    if (flag) {
      item = PyObject_CallNoArgs(STATE(GRAD_MODE));
      if (item == NULL) goto step_aside;
      flag = item == Py_True;
      Py_DECREF(item);
      if (flag) Py_RETURN_NONE;
    }
    key = PyTuple_New(4);
    if (key == NULL) return NULL;
    PyTuple_SET_ITEM(key, 0, PyObject_GetAttr(x, s_dtype));
    PyTuple_SET_ITEM(key, 1, PyObject_CallMethodNoArgs(x, s_get_device));
    PyTuple_SET_ITEM(key, 2, PyObject_GetAttr(x, s_shape));
    PyTuple_SET_ITEM(key, 3, PyObject_CallMethodNoArgs(x, s_stride));
    for (int i = 0; i < 4; ++i)
      if (PyTuple_GET_ITEM(key, i) == NULL) {
        Py_DECREF(key);
        goto step_aside;
      }
    entry = PyDict_GetItemWithError(STATE(ENTRIES), key);
    Py_DECREF(key);
    if (entry == NULL) goto step_aside;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 4 ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(entry, 0))) {
      PyErr_SetString(PyExc_TypeError,
                      "repeat: an entry is not (packed, context, device, check)");
      return NULL;
    }
    Py_INCREF(entry);
    if (PyList_SetItem(state, LAST, entry) < 0) return NULL; /* took the reference */
  }
  Py_INCREF(entry); /* held: the allocation may run Python that files or clears entries */
  if (launch_kernel == NULL && !load_driver()) goto release;
  if (get_context(&current) != 0 || current == NULL ||
      current != PyLong_AsVoidPtr(PyTuple_GET_ITEM(entry, 1)))
    goto release;
  if (!address_of(x, &addresses[0]) || (addresses[0] & 15)) goto release;
  y = PyObject_CallOneArg(STATE(EMPTY_LIKE), x);
  if (y == NULL) goto fail;
  if (!address_of(y, &addresses[1]) || (addresses[1] & 15)) goto release;
  stream_object = PyObject_CallOneArg(STATE(STREAM), PyTuple_GET_ITEM(entry, 2));
  if (stream_object == NULL) goto fail;
  stream = PyLong_AsVoidPtr(stream_object);
  Py_DECREF(stream_object);
  if (stream == NULL && PyErr_Occurred()) goto fail;
  launched = launch_packed(PyTuple_GET_ITEM(entry, 0), stream, addresses, 2);
  if (launched < 0) goto fail;
  if (launched == 0) goto release;
  Py_DECREF(entry);
  item = PyLong_FromSsize_t(PyLong_AsSsize_t(STATE(COUNT)) + 1);
  if (item == NULL || PyList_SetItem(state, COUNT, item) < 0) {
    Py_DECREF(y);
    return NULL;
  }
  return y;
release:
  Py_XDECREF(y);
  Py_DECREF(entry);
step_aside:
  PyErr_Clear();
  Py_RETURN_NONE;
fail:
  Py_XDECREF(y);
  Py_DECREF(entry);
  return NULL;
}

static PyMethodDef repeat_method = {"repeat", repeat, METH_O, "a Replays' repeat call"};

/* bind(state) -> repeat with that state: one object to call, one argument, no lookup. */
static PyObject *bind(PyObject *self, PyObject *state) {
  if (!PyList_CheckExact(state) || PyList_GET_SIZE(state) != STATE_SIZE) {
    PyErr_Format(PyExc_TypeError, "bind: the state must be a list of %d", STATE_SIZE);
    return NULL;
  }
  return PyCFunction_NewEx(&repeat_method, state, NULL);
}

static PyMethodDef methods[] = {
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "launch a packed kernel"},
  {"context", context, METH_NOARGS, "the CUDA context current on this thread"},
  {"bind", bind, METH_O, "a Replays' repeat call, bound to its state"},
#ifdef WORKSHOP_STAND_IN_DRIVER
  {"last_launch", last_launch, METH_NOARGS, "what the stand-in driver was last asked"},
#endif
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "workshop_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_workshop_launch(void) {
  const char *names[] = {"requires_grad", "run", "launch_enter_hook", "launch_exit_hook",
                         "calls", "dtype", "shape", "get_device", "stride", "data_ptr"};
  PyObject **slots[] = {&s_requires_grad, &s_run, &s_enter, &s_exit, &s_calls, &s_dtype,
                        &s_shape, &s_get_device, &s_stride, &s_data_ptr};
  for (int i = 0; i < 10; ++i)
    if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
  return PyModule_Create(&module);
}
"""

_HEADER = struct.Struct("<Q8I")  # the C Header: function, grid x/y/z, block, shared, counts
_MAX_PARAMS = 64  # the C source's MAX_PARAMS: a kernel with more keeps Triton's launcher
_SCALARS = {  # Triton's scalar types -> struct codes, as the kernel parameter is laid out
    "i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "fp32": "f",
}  # fmt: skip


@functools.cache
def launch_module():
    """The module ``_C_SOURCE`` builds (once, cached by Triton), or None with the reason it
    could not be built (no C compiler): Triton's C function is used then."""
    from triton.runtime.build import compile_module_from_src

    try:
        return compile_module_from_src(_C_SOURCE, "workshop_launch")
    except Exception as error:  # the compiler's own message is in Triton's log
        launch_module.reason = direct_launch.reason = f"{type(error).__name__}: {error}"
        return None


def direct_launch():
    """The module's launch function, ``launch(packed, stream, *addresses)``, or None (the
    reason in ``direct_launch.reason``)."""
    module = launch_module()
    return None if module is None else module.launch


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

    def __call__(self, grid: tuple[int, ...], args: tuple, *, signature_key: tuple | None = None,
                 replay: bool = True, **meta) -> Replay | None:  # fmt: skip
        """Launch; return a :class:`Replay` of this launch, or None where only Triton's path
        is exact (the interpreter, a watched launch, an argument Triton cannot key) or
        ``replay`` is False.

        ``signature_key``: the caller's own stand-in for the arguments' specialization, for a
        caller that knows what Triton compiles apart (the Hopper GEMMs' tensor descriptors
        specialize on their dtype, block and layout alone, which the operands' dtype and
        orientation decide): the key then costs a tuple, not a ``specialize_impl`` call per
        argument (each a few microseconds for a descriptor, which calls back into Python)."""
        if self.interpreted or _watched():
            self.kernel[grid](*args, **meta)
            return None
        device = torch.cuda.current_device()
        if signature_key is None:
            backend = self.kernel.device_caches[device][3]  # what kernel[grid] specializes with
            specialization = _specialization(backend, args)
        else:
            specialization = ("caller's key", signature_key)
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
        return self._replay(entry, device, grid, args, meta) if replay else None

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


def _no_repeat(x: object) -> None:
    """A :class:`Replays`' ``repeat`` until it has a packed launch filed: always None."""
    return None


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

    ``Replays(like=True)`` is for a one-input wrapper whose output is ``torch.empty_like`` of
    its input and whose kernel's tensors are ``(input, output)``. Its :meth:`run_like` makes a
    repeat call in one step, and its ``repeat(x)`` makes that call whole in C (the module's
    ``repeat``, bound to this object's state): the same tests as :meth:`find`, in the same
    order, with no Python frame. ``repeat`` returns the output, or None where the wrapper's
    own path must run (it allocates and launches nothing then); ``repeats`` counts its
    launches.
    """

    def __init__(self, limit: int = 256, like: bool = False):
        self.limit = limit  # signatures kept; a program that sees more starts over
        self.like = like
        self.entries: dict[tuple, Replay] = {}
        self.packed: dict[tuple, tuple] = {}  # signature -> (packed, context, device): repeat's
        self.repeat = _no_repeat  # the C repeat call, bound at the first packed launch filed
        self._state: list | None = None

    @property
    def repeats(self) -> int:
        """Repeat calls made whole in C (``repeat`` returned an output)."""
        return 0 if self._state is None else self._state[0]

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
        output must be ``torch.empty_like(x)`` and its kernel's tensors ``(x, y)``. The C
        ``repeat`` first; then the same in Python, for what it leaves (a replay with no
        packed launch, a thread with no CUDA context)."""
        y = self.repeat(x)
        if y is not None or type(x) is not torch.Tensor:
            return y
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
            self.packed.clear()
        key = _signature(tensors[0]) if len(tensors) == 1 else tuple(map(_signature, tensors))
        self.entries[key] = replay
        if self.like and len(tensors) == 1 and replay.packed is not None:
            module = launch_module()
            if self._state is None:
                self._state = [0, self.packed, None, torch.Tensor, torch.empty_like,
                               torch._C._cuda_getCurrentRawStream, torch.is_grad_enabled,
                               JITFunction, _TRITONS_RUN, knobs.runtime, HookChain]  # fmt: skip
                self.repeat = module.bind(self._state)
            self._state[2] = None  # the entry the last repeat found: found afresh
            # filed right after the launch: the context current now is the one it ran in
            self.packed[key] = (replay.packed, module.context(), replay.device,
                                _guard(tensors[0]))  # fmt: skip


def _guard(x: torch.Tensor):
    """``check(t)``: True for a tensor of ``x``'s signature that does not require grad (and
    has the same dispatch keys), read in C++ at once: the guard torch.compile puts on a
    compiled graph's tensor inputs (``torch._C._dynamo.guards.TensorGuards``, private). None
    where this torch has no such guard: the repeat call then looks the signature up alone."""
    try:
        from torch._C._dynamo.guards import TensorGuards

        guard = TensorGuards(x.detach(), dynamic_dims_sizes=None, dynamic_dims_strides=None)
        if guard.check(x.detach()) is True:
            return guard.check
    except Exception:  # another torch's guard, or none: the lookup alone is exact
        pass
    return None
