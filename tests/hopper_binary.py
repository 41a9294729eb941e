"""What a kernel compiled for Hopper (sm_90) turned into, read with the tools Triton ships.

The Gluon GEMM tests compile their kernels on any machine and check the binary: registers
that spill to local memory, and wgmma instructions that ``ptxas`` serialized. The second is
silent in the build (an ``info`` line of ``ptxas -v``, note C7514) and cost 8-12% at every
shape the one time it happened (``results/h200/gemm-epilogue-overlap-serialized.log``): when
code between a wgmma's issue and its wait needs registers the accumulator could not spare,
``ptxas`` makes each wgmma wait for the one before it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import learning  # noqa: F401  (chooses the interpreter before triton is imported)

import triton  # isort: skip  (after learning: the backend is chosen first)

_BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
SERIALIZED = "C7514"  # ptxas: "wgmma.mma_async instructions are serialized due to ..."


def sass(compiled, tmp_path: Path) -> str:
    """The SASS of a ``CompiledKernel``, by ``nvdisasm``."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(compiled.asm["cubin"])
    return subprocess.run([str(_BIN / "nvdisasm"), str(path)], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def ptxas_notes(compiled, tmp_path: Path) -> str:
    """What ``ptxas -v`` says of the kernel's PTX, assembled again for sm_90a."""
    ptx = tmp_path / "kernel.ptx"
    ptx.write_text(compiled.asm["ptx"])
    done = subprocess.run([str(_BIN / "ptxas"), "-v", "--gpu-name", "sm_90a", str(ptx), "-o",
                           str(tmp_path / "again.cubin")], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout + done.stderr


def check_pipelined_without_spills(compiled, tmp_path: Path) -> None:
    """wgmma in the binary, no local-memory traffic, and no wgmma serialized by ptxas."""
    code = sass(compiled, tmp_path)
    assert "HGMMA" in code
    assert not re.search(r"\b(STL|LDL)\b", code), "registers spill to local memory"
    notes = ptxas_notes(compiled, tmp_path)
    assert SERIALIZED not in notes, f"ptxas serialized the wgmma pipeline: {notes.strip()}"
