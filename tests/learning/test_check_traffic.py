"""What the replay sees in the interpreter's loads and stores: out-of-bounds loads, the bytes a
kernel moves, and the picture of a failed check (``learning.check.replay.watch``,
``learning.check.traffic``, ``learning.check.picture``).

Each faulty kernel is a throwaway implementation package in ``tmp_path``, graded by name as
``exercises`` is; the unit tests replay a recorded trace directly.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import graded_reference  # which worker grades the reference (tests/graded_reference.py)
import pytest
import test_check_kernels as check_kernels
import torch
from own_work import PLAIN_ADD_MODULE  # a learner's add

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.check import kernels, picture, traffic
from learning.check.replay import TraceRecorder, extract_kernels, replay

REPO = Path(__file__).resolve().parents[2]



def make_impl(tmp_path: Path, monkeypatch, **modules: str) -> tuple[str, Path]:
    """test_check_kernels.make_impl's package, and its folder."""
    package = check_kernels.make_impl(tmp_path, monkeypatch, **modules)
    return package, tmp_path / package


def traffic_check(results) -> object:
    (found,) = [r for r in results if r.name.endswith("memory traffic")]
    return found


def ratios(check) -> dict[str, float]:
    """Each case's (loaded + stored) / logical bytes, by check name and dtype."""
    return {
        f"{entry['check']} {entry['dtype']}": (entry["traffic"]["loaded_bytes"] +
                                               entry["traffic"]["stored_bytes"]) /
        entry["traffic"]["logical_bytes"] for entry in check["cases"]
    }  # fmt: skip


# --------------------------------------------------------------------------- the watch alone


SHIFTED_COPY = check_kernels.HEADER + """
@triton.jit
def copy_kernel(x_ptr, out_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    unused = tl.load(x_ptr + offsets + SHIFT, mask=mask)  # never stored
    tl.store(out_ptr + offsets, tl.where(unused == unused, x, x), mask=mask)


def copy(x, shift):
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), SHIFT=shift, BLOCK=64)
    return out
"""


def _replayed(tmp_path, monkeypatch, shift: int, owners: bool = False):
    package, root = make_impl(tmp_path, monkeypatch, copy=SHIFTED_COPY)
    module = __import__(f"{package}.kernels.copy", fromlist=["copy"])
    x = torch.arange(200, dtype=torch.float32)
    recorder = TraceRecorder(root)
    recorder.add_input("x", x)
    with recorder:
        out = module.copy(x, shift)
    trace = json.loads(json.dumps(recorder.trace()))
    described = json.loads(json.dumps(recorder.describe_outputs((out,))))
    bundle = extract_kernels(root, package)
    return replay(bundle, trace, described, {"x": x.clone()}, device="cpu", owners=owners)


def test_a_load_past_the_end_that_is_never_stored_is_named(tmp_path, monkeypatch):
    """Is a load outside the input reported with its kernel, program id and distance, though
    the value it reads never reaches the output (which stays right)?"""
    result = _replayed(tmp_path, monkeypatch, shift=3)
    assert torch.equal(result.outputs[0], torch.arange(200, dtype=torch.float32))
    # 200 elements in blocks of 64: program 3 covers 192..199 and reads up to 202.
    assert result.stray_loads == ["copy_kernel loads 3 elements past the end of x, "
                                  "program (3, 0, 0)"]  # fmt: skip
    assert result.stray_stores == []


def test_loads_inside_the_input_are_not_reported_and_are_counted(tmp_path, monkeypatch):
    """The same kernel with a shift of 0: no stray load; x read twice, the output written once
    (the mask's lanes only)."""
    result = _replayed(tmp_path, monkeypatch, shift=0)
    assert result.stray_loads == []
    by_tensor = result.traffic["by_tensor"]
    assert by_tensor["x"] == {"loaded_bytes": 2 * 200 * 4, "stored_bytes": 0}
    assert by_tensor["output 0"] == {"loaded_bytes": 0, "stored_bytes": 200 * 4}
    assert result.traffic["by_kernel"] == {"copy_kernel": {"loaded_bytes": 1600,
                                                           "stored_bytes": 800}}  # fmt: skip


def test_the_watch_only_observes_and_puts_the_interpreter_back(tmp_path, monkeypatch):
    """Are the replay's outputs bit for bit the same with the watch as without (timing fill,
    no watch), and is the interpreter's builder its own again afterwards?"""
    from triton.runtime import interpreter

    result = _replayed(tmp_path, monkeypatch, shift=5, owners=True)
    assert not {"create_masked_load", "create_masked_store"} & set(vars(
        interpreter.interpreter_builder))  # fmt: skip
    assert torch.equal(result.outputs[0], torch.arange(200, dtype=torch.float32))
    owners = result.owners[0]  # program p stored elements 64p .. 64p + 63
    assert torch.equal(owners, torch.arange(200) // 64)


# --------------------------------------------------------------------------- whole checks


def _reference_softmax_without_the_row_clamp(tmp_path: Path, monkeypatch) -> str:
    """The reference's kernels folder with ``tl.minimum(rows, n_rows - 1)`` taken out of the
    softmax forward: its stacked rows past the last one are loaded, unmasked, and never
    stored."""
    package = f"traffic_{uuid.uuid4().hex[:10]}"
    shutil.copytree(REPO / "reference" / "kernels", tmp_path / package / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
    path = tmp_path / package / "kernels" / "softmax.py"
    source = path.read_text()
    guarded = "read_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)"
    forward = source.index("def _softmax_fwd_kernel(")
    assert source.index(guarded, forward) < source.index("def _softmax_fwd_chunked_kernel(")
    path.write_text(source[:forward] + source[forward:].replace(guarded, "read_rows = rows", 1))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


@pytest.mark.slow
def test_the_reference_softmax_without_its_row_clamp_fails_on_its_loads(tmp_path, monkeypatch):
    """Does removing the reference's clamp fail a check on an out-of-bounds load, naming the
    kernel, a program and the distance, although every value it returns is right?"""
    package = _reference_softmax_without_the_row_clamp(tmp_path, monkeypatch)
    results = kernels.run("softmax", package, reference_copies=True)
    failed = {r.name: r.message for r in results if not r.passed}
    assert failed, "the unclamped rows were not noticed"
    message = next(iter(failed.values()))
    assert "out-of-bounds load: _softmax_fwd_kernel loads " in message
    assert "elements past the end of x, program (" in message
    assert "hint: mask every load" in message


@graded_reference.group("softmax")
def test_reference_softmax_moves_its_logical_bytes(reference_report):
    """Does ``learning.check softmax --reference --json`` report, for every case its one-pass
    kernel runs, loaded plus stored bytes within 1.00-1.05x of the registry's logical bytes,
    and for the chunked path, which reads each row twice, 1.5x (its docstring's figure)?"""
    report = json.loads(json.dumps(reference_report("softmax").as_dict()))  # what --json prints
    (check,) = [c for c in report["checks"] if c["name"] == "softmax memory traffic"]
    assert check["passed"] and check["max_points"] == 0
    found = ratios(check)
    assert len(found) >= 10
    one_pass = {f"{e['check']} {e['dtype']}" for e in check["cases"]
                if list(e["traffic"]["by_kernel"]) == ["_softmax_fwd_kernel"]}  # fmt: skip
    assert len(one_pass) >= 10
    assert all(1.0 <= found[name] <= 1.05 for name in one_pass), found
    assert all(1.45 <= found[name] <= 1.55 for name in set(found) - one_pass), found
    entry = check["cases"][0]["traffic"]
    assert set(entry) >= {"loaded_bytes", "stored_bytes", "logical_bytes", "by_tensor"}
    assert entry["by_tensor"]["x"]["loaded_bytes"] > 0
    assert "the reference moves 1.00x" in check["message"]
    assert "4.35 TB/s" in check["message"]


THREE_PASS_SOFTMAX = check_kernels.HEADER + """
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, x_stride, y_stride, ROWS: tl.constexpr,
                   BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    in_rows = (rows < n_rows)[:, None]
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * x_stride
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * y_stride
    running_max = tl.full((ROWS, BLOCK), float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):  # pass 1: the maximum
        cols = start + tl.arange(0, BLOCK)[None, :]
        x = tl.load(x_rows + cols, mask=in_rows & (cols < n_cols), other=float("-inf"))
        running_max = tl.maximum(running_max, x.to(tl.float32))
    row_max = tl.max(running_max, axis=1)[:, None]
    running_sum = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):  # pass 2: the sum, x read again
        cols = start + tl.arange(0, BLOCK)[None, :]
        x = tl.load(x_rows + cols, mask=in_rows & (cols < n_cols), other=float("-inf"))
        running_sum += tl.exp(x.to(tl.float32) - row_max)
    inverse = 1.0 / tl.sum(running_sum, axis=1)[:, None]
    for start in range(0, n_cols, BLOCK):  # pass 3: x read a third time, y written
        cols = start + tl.arange(0, BLOCK)[None, :]
        mask = in_rows & (cols < n_cols)
        x = tl.load(x_rows + cols, mask=mask, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - row_max) * inverse
        tl.store(y_rows + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = min(triton.next_power_of_2(cols), 512)
    stacked = max(1, min(16, 4096 // block))
    softmax_kernel[(triton.cdiv(rows, stacked),)](x, y, rows, cols, x.stride(0), y.stride(0),
                                                  ROWS=stacked, BLOCK=block)
    return y
"""


@pytest.mark.slow
def test_a_three_pass_softmax_moves_twice_its_logical_bytes(tmp_path, monkeypatch):
    """Does a softmax that reads x three times pass every check and yet report >= 1.4x the
    logical bytes, x read 3x, against the reference's 1.00x?"""
    package, _ = make_impl(tmp_path, monkeypatch, softmax=THREE_PASS_SOFTMAX)
    results = kernels.run("softmax", package, reference_copies=True)
    assert all(r.passed for r in results if r.max_points), [
        r.message for r in results if not r.passed]  # fmt: skip
    check = traffic_check(results).as_dict()
    found = ratios(check)
    assert all(ratio >= 1.4 for ratio in found.values()), found
    assert "x read 3.00x" in check["message"]
    assert "the reference moves 1.00x" in check["message"]


# --------------------------------------------------------------------------- the picture


# A learner's plain add whose grid rounds down: the last partial block has no program.
_EXACT_GRID = "(triton.cdiv(n, 1024),)"
assert _EXACT_GRID in PLAIN_ADD_MODULE
ADD_ONE_PROGRAM_SHORT = PLAIN_ADD_MODULE.replace(_EXACT_GRID, "(max(1, n // 1024),)")


def test_a_grid_too_small_gets_a_picture_named_in_its_message(tmp_path, monkeypatch):
    """Does a kernel whose grid rounds down fail with the path of a PNG that the checker
    wrote (its mark inside), showing the elements no program stored?"""
    monkeypatch.setattr(picture, "FOLDER", tmp_path / "results" / "local")
    package, _ = make_impl(tmp_path, monkeypatch, add=ADD_ONE_PROGRAM_SHORT)
    failed = check_kernels.failures(check_kernels.run_only("add", package, "add 37x781"))
    message = failed["add 37x781"]  # 28897 elements: 28 programs, 225 elements unwritten
    (line,) = [line for line in message.splitlines() if line.startswith("picture: ")]
    path = tmp_path / line.removeprefix("picture: ").split(" (")[0]
    assert path.parent == tmp_path / "results" / "local" and path.suffix == ".png"
    assert picture._is_ours(path)


def test_a_picture_never_replaces_a_file_the_checker_did_not_write(tmp_path):
    """Is a file of the learner's under the picture's name left alone (another name taken),
    and the checker's own picture replaced in place?"""
    theirs = tmp_path / "check-add.png"
    theirs.write_bytes(b"\x89PNG not the checker's")
    actual = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    wrong = torch.tensor([[False, True], [False, False]])
    owners = torch.tensor([[0, 0], [1, -1]])
    first = picture.draw("check-add", "a test", actual, wrong, owners, folder=tmp_path)
    assert theirs.read_bytes() == b"\x89PNG not the checker's"
    assert first == tmp_path / "check-add-2.png" and picture._is_ours(first)
    again = picture.draw("check-add", "a test", actual, wrong, owners, folder=tmp_path)
    assert again == first


def test_traffic_from_the_replay_is_checked_before_it_is_shown():
    """Is a malformed count from the (untrusted) replay process dropped, not shown?"""
    good = {"loaded_bytes": 8, "stored_bytes": 4, "by_tensor": {"x": {"loaded_bytes": 8,
                                                                       "stored_bytes": 0}}}
    assert traffic.checked(good)["by_tensor"] == good["by_tensor"]
    for bad in (None, [], {"loaded_bytes": -1, "stored_bytes": 0},
                {"loaded_bytes": 1.5, "stored_bytes": 0}, {"loaded_bytes": True,
                                                           "stored_bytes": 0}):  # fmt: skip
        assert traffic.checked(bad) is None
    spec = ops.get("softmax")
    assert spec.logical_bytes((2, 3), torch.float32) == 48


def test_the_streaming_rate_is_the_plausibility_tables():
    """Is the rate the traffic check turns bytes into time the H200 row's measured one?"""
    from learning.grade.plausibility import gpu_for

    assert traffic.H200_STREAMING_TBPS == gpu_for("H200").streaming_tbps
