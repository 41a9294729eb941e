"""Where kernels run: a CUDA GPU (compiled) or the CPU (Triton's interpreter).

Triton reads ``TRITON_INTERPRET`` when it is first imported, so the choice has to be made
before anything imports ``triton``. Every entry point (``learning``, ``reference``,
``exercises``) calls :func:`select_backend` on import.
"""

from __future__ import annotations

import os
import sys


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return False
    return torch.cuda.is_available()


def select_backend() -> str:
    """Set ``TRITON_INTERPRET=1`` when there is no GPU; return ``"cuda"`` or ``"interpreter"``.

    An explicit ``TRITON_INTERPRET`` in the environment is respected. Selecting the interpreter
    after ``triton`` was already imported would silently do nothing, so that is an error.
    """
    if "TRITON_INTERPRET" not in os.environ and not _cuda_available():
        if "triton" in sys.modules:
            raise RuntimeError(
                "triton was imported before the course chose a backend; import `learning` "
                "(or `reference`/`exercises`) first, or set TRITON_INTERPRET=1 yourself"
            )
        os.environ["TRITON_INTERPRET"] = "1"
    return backend()


def backend() -> str:
    return "interpreter" if interpreting() else "cuda"


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def default_device() -> str:
    """The torch device the kernels run on: ``cuda`` when compiled, ``cpu`` when interpreted."""
    return "cpu" if interpreting() else "cuda"
