"""Does every probe in the lab still start, refuse what it cannot do in one line, and write its
--output only as a script record? (CPU)"""

import sys
from pathlib import Path

import pytest
import warm_python

import learning  # noqa: F401  (selects the Triton backend)
from learning.runtime import interpreting

LAB = Path(__file__).resolve().parent
ROOT = LAB.parent
PROBES = sorted(path for path in LAB.glob("*/*.py") if not path.name.startswith("test_"))
# The probes that time on a GPU, and the arguments that reach the GPU check.
GPU_ONLY = {
    "gemm-autotune-pick/gemm_autotune_pick.py": [],
    "gemm-autotune-pick/gemm_graph_length.py": [],
    "gemm-epilogue/gemm_epilogue.py": [],
    "gemm-waves/gemm_waves.py": [],
    "gemm-weight-grad/gemm_weight_grad.py": [],
    "host-cost/host_cost_probe.py": [],
    "row-plan-cold/row_plan_cold.py": [],
    "stream-ceiling/stream_ceiling.py": [],
    "streaming-gap/rmsnorm_evict.py": [],
    "streaming-gap/streaming_plans.py": [],
    "streaming-gap/streaming_variants.py": [],
}
INTERLEAVED = ["gemm-weight-grad/gemm_weight_grad.py", "gemm-autotune-pick/gemm_autotune_pick.py",
               "streaming-gap/streaming_variants.py", "streaming-gap/streaming_plans.py",
               "streaming-gap/rmsnorm_evict.py"]  # fmt: skip


def _run(probe: str, *args):
    return warm_python.run([sys.executable, str(LAB / probe), *map(str, args)],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip


def _one_line_exit_2(result, prefix):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(prefix)


def test_the_probes_are_found():
    """Each question's folder has its probe (a rename would otherwise empty the lists)."""
    names = {path.relative_to(LAB).as_posix() for path in PROBES}
    assert set(GPU_ONLY) <= names
    assert {"streaming-gap/profile_streaming.py", "gemm-weight-grad/gemm_load_widths.py"} <= names


@pytest.mark.parametrize("probe", PROBES, ids=lambda path: path.relative_to(LAB).as_posix())
def test_a_probe_writes_its_output_through_the_record_writer(probe):
    text = probe.read_text()
    if '"--output"' in text:
        assert "write_json(" in text or "write_output(" in text
        assert ".write_text(" not in text and "write_atomic(" not in text


@pytest.mark.parametrize("probe", PROBES, ids=lambda path: path.relative_to(LAB).as_posix())
def test_a_probe_answers_help(probe):
    """Its imports (the shared helpers in scripts/, the course packages) still resolve."""
    done = _run(probe.relative_to(LAB).as_posix(), "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
@pytest.mark.parametrize("probe", sorted(GPU_ONLY))
def test_a_gpu_probe_refuses_a_cpu_in_one_line_and_writes_nothing(probe, tmp_path):
    output = tmp_path / "out.json"
    done = _run(probe, *GPU_ONLY[probe], "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr
    assert not output.exists()


@pytest.mark.parametrize("probe", INTERLEAVED)
@pytest.mark.parametrize("rounds", ["0", "two"])
def test_an_interleaved_probe_rejects_a_bad_round_count(probe, rounds, tmp_path):
    output = tmp_path / "out.json"
    name = Path(probe).stem
    _one_line_exit_2(_run(probe, "--rounds", rounds, "--output", output), f"{name}: error: ")
    assert not output.exists()


@pytest.mark.parametrize(
    "args",
    [["--op", "matmul", "--shape", "4x4", "--dtype", "float32", "--variant", "compile"],
     ["--op", "add", "--shape", "0x5", "--dtype", "float32", "--variant", "compile"],
     ["--op", "sum", "--shape", "4x4x4", "--dtype", "float32", "--variant", "reference"],
     ["--op", "max", "--shape", "axb", "--dtype", "float32", "--variant", "reference"],
     ["--op", "add", "--shape", "4x4", "--dtype", "int8", "--variant", "reference"],
     ["--op", "add", "--shape", "4x4", "--dtype", "float32", "--variant", "eager"],
     ["--op", "sum", "--shape", "4096x32768", "--dtype", "float32", "--variant", "plan"],
     ["--op", "sum", "--shape", "4096x32768", "--dtype", "float32", "--variant", "reference",
      "--plan", "chunk 4096 w32"],
     ["--op", "softmax", "--shape", "4096x32768", "--dtype", "float32", "--variant", "plan",
      "--plan", "chunk 4096 w32"],
     ["--op", "sum", "--shape", "4096x32768", "--dtype", "float32", "--variant", "plan",
      "--plan", "chunk 999 w3"]],
)  # fmt: skip
def test_the_streaming_profiler_driver_rejects_bad_arguments(args):
    done = _run("streaming-gap/profile_streaming.py", *args)
    _one_line_exit_2(done, "profile_streaming: error: ")


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
@pytest.mark.parametrize("variant", [["--variant", "reference"],
                                     ["--variant", "plan", "--plan", "block 1024 w8"]])
def test_the_streaming_profiler_driver_refuses_a_cpu_in_one_line(variant):
    done = _run("streaming-gap/profile_streaming.py", "--op", "add", "--shape", "64x64",
                "--dtype", "float32", *variant)  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("script", sorted(LAB.glob("*/run.sh")), ids=lambda p: p.parent.name)
def test_a_run_script_names_only_files_that_are_there(script):
    """Every probe or script a question's device runs call is where the run script says."""
    import re
    import subprocess

    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    named = set(re.findall(r"\b((?:lab|scripts)/[\w./-]+\.(?:py|sh))", script.read_text()))
    assert named, "names no script"
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
