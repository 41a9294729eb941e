"""Does scripts/make_exercises.py make exercises/ from reference/ faithfully?

And does what it makes grade as it should: the reference passes every check, the untouched
stubs fail every one with a message that says where to start.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from learning import manifest as manifest_module
from learning.check.runner import check_exercise

ROOT = manifest_module.ROOT
MANIFEST = manifest_module.load()
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402


def strip(source: str) -> str:
    return make_exercises.strip_solutions(
        textwrap.dedent(source), path="reference/demo.py", exercise_path="exercises/demo.py"
    )


def raised_message(stripped: str) -> str:
    """The message of the first ``raise NotImplementedError(...)`` in ``stripped``."""
    for node in ast.walk(ast.parse(stripped)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            return ast.literal_eval(node.exc.args[0])
    raise AssertionError("no raise NotImplementedError in the stripped source")


# --------------------------------------------------------------------------- regeneration


def _committed(path: str) -> bytes | None:
    """``path`` as the last commit holds it; None outside a git checkout or when untracked."""
    try:
        shown = subprocess.run(
            ["git", "show", f"HEAD:{path}"], cwd=ROOT, capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shown.stdout if shown.returncode == 0 else None


def test_regenerating_changes_nothing():
    """Does the script reproduce exercises/ exactly (`--check` passes on the committed tree)?

    A file a learner has since edited still counts as up to date when the committed copy
    matches: the learner's work is theirs, and this test is about the course's files.
    """
    expected = make_exercises.render()
    stale = [
        path
        for path in make_exercises.out_of_date()
        if expected.get(path.split(" ")[0]) != _committed(path.split(" ")[0])
    ]
    assert not stale, f"run `python scripts/make_exercises.py`; out of date: {stale}"


def test_check_mode_names_stale_files_and_exits_1(tmp_path: Path, capsys):
    """Does --check exit 1 and name each file that is missing, edited or left over?"""
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "__init__.py").write_text('"""Reference."""\n')
    (tmp_path / "reference" / "demo.py").write_text(
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    )
    assert make_exercises.main([], root=tmp_path) == 0
    assert make_exercises.main(["--check"], root=tmp_path) == 0

    (tmp_path / "exercises" / "demo.py").write_text("edited\n")
    (tmp_path / "reference" / "__init__.py").unlink()
    capsys.readouterr()
    assert make_exercises.main(["--check"], root=tmp_path) == 1
    output = capsys.readouterr().out
    assert "out of date: exercises/demo.py" in output
    assert "exercises/__init__.py (its reference file is gone)" in output


def test_exercises_init_selects_the_backend_like_the_reference():
    """Is exercises/__init__.py the reference's, so importing exercises picks the Triton backend?"""
    made = make_exercises.render()["exercises/__init__.py"].decode()
    reference = (ROOT / "reference" / "__init__.py").read_text()
    assert made.endswith(reference)
    assert "select_backend()" in made
    assert made.startswith("# Your copy of reference/__init__.py,")


# --------------------------------------------------------------------------- stripping rules


def test_a_region_in_a_plain_function_raises_with_file_function_and_todo():
    """Is a region outside a kernel replaced by its TODO and a NotImplementedError naming it?"""
    stripped = strip(
        """
        def speedup(baseline_ms, candidate_ms):
            \"\"\"Docstring stays.\"\"\"
            checked = True
            ### BEGIN SOLUTION
            ### TODO: divide the right way round
            return baseline_ms / candidate_ms
            ### END SOLUTION
        """
    )
    assert "baseline_ms / candidate_ms" not in stripped
    assert '"""Docstring stays."""' in stripped and "checked = True" in stripped
    assert "    # TODO: divide the right way round\n    raise NotImplementedError(" in stripped
    assert raised_message(stripped) == "exercises/demo.py:speedup: divide the right way round"
    assert "SOLUTION" not in stripped


@pytest.mark.parametrize(
    "decorators",
    [
        "@triton.jit",
        "@triton.jit(do_not_specialize=['n'])",
        "@triton.autotune(configs=[], key=['n'])\n@triton.jit",
    ],
)
def test_a_region_in_a_triton_kernel_becomes_pass(decorators):
    """Inside a @triton.jit (or autotuned) kernel, does a region become its TODO and `pass`?"""
    source = decorators + textwrap.dedent(
        """
        def _add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            ### BEGIN SOLUTION
            ### TODO: load BLOCK elements, masked
            ### TODO: store them
            offsets = pid * BLOCK + tl.arange(0, BLOCK)
            values = tl.load(x_ptr + offsets, mask=offsets < n)
            tl.store(out_ptr + offsets, values, mask=offsets < n)
            ### END SOLUTION
        """
    )
    stripped = strip(source)
    assert "    # TODO: load BLOCK elements, masked\n    # TODO: store them\n    pass\n" in stripped
    assert "NotImplementedError" not in stripped and "tl.store" not in stripped
    assert "pid = tl.program_id(0)" in stripped


def test_a_region_without_todo_in_a_method_names_the_class():
    """Without a TODO line, does the message say 'not written yet' and name Class.method?"""
    stripped = strip(
        """
        class Softmax:
            @staticmethod
            def forward(ctx, x):
                if x is None:
                    ### BEGIN SOLUTION
                    return x
                    ### END SOLUTION
                return x
        """
    )
    assert raised_message(stripped) == "exercises/demo.py:Softmax.forward: not written yet"
    assert "            raise NotImplementedError(" in stripped  # indented like the marker


def test_a_long_message_is_wrapped_within_the_line_length():
    """Does a long TODO still give the exact message, in lines no longer than 100 characters?"""
    todo = "a hint long enough that the raise statement cannot fit on one line of the file " * 2
    stripped = strip(
        f"""
        def f():
            ### BEGIN SOLUTION
            ### TODO: {todo.strip()}
            return 1
            ### END SOLUTION
        """
    )
    assert raised_message(stripped) == f"exercises/demo.py:f: {todo.strip()}"
    assert max(len(line) for line in stripped.splitlines() if "TODO" not in line) <= 100


def test_a_file_without_regions_is_unchanged():
    """Is a reference file with no solution regions copied as it is (under the header)?"""
    source = "def helper():\n    return 42\n"
    assert strip(source) == source


@pytest.mark.parametrize(
    "body, problem",
    [
        ("    ### BEGIN SOLUTION\n    return 1\n", "demo.py:2: ### BEGIN SOLUTION without a"),
        ("    return 1\n    ### END SOLUTION\n", "demo.py:3: ### END SOLUTION without a ### BEGIN"),
        (
            "    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n",
            "demo.py:3: ### BEGIN SOLUTION inside the region opened at line 2",
        ),
        ("    ### BEGIN SOLUTIONS\n    return 1\n", "unrecognized marker"),
    ],
)
def test_unbalanced_markers_are_an_error_naming_the_line(body, problem):
    """Do markers that do not pair up stop the script with the file and line?"""
    with pytest.raises(make_exercises.MarkerError, match=problem):
        strip("def f():\n" + body)


def test_a_region_that_splits_a_statement_is_an_error():
    """Is a region that leaves invalid Python (half a statement) refused?"""
    source = "def f():\n    x = (\n    ### BEGIN SOLUTION\n        1)\n    ### END SOLUTION\n"
    with pytest.raises(make_exercises.MarkerError):
        strip(source)


# --------------------------------------------------------------------------- what it makes, graded


def _kernel_skip_reason(name: str) -> str | None:
    exercise = MANIFEST.exercise(name)
    missing = [file for file in exercise.reference if not (ROOT / file).is_file()]
    if missing:
        return f"{', '.join(missing)} not written yet"
    if importlib.util.find_spec(exercise.check) is None:
        return f"{exercise.check} not written yet"
    return None


def _exercise_params() -> list:
    """Every exercise in the manifest; those graded by running kernels are marked slow."""
    slow = [pytest.mark.slow]
    return [
        pytest.param(name, marks=[] if e.check == "learning.check.measurement" else slow)
        for name, e in MANIFEST.exercises.items()
    ]


@pytest.fixture(scope="module")
def untouched(tmp_path_factory) -> tuple[str, Path]:
    """A fresh copy of what make_exercises writes, as an importable package `untouched`."""
    root = tmp_path_factory.mktemp("untouched")
    for path, content in make_exercises.render().items():
        target = root / "untouched" / Path(path).relative_to("exercises")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return "untouched", root


@pytest.mark.parametrize("name", _exercise_params())
def test_the_reference_passes_every_check(name, reference_report):
    """Does the reference earn every point of each exercise?"""
    reason = _kernel_skip_reason(name)
    if reason:
        pytest.skip(reason)
    report = reference_report(name)  # check_exercise(name, "reference"), once a session
    failed = [f"{check.name}: {check.message}" for check in report.checks if not check.passed]
    assert report.passed and not failed, "\n".join(failed)
    assert report.points == report.max_points


@pytest.mark.parametrize("name", _exercise_params())
def test_the_untouched_stubs_fail_with_a_message(name, untouched):
    """Do the stubs as made fail, every failure with a message (and a hint for measurement)?"""
    reason = _kernel_skip_reason(name)
    if reason:
        pytest.skip(reason)
    package, path = untouched
    report = check_exercise(name, package, extra_path=[path])
    assert not report.passed and report.points < report.max_points
    for check in report.checks:
        assert check.passed or check.message.strip(), f"{check.name} failed without a message"
    if name == "measurement":
        assert report.points == 0
        assert all("not written yet" in c.message and "hint:" in c.message for c in report.checks)
