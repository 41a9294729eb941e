"""Triton 3.6's interpreter, made to put back everything a kernel launch changes.

Running a kernel in the interpreter (``TRITON_INTERPRET=1``) swaps the builtins of the
``triton.language`` modules that the kernel's own module can see (``tl.add``, ``tl.range``, the
operators of ``tl.tensor``...) for versions that compute with NumPy, and puts the originals back
when the launch ends. A *device* function that the kernel calls (``tl.cdiv``, ``tl.sum``: jit
functions of ``triton.language.standard``) swaps the builtins of the modules that *its* module
can see as well, ``triton.language.core`` among them, and nothing puts those back:
``InterpretedFunction.__call__`` drops its record of what it changed. From then on every
operator of a kernel that Triton really compiles reaches the NumPy versions (``tensor.__add__``
calls ``core.add``), and the next compile in the process fails: the Gluon GEMMs compiled for
sm_90 on a CPU stop at ``gl.cdiv`` with ``'ir.block_argument' object has no attribute 'dtype'``.
Only a compile that misses Triton's cache on disk runs that code, so a fresh clone failed and a
second run, which found the compiled kernels cached, passed.

:func:`install` makes a launch (and a device function called outside one) leave the modules and
classes the interpreter patches as it found them: their attributes are copied when it starts and
put back when it ends. Inside the launch nothing changes, so the interpreter runs as fast as
before (putting back after every device call would make each call patch everything again).
:func:`snapshot` and :func:`changed` say what differs between two moments.
"""

from __future__ import annotations

import threading
import types

import learning  # noqa: F401  (chooses the interpreter before triton is imported)

import triton.language as tl  # isort: skip
from triton.runtime import interpreter as _interpreter  # isort: skip

# what the interpreter patches (triton.runtime.interpreter._patch_lang): these modules, classes
_PATCHED = {"triton.language": tl, "triton.language.core": tl.core,
            "triton.language.math": tl.math, "tensor": tl.tensor, "dtype": tl.dtype,
            "tensor_descriptor_base": tl.core.tensor_descriptor_base}  # fmt: skip
_MISSING = object()

TRITONS_LAUNCH = _interpreter.GridExecutor.__call__
TRITONS_DEVICE_CALL = _interpreter.InterpretedFunction.__call__

_lock = threading.Lock()
_running = 0  # launches and outermost device calls under way, in any thread
_before: dict[str, dict[str, object]] = {}  # what the first of them found


def snapshot() -> dict[str, dict[str, object]]:
    """The attributes each patched module or class holds itself, by owner and name."""
    return {owner: dict(vars(value)) for owner, value in _PATCHED.items()}


def _differences(before: dict[str, dict[str, object]]):
    """``(owner, name, then, now)`` for every attribute added, removed or replaced since
    ``before``, but a submodule imported meanwhile (``tl.extra``: an import, not a patch)."""
    for owner, then in before.items():
        now = dict(vars(_PATCHED[owner]))
        for name in then.keys() | now.keys():
            old, new = then.get(name, _MISSING), now.get(name, _MISSING)
            if old is not new and not (old is _MISSING and isinstance(new, types.ModuleType)):
                yield owner, name, old, new


def changed(before: dict[str, dict[str, object]]) -> list[str]:
    """``owner.name`` of every attribute added, removed or replaced since ``before``."""
    return sorted(f"{owner}.{name}" for owner, name, _, _ in _differences(before))


def restore(before: dict[str, dict[str, object]]) -> None:
    """Put the patched modules and classes back as ``before`` found them."""
    for owner, name, old, _ in list(_differences(before)):
        if old is _MISSING:
            delattr(_PATCHED[owner], name)
        else:
            setattr(_PATCHED[owner], name, old)


def _scoped(run):
    """``run`` (Triton's launch or device call) with everything it patches put back after
    the outermost one ends."""

    def scoped(self, *args, **kwargs):
        global _running, _before
        with _lock:
            if _running == 0:
                _before = snapshot()
            _running += 1
        try:
            return run(self, *args, **kwargs)
        finally:
            with _lock:
                _running -= 1
                if _running == 0:
                    restore(_before)

    scoped.scoped = True
    return scoped


def _device_call(self, *args, **kwargs):
    """A device function: inside a launch as Triton runs it, outside one scoped."""
    if _running:
        return TRITONS_DEVICE_CALL(self, *args, **kwargs)
    return _outermost_device_call(self, *args, **kwargs)


_outermost_device_call = _scoped(TRITONS_DEVICE_CALL)


def install() -> None:
    """Make every interpreter launch put back what it patched, device calls included."""
    _interpreter.GridExecutor.__call__ = _scoped(TRITONS_LAUNCH)
    _interpreter.InterpretedFunction.__call__ = _device_call


def installed() -> bool:
    return (getattr(_interpreter.GridExecutor.__call__, "scoped", False)
            and _interpreter.InterpretedFunction.__call__ is _device_call)  # fmt: skip
