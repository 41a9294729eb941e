"""Does scripts/kernel_binary.py read, on a CPU, what the H200 profiles read on the GPU?

Its register count and register-limited occupancy are checked against every recorded Nsight
Compute profile of a launch plan (`results/h200/ncu-plan-*.log`), and its compile of the
current add against the two whose plans are the add's rules; every row op is compiled once, a
stub reports that it loads nothing, and bad arguments stop in one line."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import kernel_binary as tool  # noqa: E402

PROFILES = sorted((ROOT / "results" / "h200").glob("ncu-plan-*.log"))


def _profile(path: Path) -> dict:
    lines = [line for line in path.read_text().splitlines() if line.startswith('"')]
    rows = csv.DictReader(io.StringIO("\n".join(lines)))
    return {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows}


def _run(*args: str, interpreter: str = "1") -> subprocess.CompletedProcess:
    """The script as a CPU learner runs it: under the interpreter, where it starts itself again
    with ``TRITON_INTERPRET=0`` and CUDA hidden to compile. ``interpreter="0"`` runs it as that
    second process directly (the same compile, one Python start-up fewer)."""
    env = {**os.environ, "TRITON_INTERPRET": interpreter}
    if interpreter == "0":
        env["CUDA_VISIBLE_DEVICES"] = ""
    script = str(ROOT / "scripts" / "kernel_binary.py")
    return warm_python.run([sys.executable, script, *args], capture_output=True, text=True,
                           cwd=ROOT, timeout=600, env=env)  # fmt: skip


@pytest.mark.parametrize("path", PROFILES, ids=lambda path: path.name)
def test_the_register_limit_is_what_nsight_compute_reported(path):
    metrics = _profile(path)
    registers, threads = metrics["launch__registers_per_thread"], metrics["launch__block_size"]
    assert tool.register_limit(int(registers), int(threads)) == int(
        metrics["launch__occupancy_limit_registers"])  # fmt: skip


@pytest.mark.parametrize(("dtype", "profile", "interpreter"), [
    ("float16", "ncu-plan-add-16384x4096-float16-block-8192-w8.log", "1"),
    ("float32", "ncu-plan-add-16384x4096-float32-block-1024-w8.log", "0"),
])  # fmt: skip
def test_the_current_adds_compile_here_as_they_did_on_the_h200(dtype, profile, interpreter):
    """The add's rule picks these plans at 16384 x 4096; compiled on this CPU for sm_90, the
    binary needs the registers the profile read on the H200. (The first as a CPU learner runs
    the script, which starts itself again to compile; the others run that second process.)"""
    done = _run("--op", "add", "--shape", "16384x4096", "--dtype", dtype, interpreter=interpreter)
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = _profile(ROOT / "results" / "h200" / profile)
    registers = int(metrics["launch__registers_per_thread"])
    assert f"registers a thread {registers}," in done.stdout, done.stdout
    assert f"its registers hold {int(metrics['launch__occupancy_limit_registers'])}," in done.stdout


@pytest.mark.parametrize("op", tool.row_ops())
def test_every_row_op_compiles_and_loads(op):
    done = _run("--op", op, "--shape", "37x781", "--dtype", "float16", interpreter="0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"reference {op} 37x781 float16: _")
    assert "global loads" in done.stdout and "not written yet" not in done.stdout


def test_a_stub_says_it_loads_nothing_and_the_listing_is_machine_code():
    done = _run("--op", "sum", "--shape", "16x256", "--dtype", "float32", "--yours",
                interpreter="0")  # fmt: skip
    assert done.returncode == 0 and "(no loads: not written yet?)" in done.stdout
    listing = _run("--op", "max", "--shape", "16x256", "--dtype", "float32", "--listing",
                   interpreter="0")  # fmt: skip
    assert listing.returncode == 0 and "LDG.E" in listing.stdout and "EXIT" in listing.stdout


@pytest.mark.parametrize("args", [
    ["--op", "matmul", "--shape", "64x64x64", "--dtype", "float16"],
    ["--op", "sum", "--shape", "0x5", "--dtype", "float16"],
    ["--op", "sum", "--shape", "axb", "--dtype", "float16"],
    ["--op", "sum", "--shape", "4x4", "--dtype", "int8"],
])  # fmt: skip
def test_bad_arguments_stop_in_one_line(args):
    done = _run(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len((done.stdout + done.stderr).strip().splitlines()) == 1


def test_the_packed_launch_is_what_the_softmax_replay_passes_the_driver():
    """The softmax forward at 1024 x 1024 fp16: the plan's grid and block, the two tensors'
    addresses left to the call, the three integers as their i32 slots, no constexpr among
    them, and the two scratch pointers Triton appends; an op whose kernel takes a float says
    which slot holds it (RMSNorm's eps, fp32)."""
    done = _run("--op", "softmax", "--shape", "1024x1024", "--dtype", "float16", "--packed",
                interpreter="0")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout
    assert "packed launch: grid (512, 1, 1), block 128 threads" in text and "7 parameters" in text
    assert "slot  0: x_ptr                the address of tensor 0" in text
    assert "slot  1: y_ptr                the address of tensor 1" in text
    for slot, name in ((2, "n_rows"), (3, "x_row_stride"), (4, "y_row_stride")):
        assert f"slot  {slot}: {name:20s} 0x0000000000000400  (i32)" in text, text
    assert "slot  5: (global scratch)" in text and "slot  6: (profile scratch)" in text
    assert "BLOCK" not in text.split("packed launch:")[1]  # compiled in, never passed
    rmsnorm = _run("--op", "rmsnorm", "--shape", "1823x781", "--dtype", "float32", "--packed",
                   interpreter="0")  # fmt: skip
    assert rmsnorm.returncode == 0, rmsnorm.stderr[-2000:]
    eps = next(line for line in rmsnorm.stdout.splitlines() if ": eps" in line)
    assert eps.endswith("(fp32)") and "0x00000000358637bd" in eps  # 1e-6 as an fp32's bits


def test_a_listing_is_read_once_per_binary_and_tool(tmp_path, monkeypatch):
    """Is ``cuobjdump`` run again for another binary, other flags or another tool, and only
    then? (Its listings are kept in Triton's cache folder, by a hash of all three.)"""
    import shutil

    import triton

    real = Path(triton.knobs.nvidia.cuobjdump.path)
    fake = tmp_path / "bin" / "cuobjdump"
    fake.parent.mkdir()
    shutil.copy2(real, fake)
    monkeypatch.setenv("TRITON_CUOBJDUMP_PATH", str(fake))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    assert triton.knobs.nvidia.cuobjdump.path == str(fake)  # found (asking its version) first
    runs = []

    def counted(command, **kwargs):
        runs.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=f"listing {len(runs)}\n", stderr="")

    monkeypatch.setattr(tool.subprocess, "run", counted)
    first = tool.cuobjdump(b"binary one", "-sass")
    assert tool.cuobjdump(b"binary one", "-sass") == first == "listing 1\n" and len(runs) == 1
    assert Path(runs[0][0]) == fake and runs[0][1] == "-sass"
    assert tool.cuobjdump(b"binary two", "-sass") == "listing 2\n"
    assert tool.cuobjdump(b"binary one", "-res-usage", "-sass") == "listing 3\n"
    os.utime(fake, ns=(0, 0))  # the tool changed (an upgrade): nothing it printed before counts
    assert tool.cuobjdump(b"binary one", "-sass") == "listing 4\n" and len(runs) == 4
    kept = sorted((tmp_path / "cache" / "cuobjdump").iterdir())
    assert len(kept) == 4 and all(path.suffix == ".txt" for path in kept)


def test_a_cache_folder_that_cannot_be_written_still_gives_the_listing(tmp_path, monkeypatch):
    """Triton's cache folder under a plain file (so it cannot be made): is the listing still
    returned, each time from the tool, with nothing left behind?"""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(blocker / "cache"))
    runs = []

    def counted(command, **kwargs):
        runs.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="listing\n", stderr="")

    import triton

    assert triton.knobs.nvidia.cuobjdump.path  # found (asking its version) before the patch
    monkeypatch.setattr(tool.subprocess, "run", counted)
    assert tool.cuobjdump(b"binary", "-sass") == tool.cuobjdump(b"binary", "-sass") == "listing\n"
    assert len(runs) == 2 and sorted(tmp_path.iterdir()) == [blocker]
