"""Kernel extraction: the ``@triton.jit`` functions of a package, read as text, never run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KernelBundle:
    """The kernels of one package as plain data (see :func:`extract_kernels`).

    ``modules``: the generated source of each file that holds kernels, keyed by its path
    relative to the package root (``"kernels/softmax.py"``). ``kernels``: every kernel found,
    ``"<relpath>::<function name>"`` -> the module key it lives in.
    """

    package: str
    modules: dict[str, str]
    kernels: dict[str, str]

    def as_dict(self) -> dict:
        """A JSON-serialisable copy."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict) -> KernelBundle:
        """The bundle :meth:`as_dict` wrote; ValueError in one line for anything else."""
        raise NotImplementedError


def extract_kernels(package_root: Path, package: str) -> KernelBundle:
    """Every ``@triton.jit`` function under ``package_root``, checked against the allow-list.

    Each ``.py`` file is parsed (``ast.parse``), never imported. Raises
    :class:`~learning.check.replay.KernelSourceError` for the first construct refused.
    """
    raise NotImplementedError
