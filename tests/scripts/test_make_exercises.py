"""Does scripts/make_exercises.py make exercises/ from reference/ faithfully?

And does what it makes grade as it should: the untouched stubs fail every check with a message
that says where to start (that the reference passes every check is
tests/learning/test_check_kernels.py's and the foundations' and measurement's tests).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path, PurePosixPath

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


# --------------------------------------------------------------------------- the committed tree


def test_check_passes_on_the_repository():
    """Does `make_exercises.py --check` pass here: every copy as the script makes it and
    recorded, or edited by the learner while its reference stayed as it was?"""
    process = subprocess.run(
        [sys.executable, "scripts/make_exercises.py", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    assert process.stdout.splitlines()[-1].startswith("exercises/ is up to date")


def test_the_record_is_tracked_and_lists_exactly_the_copies():
    """Is the record in git, one entry for each copy the script makes and nothing else?"""
    inside = subprocess.run(["git", "rev-parse"], cwd=ROOT, capture_output=True, timeout=30)
    if inside.returncode != 0:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", make_exercises.RECORD],
        cwd=ROOT, capture_output=True, timeout=30,
    )
    assert tracked.returncode == 0, f"git add {make_exercises.RECORD}"
    record = make_exercises.load_record()
    assert set(record) == set(make_exercises.render())
    assert make_exercises.RECORD not in record


def test_the_record_and_backups_are_not_taken_for_learner_modules():
    """Are the record and a backup named so that nothing imports or grades them as modules?"""
    for name in (Path(make_exercises.RECORD).name, "add.py.2026-12-01T2210.bak"):
        assert not name.endswith(".py") and not name.isidentifier()
    data = json.loads((ROOT / make_exercises.RECORD).read_text())
    assert "do not edit" in data["about"]


# --------------------------------------------------------------------------- a course in a folder

SOLVED_MARK = "# solved: the learner's own lines\n"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A copy of what the script reads and writes (reference/, exercises/, the script itself,
    the Makefile), so that the tests change no file of the repository's."""
    for folder in ("reference", "exercises"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns(
            "__pycache__", ".ipynb_checkpoints", "*.bak"))
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "make_exercises.py", tmp_path / "scripts")
    shutil.copy2(ROOT / "Makefile", tmp_path)
    # exercises/ as committed: the learner's edits in this checkout are not the test's subject
    for path, content in make_exercises.render(tmp_path).items():
        (tmp_path / path).write_bytes(content)
    (tmp_path / make_exercises.RECORD).write_bytes((ROOT / make_exercises.RECORD).read_bytes())
    assert make_exercises.main(["--check"], root=tmp_path) == 0
    return tmp_path


def solve(course: Path, path: str = "exercises/kernels/add.py") -> bytes:
    """Write a solved exercise (the copy with the reference's solutions left in); return it."""
    solved = make_exercises.solved(path, root=course) + SOLVED_MARK.encode()
    (course / path).write_bytes(solved)
    return solved


def change_reference(course: Path, path: str = "reference/kernels/add.py") -> None:
    with open(course / path, "a", encoding="utf-8") as stream:
        stream.write("# a later fix in the course\n")


def run(course: Path, *args: str):
    process = subprocess.run(
        [sys.executable, "scripts/make_exercises.py", *args],
        cwd=course, capture_output=True, text=True, timeout=60,
    )
    return process.returncode, process.stdout, process.stderr


def call(course: Path, capsys, *args: str) -> tuple[int, str]:
    """``main(args)`` on the copy in ``course``: its exit status and what it printed."""
    rc = make_exercises.main(list(args), root=course)
    return rc, capsys.readouterr().out


def tree(course: Path) -> dict[str, bytes]:
    return {
        p.relative_to(course).as_posix(): p.read_bytes()
        for p in sorted(course.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
    }


def backups(course: Path, path: str = "exercises/kernels/add.py") -> list[Path]:
    return sorted((course / path).parent.glob(Path(path).name + ".*.bak"))


# --------------------------------------------------------------------------- every command told


def documented_commands() -> list[tuple[str, str]]:
    """Each make_exercises command the README, the lessons, docs/instructor.md or a checker
    hint tells anyone to run, as (where, command); PATH stands for a file."""
    script = re.compile(r"scripts/make_exercises\.py((?:\s+(?:--[a-z-]+|PATH))*)")
    sources = [ROOT / "README.md", ROOT / "docs" / "instructor.md"]
    sources += sorted((ROOT / "lessons").glob("*.md")) + sorted((ROOT / "learning").rglob("*.py"))
    found = set()
    for source in sources:
        text = source.read_text(encoding="utf-8")
        where = source.relative_to(ROOT).as_posix()
        found.update((where, " ".join(["script", *m[1].split()])) for m in script.finditer(text))
        found.update((where, "make exercises") for _ in re.finditer(r"\bmake exercises\b", text))
    return sorted(found)


def _run_told(course: Path, command: str, path: str):
    if command == "make exercises":  # the Makefile's own recipe; -o: no .venv is made here
        bin_dir = Path(sys.executable).parent
        process = subprocess.run(
            ["make", "-o", ".venv/.installed", "exercises", f"BIN={bin_dir}"],
            cwd=course, capture_output=True, text=True, timeout=60,
        )
        failed = re.search(r"\*\*\* \[Makefile:\d+: exercises\] Error (\d+)", process.stderr)
        rc = int(failed[1]) if failed else process.returncode  # the script's, not make's 2
        return rc, process.stdout, process.stderr
    args = command.split()[1:]
    return run(course, *[path if arg == "PATH" else arg for arg in args])


def test_the_documents_name_the_commands_the_tests_run():
    """Are the plain run, --check and `make exercises` among the commands found (so the
    search below cannot pass by finding nothing)?"""
    commands = {command for _, command in documented_commands()}
    assert {"script", "script --check", "make exercises"} <= commands, commands


@pytest.mark.parametrize("reference_changed", [False, True], ids=["yours", "both-changed"])
@pytest.mark.parametrize("where, command", documented_commands())
def test_a_solved_file_survives_every_command_told(course, where, command, reference_changed):
    """After each documented command, is the solved file byte for byte as the learner left it
    (or, for --force, kept byte for byte in the backup the output names)?"""
    if command == "make exercises" and shutil.which("make") is None:
        pytest.skip("make is not installed")
    solved = solve(course)
    if reference_changed:
        change_reference(course)
    rc, out, err = _run_told(course, command, "exercises/kernels/add.py")
    assert rc in (0, 1, 3), f"{where}: `{command}` exit {rc}: {out}{err}"
    add = course / "exercises" / "kernels" / "add.py"
    if "--force" in command:
        (backup,) = backups(course)
        assert backup.read_bytes() == solved and backup.name in out
    else:
        assert add.read_bytes() == solved, f"{where}: `{command}` replaced the solved file"
        assert not backups(course)


# --------------------------------------------------------------------------- each state


def test_a_fresh_clone_gets_every_copy_and_the_record(tmp_path: Path, capsys):
    """With reference/ alone, does the script make all of exercises/, as committed, and a
    record that `--check` then accepts?"""
    shutil.copytree(ROOT / "reference", tmp_path / "reference",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert make_exercises.main([], root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "wrote exercises/kernels/add.py" in out and make_exercises.RECORD in out
    assert tree(tmp_path / "exercises") == {
        **{Path(p).relative_to("exercises").as_posix(): c
           for p, c in make_exercises.render().items()},
        ".generated.json": (ROOT / make_exercises.RECORD).read_bytes(),
    }
    assert make_exercises.main(["--check"], root=tmp_path) == 0


def test_an_edited_file_with_the_reference_unchanged_is_yours(course, capsys):
    """Does --check call an edited copy `yours` and exit 0; does a run keep it, in one line?"""
    solved = solve(course)
    rc, out = call(course, capsys, "--check")
    assert rc == make_exercises.EXIT_OK
    assert "yours: exercises/kernels/add.py (you edited it; reference/kernels/add.py has not " \
           "changed since)" in out
    assert "--diff PATH" in out and "1 edited by you" in out
    before = tree(course)
    rc, out = call(course, capsys)
    assert rc == make_exercises.EXIT_OK
    out = out.splitlines()
    assert out == ["kept exercises/kernels/add.py: you edited it; reference/kernels/add.py has "
                   "not changed since"]
    assert tree(course) == before and (course / "exercises/kernels/add.py").read_bytes() == solved


@pytest.mark.parametrize(
    "edited, check_status, check_line, run_status, run_line",
    [
        (
            False, 1,
            "out of date: exercises/kernels/add.py (reference/kernels/add.py changed since it was "
            "made; you have not edited it)\nrun `python scripts/make_exercises.py` to bring these",
            0, "wrote exercises/kernels/add.py\n",
        ),
        (
            True, 3,
            "both changed: exercises/kernels/add.py (you edited it, and reference/kernels/add.py "
            "changed since it was made)\nto merge exercises/kernels/add.py: `python scripts/"
            "make_exercises.py --diff exercises/kernels/add.py` shows your file against the new",
            3, "kept exercises/kernels/add.py: you edited it, and reference/kernels/add.py changed",
        ),
    ],
    ids=["unedited", "edited"],
)
def test_after_the_reference_changed(course, capsys, edited, check_status, check_line,
                                     run_status, run_line):
    """Unedited copy: --check exits 1 saying to rerun, and the run rewrites it. Edited copy:
    --check exits 3 with the diff command, and the run keeps the file and exits 3."""
    solved = solve(course) if edited else None
    change_reference(course)
    rc, out = call(course, capsys, "--check")
    assert rc == check_status and check_line in out
    rc, out = call(course, capsys)
    assert rc == run_status and run_line in out
    add = (course / "exercises/kernels/add.py").read_bytes()
    assert (add == solved) if edited else add.endswith(b"# a later fix in the course\n")
    assert call(course, capsys, "--check")[0] == (check_status if edited else 0)


def test_diff_and_stub_show_the_new_copy(course, capsys):
    """Does --diff show the learner's lines against the new copy's, --stub the new copy?"""
    solve(course)
    change_reference(course)
    rc, diff = call(course, capsys, "--diff", "exercises/kernels/add.py")
    assert rc == 0 and "-" + SOLVED_MARK in diff and "+# a later fix in the course\n" in diff
    rc, stub = call(course, capsys, "--stub", "exercises/kernels/add.py")
    assert rc == 0 and stub == make_exercises.render(course)["exercises/kernels/add.py"].decode()


def test_force_backs_up_to_a_new_dated_name_then_writes(course, capsys):
    """--force PATH: the learner's file goes to PATH.<date>.bak (named in the output), never
    over an existing backup; only that PATH is replaced."""
    solved = solve(course)
    other = solve(course, "exercises/kernels/reductions.py")
    moment = datetime(2026, 12, 1, 22, 10)
    taken = course / "exercises/kernels/add.py.2026-12-01T2210.bak"
    taken.write_bytes(b"an older backup\n")
    assert make_exercises.main(["--force", "exercises/kernels/add.py"], root=course,
                               now=moment) == 0
    out = capsys.readouterr().out
    assert "wrote exercises/kernels/add.py (yours is now exercises/kernels/add.py.2026-12-01T22" \
           "10-2.bak)" in out
    assert taken.read_bytes() == b"an older backup\n"
    assert (course / "exercises/kernels/add.py.2026-12-01T2210-2.bak").read_bytes() == solved
    assert (course / "exercises/kernels/add.py").read_bytes() == make_exercises.render(course)[
        "exercises/kernels/add.py"]
    assert (course / "exercises/kernels/reductions.py").read_bytes() == other
    solve(course)
    assert make_exercises.main(["--force", "exercises/kernels/add.py"], root=course,
                               now=moment) == 0
    assert len(backups(course)) == 3


def test_a_copy_whose_reference_is_gone(course, capsys):
    """Unedited: --check exits 1, a run removes it. Edited: kept, and no longer recorded."""
    edited = solve(course, "exercises/kernels/reductions.py")
    (course / "reference/kernels/add.py").unlink()
    (course / "reference/kernels/reductions.py").unlink()
    rc, out = call(course, capsys, "--check")
    assert rc == make_exercises.EXIT_RERUN
    assert "left over: exercises/kernels/add.py" in out
    assert "yours: exercises/kernels/reductions.py" in out
    rc, out = call(course, capsys)
    assert rc == 0
    assert "removed exercises/kernels/add.py" in out
    assert "kept exercises/kernels/reductions.py" in out
    assert not (course / "exercises/kernels/add.py").exists()
    assert (course / "exercises/kernels/reductions.py").read_bytes() == edited
    assert "exercises/kernels/reductions.py" not in make_exercises.load_record(course)
    assert make_exercises.main(["--check"], root=course) == 0


def test_a_file_the_record_does_not_know_is_kept(course, capsys):
    """Without a record, a copy that differs cannot be told apart: kept, --check exits 3; the
    copies that match are recorded."""
    solved = solve(course)
    (course / make_exercises.RECORD).unlink()
    assert make_exercises.main(["--check"], root=course) == make_exercises.EXIT_MERGE
    assert "not recorded: exercises/kernels/add.py" in capsys.readouterr().out
    assert make_exercises.main([], root=course) == make_exercises.EXIT_MERGE
    assert (course / "exercises/kernels/add.py").read_bytes() == solved
    record = make_exercises.load_record(course)
    assert "exercises/kernels/add.py" not in record and "exercises/kernels/matmul.py" in record


def test_a_missing_copy_is_made_again(course, capsys):
    """A copy deleted (or never made): --check exits 1 naming it; a run makes it again."""
    (course / "exercises/kernels/add.py").unlink()
    assert make_exercises.main(["--check"], root=course) == make_exercises.EXIT_RERUN
    assert "missing: exercises/kernels/add.py" in capsys.readouterr().out
    assert make_exercises.main([], root=course) == 0
    assert make_exercises.main(["--check"], root=course) == 0


@pytest.mark.parametrize(
    "record, problem",
    [
        ("{not json", "cannot be read"),
        ('{"about": "x"}', 'has no "files" table'),
        ('{"files": {"exercises/../../outside.txt": ENTRY}}', "does not make sense"),
        ('{"files": {"/tmp/outside.txt": ENTRY}}', "does not make sense"),
        ('{"files": {"exercises/kernels/add.py": {"sha256": "abc"}}}', "does not make sense"),
    ],
)
@pytest.mark.parametrize("args", [[], ["--check"], ["--force"]])
def test_a_damaged_record_stops_everything_in_one_line(course, capsys, record, problem, args):
    """A record that is not JSON, names a path outside exercises/ (with the sha256 of a file
    there, so a removal would be possible) or lacks a field: exit 2, one line, nothing changed."""
    outside = course / "outside.txt"
    outside.write_text("not the course's\n")
    entry = json.dumps({"sha256": make_exercises._sha(outside.read_bytes()),
                        "reference": "reference/outside.txt",
                        "reference_sha256": make_exercises._sha(b"")})
    (course / make_exercises.RECORD).write_text(record.replace("ENTRY", entry))
    solve(course)
    before = tree(course)
    assert make_exercises.main(args, root=course) == make_exercises.EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert problem in captured.err and "git restore" in captured.err
    assert tree(course) == before


@pytest.mark.parametrize(
    "args, problem",
    [
        (["exercises/kernels/nope.py"], "not a file this script makes"),
        (["--force", "../Makefile"], "not a file this script makes"),
        (["--diff", "exercises/nope.py"], "not a file this script makes"),
        (["--stub", "exercises/kernels/add.py", "exercises/kernels/softmax.py"], "one PATH"),
    ],
)
def test_a_bad_path_is_a_one_line_error(course, capsys, args, problem):
    before = tree(course)
    assert make_exercises.main(args, root=course) == make_exercises.EXIT_ERROR
    err = capsys.readouterr().err
    assert problem in err and len(err.strip().splitlines()) == 1
    assert tree(course) == before


def test_the_exit_codes_are_documented():
    """Does --help (and the module's docstring) give each exit status the script returns?"""
    process = subprocess.run(
        [sys.executable, "scripts/make_exercises.py", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    text = " ".join(process.stdout.split())
    for code in (0, 1, 2, 3):
        assert f"{code} " in text.split("exit status:")[1]
        assert f"{code} " in " ".join(make_exercises.__doc__.split()).split("Exit status:")[1]


# --------------------------------------------------------------------------- the helpers

HELPERS = {"exercises/kernels/row_plan.py": "reference.kernels.row_plan",
           "exercises/kernels/launch.py": "reference.kernels.launch",
           "exercises/kernels/pingpong.py": "reference.kernels.pingpong",
           "exercises/kernels/cooperative.py": "reference.kernels.cooperative"}  # fmt: skip


def test_exercises_hold_only_what_a_learner_edits():
    """Does the script make exactly the manifest's editable files, each with a TODO, and the
    packages' __init__.py, and no copy of a helper (in the record or on disk)?"""
    made = make_exercises.render()
    editable = {path for e in MANIFEST.exercises.values() for path in e.editable}
    inits = {path for path in made if path.endswith("/__init__.py")}
    assert set(made) - inits == editable
    assert all(b"# TODO: " in made[path] for path in editable)
    assert make_exercises.helpers() == HELPERS
    assert not set(HELPERS) & (set(made) | set(make_exercises.load_record()))
    assert not any((ROOT / path).exists() for path in HELPERS)


def test_a_copy_imports_the_helpers_from_the_reference():
    """Does every copy name reference.kernels.* for a helper, never a module of exercises/ that
    is not there, with the imports sorted as ruff sorts them?"""
    modules = {path.removeprefix("exercises/").removesuffix(".py"): dotted
               for path, dotted in HELPERS.items()}  # fmt: skip
    made = {path: content.decode() for path, content in make_exercises.render().items()}
    for path, text in made.items():
        relative = PurePosixPath(path).relative_to("exercises")
        found = make_exercises.helper_imports(ast.parse(text), relative, modules, "exercises")
        assert found == [], f"{path} imports a helper from exercises/: {found}"
    assert "\nfrom reference.kernels.launch import Launcher, Replays\nfrom reference.kernels." \
           "row_plan import RowPlan, check_rows, choose_row_plan\n" in made[
               "exercises/kernels/softmax.py"]
    assert "\nfrom learning.runtime import default_device, interpreting\nfrom reference.kernels " \
           "import cooperative\n\n" in made["exercises/kernels/matmul.py"]
    assert "from learning.runtime import interpreting\nfrom reference.kernels.row_plan import (\n" \
           in made["exercises/kernels/rmsnorm.py"]


def test_the_matmul_copy_imports_the_persistent_kernel_instead_of_holding_it():
    """The finished persistent kernel holds the tile mapping, the K loop, the precision branch
    and the masked store that _matmul_tile's TODO asks for: the copy (and the solved file the
    tests grade) imports the course's kernels from the reference, and defines none of the
    course-code region's functions, so a kernel of the learner's that calls one is the course's
    (learning.check.replay.extract)."""
    reference = (ROOT / "reference/kernels/matmul.py").read_text()
    region = reference[reference.index(make_exercises.GIVEN_BEGIN) :
                       reference.index(make_exercises.GIVEN_END)]  # fmt: skip
    given = {node.name for node in ast.parse(region.partition("\n")[2]).body
             if isinstance(node, ast.FunctionDef)}  # fmt: skip
    assert {"_matmul_persistent", "_matmul_persistent_kernel"} <= given
    for text in (make_exercises.render()["exercises/kernels/matmul.py"].decode(),
                 make_exercises.solved("exercises/kernels/matmul.py").decode()):  # fmt: skip
        defined = {n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}
        assert not defined & given, defined & given
        assert ("from reference.kernels.matmul import (  # noqa: E402\n"
                "    _matmul_persistent_kernel,\n    _matmul_persistent_rows_kernel,\n)\n") in text
        assert make_exercises.GIVEN_BEGIN not in text


def test_course_code_markers_that_do_not_pair_up_are_an_error():
    source = f"x = 1\n{make_exercises.GIVEN_BEGIN}\ndef f():\n    return 1\n"
    with pytest.raises(make_exercises.MarkerError, match="do not pair up"):
        make_exercises.take_out_course_code(source, path="reference/demo.py")
    closed = source + f"{make_exercises.GIVEN_END}\n\n\nprint(f())\n"
    made = make_exercises.take_out_course_code(closed, path="reference/demo.py")
    assert "def f" not in made and "from reference.demo import (  # noqa: E402\n    f,\n)\n" in made


def test_relative_imports_of_helpers_are_pointed_at_the_reference(tmp_path: Path):
    """In a course of one exercise and one helper: are the helper's imports rewritten (a module,
    a name of the package, after a block of the course's own imports), and the others kept?"""
    kernels = tmp_path / "reference" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "__init__.py").write_text("")
    (kernels / "plan.py").write_text("WIDTH = 4\n")
    (kernels / "task.py").write_text(textwrap.dedent("""\
        import math

        from learning.runtime import interpreting

        from . import plan
        from .plan import WIDTH
        from .other import thing


        def width():
            ### BEGIN SOLUTION
            return WIDTH
            ### END SOLUTION
    """))
    (kernels / "other.py").write_text("thing = 1\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    made = make_exercises.render(tmp_path)
    assert set(made) == {"exercises/kernels/__init__.py", "exercises/kernels/task.py",
                         "exercises/kernels/other.py"}  # fmt: skip
    assert made["exercises/kernels/task.py"].decode().split("\n", 4)[4].startswith(
        "import math\n\nfrom learning.runtime import interpreting\nfrom reference.kernels import "
        "plan\nfrom reference.kernels.plan import WIDTH\nfrom .other import thing\n\n")
    assert make_exercises.solved("exercises/kernels/task.py", tmp_path).endswith(
        b"    ### BEGIN SOLUTION\n    return WIDTH\n    ### END SOLUTION\n")


def test_a_helper_import_too_long_for_the_copy_is_an_error(tmp_path: Path):
    """Is an import that would pass the line length once it names the reference refused, with
    the file, the line and what to do?"""
    kernels = tmp_path / "reference" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "plan.py").write_text("")
    names = ", ".join(f"name_{i}" for i in range(12))
    (kernels / "task.py").write_text(f"from .plan import {names}\n### BEGIN SOLUTION\n"
                                     "### END SOLUTION\n")
    with pytest.raises(make_exercises.MarkerError, match="task.py:1: .*wrap its names"):
        make_exercises.render(tmp_path)


def before_the_move(course: Path) -> dict[str, bytes]:
    """exercises/ as a learner had it while the helpers were copied: each helper's copy as the
    script wrote it then (the reference under the header), recorded; softmax solved then (its
    helpers imported relatively), launch.py edited. Returns the learner's two files."""
    record = make_exercises.load_record(course)
    old_copies = {}
    for path in HELPERS:
        source = path.replace("exercises/", "reference/", 1)
        raw = (course / source).read_bytes()
        old_copies[path] = make_exercises.header(source).encode() + raw
        (course / path).write_bytes(old_copies[path])
        record[path] = make_exercises.Entry(make_exercises._sha(old_copies[path]), source,
                                            make_exercises._sha(raw))  # fmt: skip
    (course / make_exercises.RECORD).write_text(make_exercises.record_text(record))
    source = "reference/kernels/softmax.py"
    yours = {
        "exercises/kernels/softmax.py": (make_exercises.header(source) + (course / source)
                                         .read_text() + SOLVED_MARK).encode(),
        "exercises/kernels/launch.py": old_copies["exercises/kernels/launch.py"] + b"# mine\n",
    }  # fmt: skip
    for path, content in yours.items():
        (course / path).write_bytes(content)
    return yours


@pytest.mark.parametrize("command", ["script", "script --check", "make exercises"])
def test_a_file_solved_before_the_helpers_moved_survives(course, command):
    """A solved softmax that imports .launch and .row_plan from exercises/, an edited launch.py:
    after the command both are byte for byte as they were; the output names the import of the
    helper whose copy goes (row_plan) with its line and the import to write, and says the edited
    helper stays; a run removes the unedited helper copies, --check none; exit 3."""
    if command == "make exercises" and shutil.which("make") is None:
        pytest.skip("make is not installed")
    yours = before_the_move(course)
    softmax = yours["exercises/kernels/softmax.py"].decode().splitlines()
    line = softmax.index("from .row_plan import RowPlan, check_rows, choose_row_plan") + 1
    rc, out, err = _run_told(course, command, "")
    assert rc == make_exercises.EXIT_MERGE, out + err
    for path, content in yours.items():
        assert (course / path).read_bytes() == content, f"`{command}` changed {path}"
    assert (f"moved: exercises/kernels/softmax.py:{line}: `from .row_plan import ...` reads a "
            "helper the course no longer copies into exercises/; write `from reference.kernels."
            "row_plan import ...` there instead") in out
    assert "moved: exercises/kernels/softmax.py:" + str(line - 1) not in out  # launch.py stays
    kept = "yours: exercises/kernels/launch.py (" if "--check" in command else \
        "kept exercises/kernels/launch.py: "  # fmt: skip
    assert kept + "you edited it; the course no longer copies its helper reference.kernels." \
        "launch" in out
    removed = not command.endswith("--check")
    for path in ("exercises/kernels/row_plan.py", "exercises/kernels/pingpong.py"):
        assert (course / path).exists() is not removed
        assert (f"removed {path}" in out) is removed
    assert not backups(course, "exercises/kernels/softmax.py")


def test_once_the_import_is_fixed_the_solved_file_is_yours(course, capsys):
    """After the learner writes the import the output told them to, does --check call the file
    theirs and exit 0, and the edited helper too?"""
    before_the_move(course)
    assert make_exercises.main([], root=course) == make_exercises.EXIT_MERGE
    softmax = course / "exercises/kernels/softmax.py"
    text = softmax.read_text()
    softmax.write_text(text.replace("from .row_plan import", "from reference.kernels.row_plan "
                                    "import"))  # fmt: skip
    capsys.readouterr()
    rc, out = call(course, capsys, "--check")
    assert rc == make_exercises.EXIT_OK, out
    assert "yours: exercises/kernels/softmax.py" in out and "moved:" not in out
    assert "yours: exercises/kernels/launch.py" in out


def test_a_helper_path_is_named_as_moved(course, capsys):
    """--stub and --diff of a helper's path: one line saying where it is now, exit 2."""
    for option in ("--stub", "--diff"):
        rc = make_exercises.main([option, "exercises/kernels/row_plan.py"], root=course)
        err = capsys.readouterr().err
        assert rc == make_exercises.EXIT_ERROR and len(err.strip().splitlines()) == 1
        assert "the course no longer copies this helper; exercises import it from " \
               "reference.kernels.row_plan" in err


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
