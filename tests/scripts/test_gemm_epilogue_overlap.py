"""scripts/gemm_epilogue_overlap.py on a CPU.

It times on a Hopper GPU only; here: its refusal of a CPU and of bad arguments (one line, exit
2, nothing written), and that its rewrite still applies to the landed cooperative kernel and
compiles for sm_90 without spills or a serialized wgmma pipeline (so the GPU run times the
kernel it says it does).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import hopper_binary
import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gemm_epilogue_overlap as probe  # noqa: E402  (imports learning first: the backend)

from learning.runtime import interpreting  # noqa: E402


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(ROOT / "scripts" / "gemm_epilogue_overlap.py"),
                            *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
def test_it_refuses_a_cpu_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "out.json"
    done = _run("--rounds", "1", "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr and not output.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--rounds", "0"], "--rounds"), (["--seconds", "0"], "--seconds"),
    (["--rest-s", "x"], "--rest-s"), (["--shape", "8"], "unrecognized"),
])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(args, says, tmp_path):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemm_epilogue_overlap: ")
    assert says in lines[0] and not output.exists()


def test_the_rewritten_kernel_compiles_for_hopper_pipelined(tmp_path):
    """The rewrite replaces the consumer (one occurrence), and the kernel it makes keeps the
    landed kernel's shared memory and register plan, with no spills and no wgmma serialized
    by ptxas (the first version of the rewrite was, and ran 8-12% slower)."""
    overlap = probe.overlapped(tmp_path)
    assert "tma.async_copy_shared_to_global(c_desc, [kept_row, kept_col], c_buf)" in \
        Path(overlap.__file__).read_text()  # fmt: skip
    compiled = overlap.compile_for_hopper()
    assert compiled.metadata.num_warps == 12 and compiled.metadata.shared <= 227 * 1024
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+232", compiled.asm["ptx"])
    hopper_binary.check_pipelined_without_spills(compiled, tmp_path)

