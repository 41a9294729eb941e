"""Does `python -m learning.check` grade measurement honestly, and survive any learner mistake?

Mistaken learner files are written into a throwaway package in a temporary directory; the
checker is pointed at it (``--impl`` / ``impl=``) with the directory on its PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest
from stopwatch import Stopwatch  # a wall-clock limit scaled by the machine's pace

from learning import manifest as manifest_module
from learning import ops
from learning.check import cli
from learning.check.runner import ExerciseReport, UnknownExercise, check_exercise, journal_status
from learning.manifest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402


def run_cli(*args: str, python_path: Path | None = None):
    """Run the CLI; return the completed process and its wall time in seconds."""
    env = dict(os.environ)
    if python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(python_path), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-m", "learning.check", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    return process, time.perf_counter() - started


def write_package(root: Path, name: str, measurement_source: str) -> str:
    """A package ``name`` under ``root`` whose measurement.py is ``measurement_source``."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "measurement.py").write_text(textwrap.dedent(measurement_source))
    return name


def checks_by_name(report: ExerciseReport) -> dict[str, str]:
    return {check.name: check.message for check in report.checks if not check.passed}


def test_reference_passes_quickly():
    """Does the reference pass every measurement check, exit 0, within a few seconds (of the
    reference machine: the limit grows with this machine's measured pace)?"""
    with Stopwatch() as watch:
        process, _ = run_cli("measurement", "--reference")
    print(f"python -m learning.check measurement --reference took {watch.elapsed:.2f} s")
    assert process.returncode == 0, process.stdout + process.stderr
    assert "FAIL" not in process.stdout
    assert process.stdout.rstrip().endswith("measurement: 10/10 points")
    assert watch.elapsed < watch.limit(10), watch.said(10) + "; the target is 3 s"


def test_untouched_exercise_fails_with_hints(tmp_path: Path):
    """Do the freshly made stubs fail every check, each with a hint, and exit 1 (JSON too)?"""
    stub = make_exercises.render()["exercises/measurement.py"]
    package = write_package(tmp_path, "untouched", stub.decode())
    process, _ = run_cli("measurement", "--impl", package, "--json", python_path=tmp_path)
    assert process.returncode == 1, process.stderr
    report = json.loads(process.stdout)
    assert report["points"] == 0 and report["max_points"] == 10
    assert not any(check["passed"] for check in report["checks"])
    for check in report["checks"]:
        assert "not written yet" in check["message"] and "hint:" in check["message"], check
    assert report["journal"]["path"] == "journals/07-measurement.md"


def test_no_exercise_lists_the_exercises_on_stdout():
    """Does a bare `python -m learning.check` print every exercise on stdout (so `| less` shows
    it), one line each with its lesson and description, and exit 0?"""
    process, _ = run_cli()
    assert process.returncode == 0 and process.stderr == "", process.stderr
    lines = process.stdout.splitlines()
    manifest = manifest_module.load()
    assert len(lines) == 1 + len(manifest.exercises)
    for name in manifest.exercises:
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        lesson = manifest.lesson_of(name)
        assert f"  lesson {lesson.number:02d}  " in line and len(line.split()) > 3, line
    summary = re.escape(ops.get("add").summary)
    assert any(re.fullmatch(rf"  add +lesson 09  {summary}", line) for line in lines)
    assert any(line.endswith("lesson 07  A timing number needs an explanation") for line in lines)


def test_the_list_follows_the_manifest():
    """Is the list made from the manifest and the registry, not written out by hand: does an
    exercise added to a manifest appear, with its lesson's title?"""
    data = tomllib.loads((ROOT / "course_manifest.toml").read_text())
    data["exercises"]["warmup"] = dict(data["exercises"]["measurement"], editable=[
        "exercises/warmup.py"])
    data["lessons"]["17-warm-up"] = {
        "title": "A warm-up added later", "minutes": 5, "prerequisites": [], "runs_on": "cpu",
        "exercises": ["warmup"],
    }
    rows = cli.catalogue(manifest_module.parse(data))
    assert rows[-1] == {
        "name": "warmup", "lesson": 17, "description": "A warm-up added later",
        "files": ["exercises/warmup.py"],
    }


def test_the_list_as_json(capsys):
    """Does `--json` without an exercise give the list as JSON, in the manifest's order?"""
    assert cli.main(["--json"]) == cli.EXIT_PASSED
    rows = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in rows] == list(manifest_module.load().exercises)
    add = next(row for row in rows if row["name"] == "add")
    assert add == {"name": "add", "lesson": 9, "description": ops.get("add").summary,
                   "files": ["exercises/kernels/add.py"]}


@pytest.mark.parametrize(
    "typed, meant",
    [("measurment", "measurement"), ("Softmax", "softmax"), ("softmax-train", "softmax_train"),
     ("matmul_trian", "matmul_train"), ("zzzz", None)],
)
def test_an_unknown_exercise_is_one_line_with_the_closest_name(capsys, typed, meant):
    """Does a misspelt exercise exit 2 with one line on stderr naming it and, when one is
    close, `did you mean`; and nothing on stdout?"""
    assert cli.main([typed]) == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert f"unknown exercise {typed!r}" in line
    if meant:
        assert f"did you mean {meant!r}?" in line
    else:
        assert "did you mean" not in line
    assert "`python -m learning.check` lists the exercises" in line
    with pytest.raises(UnknownExercise, match="choose one of"):
        check_exercise(typed)


def test_an_unknown_exercise_from_the_runner_is_the_same_one_line(capsys, monkeypatch):
    """When the runner refuses a name the CLI let through, is it still one line and exit 2?"""

    def refuse(name, *args, **kwargs):
        raise UnknownExercise(name, ["measurement", "add"])

    monkeypatch.setattr(cli, "check_exercise", refuse)
    assert cli.main(["measurement", "--reference"]) == cli.EXIT_USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "unknown exercise 'measurement'; did you mean 'measurement'?" in line


@pytest.mark.parametrize("value", ["abc", "-3", "1.5"])
def test_a_bad_replay_seed_exits_2_in_one_line(value: str, monkeypatch):
    """LEARNING_CHECK_SEED that is not a whole number: one line naming it, exit 2, no grading."""
    monkeypatch.setenv("LEARNING_CHECK_SEED", value)
    process, _ = run_cli("measurement", "--reference")
    assert process.returncode == 2 and process.stdout == ""
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and "LEARNING_CHECK_SEED" in lines[0] and repr(value) in lines[0]


@pytest.mark.xdist_group("measurement_mistakes")  # the module fixtures: built on one worker
def test_a_failure_names_its_seed_and_the_seed_replays_it(mistakes, monkeypatch):
    """A failed measurement check ends with its seed; run again with LEARNING_CHECK_SEED set to
    it, the same check fails on the same inputs, message for message."""
    root, package, first = mistakes
    failed = {c.name: c.message for c in first.checks if not c.passed}
    note = failed["logical_gbps"].splitlines()[-1]
    assert note.startswith("(seed ") and "LEARNING_CHECK_SEED=" in note
    seed = note.split()[1].rstrip(":")
    monkeypatch.setenv("LEARNING_CHECK_SEED", seed)
    again = check_exercise("measurement", package, extra_path=[root], reference_copies=True)
    replayed = {c.name: c.message for c in again.checks if not c.passed}
    assert replayed["logical_gbps"] == failed["logical_gbps"]
    assert replayed["speedup"] == failed["speedup"]


MISTAKES = """
    from reference.measurement import *  # noqa: F403 (everything right, but for the below)
    del tflops  # missing function


    def speedup(baseline_ms, candidate_ms):
        return 2.0  # the worked example's answer, whatever the input


    def logical_gbps(num_bytes, ms):
        return num_bytes / (ms * 1e-6) / 1e9  # treats milliseconds as microseconds


    def amdahl_speedup(fraction, local_speedup):
        raise RuntimeError("boom")


    def summarize(samples_ms):
        while True:  # never returns
            pass


    def logical_bytes(op, shape, element_size):
        rows, cols = shape[0], shape[1]
        return {"add": 4, "softmax": 3}.get(op, 3) * rows * cols * element_size  # output twice


    print("learner output must not confuse the checker")
"""


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory) -> tuple[Path, str, ExerciseReport]:
    """The folder, the package and the checker's report (under the run's own seed) of
    MISTAKES, graded once for the tests that read it."""
    root = tmp_path_factory.mktemp("mistakes")
    package = write_package(root, "mistaken", MISTAKES)
    # the mistakes are the test; the reference's functions (imported) stand for the rest
    return root, package, check_exercise("measurement", package, extra_path=[root],
                                         reference_copies=True)  # fmt: skip


@pytest.fixture(scope="module")
def mistaken_report(mistakes) -> ExerciseReport:
    return mistakes[2]


@pytest.mark.parametrize(
    "check, expected",
    [
        ("speedup", "worked example's answer"),  # a constant cannot pass the random inputs
        ("logical_gbps", "1000 times too large: the milliseconds were treated as microseconds"),
        ("amdahl_speedup", "raised RuntimeError: boom"),
        ("summarize", "did not return within"),
        ("tflops and flops", "has no function `tflops`"),
        ("logical_bytes (forward ops)", "counted twice"),
    ],
)
@pytest.mark.xdist_group("measurement_mistakes")  # the module fixtures: built on one worker
def test_each_learner_mistake_is_a_failed_check_with_a_message(mistaken_report, check, expected):
    """Is each mistake its own failed check, with the input, expectation and a fitting hint?"""
    failures = checks_by_name(mistaken_report)
    assert check in failures, f"{check} passed: {mistaken_report.checks}"
    assert expected in failures[check]
    if check not in ("tflops and flops",):
        assert "input:" in failures[check]


MORE_MISTAKES = """
    import statistics

    from reference.measurement import *  # noqa: F403
    from reference.measurement import Spread
    from reference.measurement import logical_bytes as reference_logical_bytes
    from reference.measurement import paired_speedup as reference_paired_speedup


    def speedup(baseline_ms, candidate_ms):
        return candidate_ms / baseline_ms  # inverted


    def amdahl_speedup(fraction, local_speedup):
        f = fraction / 100  # a fraction taken for a percentage
        return 1 / ((1 - f) + f / local_speedup)


    def logical_gbps(num_bytes, ms):
        return num_bytes / (ms * 1e-3) / 2**30  # GiB/s


    def flops(op, shape):
        return shape[0] * shape[1] * (shape[2] if len(shape) == 3 else 1)  # a MAC as one FLOP


    def logical_bytes(op, shape, element_size):
        return reference_logical_bytes(op, shape, 1)  # elements, not bytes


    def summarize(samples_ms):
        samples_ms.sort()  # reorders the caller's samples
        return Spread(samples_ms[len(samples_ms) // 2], samples_ms[0], samples_ms[-1])


    def paired_speedup(baseline_samples_ms, candidate_samples_ms):  # a ratio of medians
        paired = reference_paired_speedup(baseline_samples_ms, candidate_samples_ms)
        ratio = statistics.median(baseline_samples_ms) / statistics.median(candidate_samples_ms)
        return paired._replace(speedup=ratio)


    def result_sentence(**fields):  # the median in microseconds, not through format_ms
        return "On {gpu}, for {case}, {variant} took {us:.1f} us".format(
            us=fields["median_ms"] * 1e3, **fields
        )
"""


@pytest.fixture(scope="module")
def more_mistakes_report(tmp_path_factory) -> ExerciseReport:
    root = tmp_path_factory.mktemp("more_mistakes")
    package = write_package(root, "mistaken_more", MORE_MISTAKES)
    return check_exercise("measurement", package, extra_path=[root], reference_copies=True)


@pytest.mark.parametrize(
    "check, expected",
    [
        ("speedup", "inverted: speedup is baseline / candidate"),
        ("amdahl_speedup", "do not divide it by 100"),
        ("logical_gbps", "that is GiB/s"),
        ("tflops and flops", "a multiply-add is two FLOPs"),
        ("logical_bytes (forward ops)", "counts elements, not bytes"),
        ("summarize", "sort a copy"),
        ("paired_speedup", "that is the ratio of the two medians"),
        ("result_sentence", "write both medians with format_ms"),
    ],
)
@pytest.mark.xdist_group("measurement_mistakes")  # the module fixtures: built on one worker
def test_the_hint_names_the_usual_mistake(more_mistakes_report, check, expected):
    """Does each usual mistake (inverted ratio, percentage, GiB, elements ...) get its own hint?"""
    failures = checks_by_name(more_mistakes_report)
    assert check in failures, f"{check} passed"
    assert expected in failures[check]


@pytest.mark.xdist_group("measurement_mistakes")  # the module fixtures: built on one worker
def test_mistakes_cost_only_their_own_points(mistaken_report):
    """Do the functions written correctly still earn their points beside the broken ones?"""
    passed = {check.name for check in mistaken_report.checks if check.passed}
    assert {"fits_in_l2", "result_sentence"} <= passed
    assert 0 < mistaken_report.points < 10
    assert "line" in checks_by_name(mistaken_report)["amdahl_speedup"]  # where it was raised


def test_a_syntax_error_fails_every_check_with_its_line(tmp_path: Path):
    """Does a file that does not compile fail with the line of the syntax error?"""
    source = "def speedup(baseline_ms, candidate_ms:\n    pass\n"
    package = write_package(tmp_path, "broken", source)
    report = check_exercise("measurement", package, extra_path=[tmp_path])
    assert not report.passed and report.points == 0
    first = report.checks[0].message
    assert "syntax error at line 1" in first and "hint:" in first
    assert all("did not import" in check.message for check in report.checks[1:])


def test_a_crash_of_the_interpreter_is_a_failed_check(tmp_path: Path):
    """Does a segmentation fault in the learner's code become a failed check, not a traceback?"""
    package = write_package(tmp_path, "crashing", "import ctypes\nctypes.string_at(0)\n")
    report = check_exercise("measurement", package, extra_path=[tmp_path])
    assert not report.passed
    assert report.checks[0].name == "check process"
    assert "SIGSEGV" in report.checks[0].message


def test_the_process_time_limit_is_a_backstop(tmp_path: Path):
    """When the per-call limit cannot act (SIGALRM blocked), does the process limit stop it?"""
    source = """
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            pass
    """
    package = write_package(tmp_path, "hanging", source)
    with Stopwatch() as watch:
        report = check_exercise("measurement", package, extra_path=[tmp_path], time_limit_s=3)
    assert watch.elapsed < watch.limit(20), watch.said(20)
    assert not report.passed
    # 3 s of the reference machine, at the pace the run measured
    stopped = re.search(r"did not finish within ([\d.]+) s", report.checks[0].message)
    assert stopped and float(stopped.group(1)) >= 3, report.checks[0].message


def test_the_journal_counts_as_written_once_its_placeholders_are_replaced(tmp_path: Path):
    """Are prediction and observation reported written only when their placeholders are gone?"""
    template = (ROOT / "journals" / "07-measurement.md").read_text()
    journal = tmp_path / "07-measurement.md"
    journal.write_text(template)
    status = journal_status(journal)
    assert status.exists and not status.prediction and not status.observation

    prediction, _, rest = template.partition("## Observation")
    prediction = prediction.replace("_Write your prediction here before running._", "About 2x.")
    journal.write_text(prediction + "## Observation" + rest)
    status = journal_status(journal)
    assert status.prediction and not status.observation

    journal.write_text(journal.read_text().replace("_Write what you observed here._", "1.3x."))
    assert journal_status(journal).observation
    assert not journal_status(tmp_path / "missing.md").exists


# ----------------------------------------------------------------- the checker's own faults


def failing_check_module(monkeypatch, failures: int) -> list:
    """The measurement check module, made to fail by itself on its first ``failures`` runs
    (as a replay cancelled under it once did), then to grade as it does; the seeds it saw."""
    import importlib
    from concurrent.futures import CancelledError

    module = importlib.import_module("learning.check.measurement")
    real, seeds = module.run, []

    def run(exercise, impl, session):
        seeds.append(session.seed)
        if len(seeds) <= failures:
            raise CancelledError()
        return real(exercise, impl, session=session)

    monkeypatch.setattr(module, "run", run)
    return seeds


def test_a_check_module_that_fails_once_is_run_again_and_grades(monkeypatch):
    """A check module failing by itself (not the learner's code) is run once more, on the same
    seed, and the second run's results are the report: full points for the reference."""
    seeds = failing_check_module(monkeypatch, failures=1)
    report = check_exercise("measurement", "reference")
    assert len(seeds) == 2 and seeds[0] == seeds[1]
    assert report.passed and not report.incomplete and report.points == report.max_points


def test_a_check_module_that_fails_twice_leaves_the_exercise_not_graded(monkeypatch, capsys):
    """Failing again, the exercise is not graded: the report is incomplete, its check says so
    and why, and the CLI says "not graded" and exits 3, never a quiet 0 points and exit 1."""
    seeds = failing_check_module(monkeypatch, failures=2)
    report = check_exercise("measurement", "reference")
    assert len(seeds) == 2
    assert report.incomplete and not report.passed and report.as_dict()["incomplete"]
    (check,) = report.checks
    assert check.name == "check module" and "failed twice" in check.message
    assert "CancelledError" in check.message and "not in your code" in check.message
    from learning.grade import summary  # the nbgrader cell's words

    assert summary(report) == "measurement: not graded (incomplete: the checker failed twice)"
    failing_check_module(monkeypatch, failures=2)
    assert cli.main(["measurement", "--reference"]) == cli.EXIT_INCOMPLETE == 3
    out = capsys.readouterr().out
    assert "measurement: not graded (incomplete: the checker failed twice" in out
    assert "points" not in out.splitlines()[-1]


def test_a_message_shared_by_several_failed_checks_is_printed_once():
    """Fourteen checks "not run" behind one failure: one line names them all and the message
    follows once, after the failure they wait on; a message of one check stays with it."""
    from learning.check.cli import render
    from learning.check.model import CheckResult

    waiting = "not run: softmax is not done yet (see softmax 37x781)"
    checks = (
        CheckResult("softmax 16x256", False, 1, waiting),
        CheckResult("softmax 37x781", False, 1, "output has 12 non-finite values"),
        CheckResult("softmax 5x3000", True, 1),
        *(CheckResult(f"softmax check {n}", False, 0.5, waiting) for n in range(13)),
    )
    text = render(ExerciseReport("softmax", "exercises", checks, 1.0, 10.0, None, 0.0))
    assert text.count(waiting) == 1, text
    lines = text.splitlines()
    assert lines[1:4] == ["FAIL  softmax 37x781 (0/1)", "      output has 12 non-finite values",
                          "PASS  softmax 5x3000 (1/1)"]  # fmt: skip
    group = " ".join(line.strip() for line in lines[4:lines.index(f"      {waiting}")])
    assert group.startswith("FAIL  14 checks (0/7.5): softmax 16x256, softmax check 0,"), group
    assert group.endswith("softmax check 12"), group
    assert all(len(line) <= 100 for line in lines[4:]), text
