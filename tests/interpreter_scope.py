"""Triton 3.6's interpreter, made to put back what a device-function call changes.

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

:func:`install` makes a device-function call put back what it changed when it returns (the
launch of the kernel already does so); :func:`snapshot` and :func:`changed` say what differs in
the ``triton.language`` modules between two moments.
"""

from __future__ import annotations

import inspect

import learning  # noqa: F401  (chooses the interpreter before triton is imported)

import triton.language as tl  # isort: skip  (after learning: the backend is chosen first)
from triton.runtime import interpreter as _interpreter  # isort: skip

# what the interpreter patches: these modules, classes and what is reachable from them
_PATCHED = {"triton.language": tl, "triton.language.core": tl.core,
            "triton.language.math": tl.math, "tensor": tl.tensor, "dtype": tl.dtype,
            "tensor_descriptor_base": tl.core.tensor_descriptor_base}  # fmt: skip
_LAZY = {"__annotations__"}  # created on first reading, not patched

TRITONS_DEVICE_CALL = _interpreter.InterpretedFunction.__call__


def _device_call(self, *args, **kwargs):
    """``InterpretedFunction.__call__`` (a jit function called from an interpreted kernel),
    which puts back the builtins it patched once the call returns or raises."""
    scope = _interpreter._patch_lang(self.fn)
    try:
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise _interpreter.InterpreterError(repr(e)) from e
    finally:
        scope.restore()


def install() -> None:
    """Make every device-function call of the interpreter put back what it patched."""
    if not hasattr(_interpreter, "_patch_lang") or not hasattr(_interpreter._LangPatchScope,
                                                                "restore"):  # fmt: skip
        raise RuntimeError(f"triton {triton_version()}'s interpreter has no _patch_lang scope to "
                           "restore: tests/interpreter_scope.py needs updating")  # fmt: skip
    _interpreter.InterpretedFunction.__call__ = _device_call


def installed() -> bool:
    return _interpreter.InterpretedFunction.__call__ is _device_call


def triton_version() -> str:
    import triton

    return triton.__version__


def snapshot() -> dict[str, dict[str, object]]:
    """Every attribute of the patched modules and classes, by owner and name, as stored (a
    class's inherited attributes included)."""
    return {owner: {name: inspect.getattr_static(value, name) for name in dir(value)
                    if name not in _LAZY}
            for owner, value in _PATCHED.items()}  # fmt: skip


def changed(before: dict[str, dict[str, object]]) -> list[str]:
    """``owner.name`` of every attribute that differs from ``before`` (added, removed or now
    another object)."""
    after = snapshot()
    missing = object()
    return sorted(f"{owner}.{name}" for owner in before
                  for name in before[owner].keys() | after[owner].keys()
                  if before[owner].get(name, missing) is not after[owner].get(name, missing))


def restore(before: dict[str, dict[str, object]]) -> None:
    """Put the modules and classes back as ``before`` found them."""
    for owner, attributes in before.items():
        value = _PATCHED[owner]
        for name in set(dir(value)) - attributes.keys() - _LAZY:
            delattr(value, name)
        for name, attribute in attributes.items():
            if inspect.getattr_static(value, name, None) is not attribute:
                setattr(value, name, attribute)
