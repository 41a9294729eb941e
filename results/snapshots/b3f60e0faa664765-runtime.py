"""Where kernels run: a CUDA GPU (compiled) or the CPU (Triton's interpreter).

Triton reads ``TRITON_INTERPRET`` when it is first imported, so the choice has to be made
before anything imports ``triton``. Asking whether there is a GPU means importing torch
(seconds), which a command that only reads reports never needs; so importing ``learning``
calls :func:`select_backend_before_triton`, which makes the choice at the first moment it
matters: when anything imports ``triton``, or asks this module which backend is in use. The
kernel packages (``reference``, ``exercises``), which import triton at once, call
:func:`select_backend` on import.
"""

from __future__ import annotations

import importlib.abc
import os
import sys


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return False
    return torch.cuda.is_available()


class _SelectBeforeTriton(importlib.abc.MetaPathFinder):
    """Chooses the backend when ``triton`` is about to be imported, then steps aside.

    It finds nothing itself: Python goes on to the ordinary finders, which import the real
    Triton after ``TRITON_INTERPRET`` has been set.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "triton":
            select_backend()
        return None


_HOOK = _SelectBeforeTriton()


def _pending() -> bool:
    return _HOOK in sys.meta_path


def select_backend() -> str:
    """Set ``TRITON_INTERPRET=1`` when there is no GPU; return ``"cuda"`` or ``"interpreter"``.

    An explicit ``TRITON_INTERPRET`` in the environment is respected. Selecting the interpreter
    after ``triton`` was already imported would silently do nothing, so that is an error.
    """
    while _pending():
        sys.meta_path.remove(_HOOK)
    if "TRITON_INTERPRET" not in os.environ and not _cuda_available():
        if "triton" in sys.modules:
            raise RuntimeError(
                "triton was imported before the course chose a backend; import `learning` "
                "(or `reference`/`exercises`) first, or set TRITON_INTERPRET=1 yourself"
            )
        os.environ["TRITON_INTERPRET"] = "1"
    return backend()


def select_backend_before_triton() -> None:
    """Choose the backend no later than the first import of ``triton``, without importing
    torch now: at once when the environment already says (or triton is already imported),
    otherwise on that import or on the first call of :func:`backend`, :func:`interpreting` or
    :func:`default_device`, whichever comes first."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        select_backend()
    elif not _pending():
        sys.meta_path.insert(0, _HOOK)


def backend() -> str:
    return "interpreter" if interpreting() else "cuda"


def interpreting() -> bool:
    if _pending():
        select_backend()
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def default_device() -> str:
    """The torch device the kernels run on: ``cuda`` when compiled, ``cpu`` when interpreted."""
    return "cpu" if interpreting() else "cuda"
