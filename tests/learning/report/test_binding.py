"""Which edits stale which recorded cases? Each edit is made in a scratch copy of the course's
code, against a report that fingerprints that copy, so the real tree is never touched."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from learning import ops
from learning.report import binding, sweeps
from learning.report.closure import Sources
from learning.report.fingerprint import REPO_ROOT, fingerprint_record
from learning.report.validate import validate

FORWARD_AND_TRAINING = list(ops.NAMES)


def _copy_tree(root: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("learning", "reference", "exercises"):
        shutil.copytree(REPO_ROOT / folder, root / folder, ignore=ignore)


def _report(root: Path, impl: str = "reference") -> dict:
    """A report of every op whose fingerprint is what a run of that code would record: each
    op's closure, and the interface modules a run loads too."""
    settings = {"op": "all", "impl": impl, "reference_package": "reference",
                "learner_package": "exercises"}  # fmt: skip
    sources = Sources(root)
    files = {p for op in FORWARD_AND_TRAINING
             for p in binding.op_closure(sources, settings, op).files}  # fmt: skip
    files |= {p for p in binding.INTERFACE if (root / p).is_file()}
    files |= {p.relative_to(root).as_posix() for p in (root / "learning/report").glob("*.py")}
    cases = [{"op": op, "shape": [8, 8], "dtype": "float16"} for op in FORWARD_AND_TRAINING]
    return {"settings": settings, "cases": cases,
            "fingerprint": fingerprint_record(sorted(root / p for p in files), root)}  # fmt: skip


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    _copy_tree(root)
    return root


@pytest.fixture
def scratch(pristine, tmp_path) -> tuple[Path, dict]:
    """A fresh copy of the course's code and a report that measured it."""
    root = tmp_path / "course"
    shutil.copytree(pristine, root)
    return root, _report(root)


def _stale(report: dict, root: Path) -> set[str]:
    return {s.op for s in binding.stale_ops(report, root)}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1))


def test_a_fresh_copy_is_fresh(scratch):
    root, report = scratch
    assert binding.stale_ops(report, root) == []
    assert binding.incomplete(report, root) == []


def test_adding_an_op_stales_no_case(scratch):
    root, report = scratch
    definitions = root / "learning" / "ops"
    text = (definitions / "add/__init__.py").read_text().replace('name="add"', 'name="add_again"')
    (definitions / "add_again").mkdir()
    (definitions / "add_again/__init__.py").write_text(text)
    _edit(definitions / "__init__.py", '"matmul"),', '"matmul", "add_again"),')
    assert _stale(report, root) == set()


def test_rewording_an_op_summary_stales_no_case(scratch):
    root, report = scratch
    _edit(root / "learning/ops/softmax/__init__.py", "Softmax over the last dimension.",
          "The softmax of each row.")  # fmt: skip
    assert _stale(report, root) == set()


def test_editing_any_help_string_stales_no_case(scratch):
    root, report = scratch
    cli = root / "learning/bench/cli.py"
    helps = re.findall(r'help="([^"]+)"', cli.read_text())
    assert len(helps) > 10
    for text in helps:
        _edit(cli, f'help="{text}"', f'help="{text} (reworded)"')
    _edit(root / "learning/bench/output.py", "def ", "def _unused():\n    return 1\n\n\ndef ")
    assert _stale(report, root) == set()


def test_editing_the_softmax_kernel_stales_exactly_its_ops(scratch):
    root, report = scratch
    _edit(root / "reference/kernels/softmax.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    assert _stale(report, root) == {"softmax", "softmax_train"}


def test_editing_a_shared_helper_stales_the_ops_that_import_it(scratch):
    root, report = scratch
    _edit(root / "reference/kernels/launch.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    users = {"softmax", "softmax_train", "matmul", "matmul_train"}
    assert _stale(report, root) == users


def test_editing_the_timers_stales_every_case(scratch):
    root, report = scratch
    _edit(root / "learning/bench/timers.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    assert _stale(report, root) == set(FORWARD_AND_TRAINING)
    (why,) = {s.reasons for s in binding.stale_ops(report, root) if s.op == "add"}
    assert why == ("learning/bench/timers.py: changed since the run",)


def test_editing_the_spec_type_stales_every_case(scratch):
    root, report = scratch
    _edit(root / "learning/ops/spec.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    assert _stale(report, root) == set(FORWARD_AND_TRAINING)


def test_a_forward_definition_binds_its_training_op(scratch):
    root, report = scratch
    _edit(root / "learning/ops/rmsnorm/__init__.py", "RMSNORM_EPS = 1e-6", "RMSNORM_EPS = 1e-5")
    assert _stale(report, root) == {"rmsnorm", "rmsnorm_train"}


def test_a_comment_or_docstring_in_a_kernel_stales_nothing(scratch):
    root, report = scratch
    _edit(root / "reference/kernels/softmax.py", "\ndef ", "\n# a comment\ndef ")
    assert _stale(report, root) == set()


def test_a_kernel_that_imports_a_new_helper_is_stale(scratch):
    """Every file the kernel now loads binds it, the new helper included."""
    root, report = scratch
    (root / "reference/kernels/helper.py").write_text("VALUE = 1\n")
    _edit(root / "reference/kernels/add.py", "from .row_plan import", "from .helper import VALUE\n"
          "from .row_plan import")  # fmt: skip
    stale = binding.stale_ops(report, root)
    assert {s.op for s in stale} == {"add"}
    assert "reference/kernels/helper.py: not in the fingerprint" in " ".join(stale[0].reasons)


def test_a_learner_report_is_not_staled_by_a_checker_message(pristine, tmp_path):
    """An instructor who rewords a hint or a checker message mid-term keeps every learner's
    report; one who changes the replay (which decides whether the learner's kernel passed)
    does not."""
    root = tmp_path / "course"
    shutil.copytree(pristine, root)
    report = _report(root, impl="learner")
    assert binding.stale_ops(report, root) == []
    assert "exercises/kernels/softmax.py" in binding.op_closure(
        Sources(root), report["settings"], "softmax").files  # fmt: skip
    _edit(root / "learning/check/kernel_hints.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    _edit(root / "learning/check/cli.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    assert _stale(report, root) == set()
    _edit(root / "learning/check/replay/play.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    assert _stale(report, root) == set(FORWARD_AND_TRAINING)


def test_an_op_defined_nowhere_is_stale_saying_why(scratch):
    root, report = scratch
    shutil.rmtree(root / "learning/ops/max")
    stale = {s.op: s.reasons for s in binding.stale_ops(report, root)}
    assert list(stale) == ["max"]
    assert "no definition of op 'max'" in stale["max"][0]


# --------------------------------------------------------------------------- complete?


def test_a_report_missing_its_own_kernel_is_invalid_naming_it():
    """The GEMM sweep with its kernel deleted from the fingerprint (and the snapshot that kept
    it): it would otherwise stay valid after the kernel is edited."""
    path = REPO_ROOT / "results/h200/gemm-bf16.json"
    recorded = json.loads(path.read_text())
    assert validate(recorded) == []
    forged = copy.deepcopy(recorded)
    for table in (forged["fingerprint"]["files"], forged["fingerprint"]["normalized"],
                  forged["source_snapshots"]):  # fmt: skip
        del table["reference/kernels/matmul.py"]
    problems = validate(forged)
    assert problems == [
        "reference/kernels/matmul.py: the matmul cases' code loads it, but the fingerprint "
        "lacks it"
    ]


def test_a_report_missing_a_core_module_or_its_definition_is_invalid(scratch):
    root, report = scratch
    for path in ("learning/bench/timers.py", "learning/ops/softmax/__init__.py"):
        forged = copy.deepcopy(report)
        for table in (forged["fingerprint"]["files"], forged["fingerprint"]["normalized"]):
            del table[path]
        problems = binding.incomplete(forged, root)
        assert problems and all(p.startswith(f"{path}: ") for p in problems), problems


def test_an_interface_module_may_be_missing(scratch):
    root, report = scratch
    for table in (report["fingerprint"]["files"], report["fingerprint"]["normalized"]):
        del table["learning/bench/output.py"]
    assert binding.incomplete(report, root) == []


def test_every_interface_module_exists():
    """A name left in the list after its module moved would bind nothing and mean nothing."""
    assert all((REPO_ROOT / path).is_file() for path in binding.INTERFACE)
    assert all((REPO_ROOT / folder).is_dir() for folder in binding.INTERFACE_FOLDERS)


def test_the_op_index_imports_no_torch():
    import subprocess
    import sys

    code = "import sys; from learning import ops; print(len(ops.NAMES), 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, check=True).stdout.split()  # fmt: skip
    assert out == [str(len(ops.NAMES)), "False"]


# --------------------------------------------------------------------------- sweeps


def test_card_folders_are_named_for_the_gpu_model():
    assert sweeps.card_folder("NVIDIA H100 80GB HBM3") == "h100"
    assert sweeps.card_folder("NVIDIA H200") == "h200"
    assert sweeps.card_folder("NVIDIA A100-SXM4-80GB") == "a100"
    assert sweeps.card_folder("NVIDIA GeForce RTX 4090") == "rtx-4090"


def _sweep_copy(root: Path, report: dict, card: str = "h100") -> Path:
    folder = root / "results" / card
    folder.mkdir(parents=True)
    cases = [{"op": "softmax", "shape": [1024, 1024], "dtype": "float16"},
             {"op": "add", "shape": [16384, 4096], "dtype": "float16"},
             {"op": "sum", "shape": [1024, 1024], "dtype": "float16"}]  # fmt: skip
    data = {**report, "cases": cases, "duration_s": 30.0, "started_at": "2026-12-07T00:00:00Z"}
    (folder / "all.json").write_text(json.dumps(data))
    return folder


def test_the_plan_re_records_exactly_the_stale_cases_and_the_ceiling(scratch):
    root, report = scratch
    folder = _sweep_copy(root, report)
    assert sweeps.sweep_state(folder, "all", root).fresh
    _edit(root / "reference/kernels/softmax.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    state = sweeps.sweep_state(folder, "all", root)
    assert [case.key for case in state.stale] == ["softmax/1024x1024/float16"]
    assert state.cases() == ["softmax/1024x1024/float16", sweeps.CEILING_KEY]
    command = " ".join(state.command("OUT"))
    assert command == ("python3 -m learning.bench --op all --compile --samples 15 --visits 5 "
                       "--case softmax/1024x1024/float16 --case add/16384x4096/float16 "
                       "--output OUT/all.json")  # fmt: skip
    (call,) = sweeps.plan([state])
    assert call == [state] and state.seconds <= sweeps.CALL_BUDGET_S


def test_a_part_takes_the_place_of_the_cases_it_re_recorded(scratch):
    root, report = scratch
    folder = _sweep_copy(root, report)
    _edit(root / "reference/kernels/softmax.py", "\ndef ", "\nEDITED = 1\n\n\ndef ")
    part = _report(root)
    part["cases"] = [{"op": "softmax", "shape": [1024, 1024], "dtype": "float16"},
                     {"op": "add", "shape": [16384, 4096], "dtype": "float16"}]  # fmt: skip
    part["started_at"] = "2026-12-07T01:00:00Z"
    (folder / "all.part-20261207T0100.json").write_text(json.dumps(part))
    sweep = sweeps.load_sweep(folder, "all")
    newest = {key: path.name for key, (_, path, _) in sweep.cases().items()}
    assert newest == {"softmax/1024x1024/float16": "all.part-20261207T0100.json",
                      "add/16384x4096/float16": "all.part-20261207T0100.json",
                      "sum/1024x1024/float16": "all.json"}  # fmt: skip
    assert sweeps.sweep_state(folder, "all", root).fresh


def test_cases_the_settings_select_but_no_file_records_are_planned(scratch):
    root, report = scratch
    folder = _sweep_copy(root, report)
    selected = ["softmax/1024x1024/float16", "add/16384x4096/float16", "sum/1024x1024/float16",
                "add_again/1024x1024/float16"]  # fmt: skip
    state = sweeps.sweep_state(folder, "all", root, selected)
    assert [(c.key, c.why) for c in state.stale] == [("add_again/1024x1024/float16", None)]


def test_a_plan_larger_than_one_call_is_split():
    def state(name, seconds):
        return sweeps.SweepState(name, Path("results/h100"), [], 0, True, seconds)

    calls = sweeps.plan([state("all", 300), state("all-cold", 250), state("training", 150)],
                        budget_s=480)  # fmt: skip
    assert [[s.name for s in call] for call in calls] == [["all", "training"], ["all-cold"]]
    assert all(sum(s.seconds for s in call) <= 480 for call in calls)
