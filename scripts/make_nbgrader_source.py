"""Make the nbgrader source assignments from the graded lessons.

    python scripts/make_nbgrader_source.py                  # every lesson that sets exercises
    python scripts/make_nbgrader_source.py 07-measurement   # one lesson
    python scripts/make_nbgrader_source.py --course-dir /tmp/course

For each lesson of ``course_manifest.toml`` that sets exercises, this writes
``<course-dir>/source/<lesson key>/``:

* ``<lesson key>.ipynb``: the lesson's MyST source (``lessons/<key>.md``) read by jupytext,
  with any ``nbgrader`` cell metadata it carries kept, and a final "Graded check" section: one
  locked, graded cell per exercise, worth the manifest's points for it. The cell calls
  :func:`learning.grade.check_submission` on the ``exercises/`` folder beside the notebook and
  ends with the points earned, which nbgrader takes as partial credit. The grading logic stays
  in ``learning.check``; the notebook only calls it;
* ``exercises/``: the learner's starting files for those exercises (the manifest's editable
  files, their packages' ``__init__.py`` and the helpers beside them), copied from the
  course's ``exercises/``. A learner edits these in the assignment folder and submits the
  folder; ``nbgrader autograde`` runs the graded cell in the submitted copy.

The source folder is rebuilt from scratch each time, so it never holds a stale file.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from learning import manifest as manifest_module  # noqa: E402

NBGRADER_SCHEMA_VERSION = 3

GRADED_INTRO = """## Graded check

The cell below is the grade for this notebook. It runs the course's checker on the
`exercises/` folder next to this notebook, exactly as `python -m learning.check` does, and its
last line is your points. It is locked: when the notebook is graded, nbgrader restores it.
"""

GRADED_CELL = """\
from learning.grade import check_submission, describe

{variable} = check_submission({exercise!r}, ".")  # ./exercises/, as submitted
print(describe({variable}))
{variable}.points  # the checker's points; nbgrader takes them as partial credit"""


def graded_lessons(
    manifest: manifest_module.Manifest, keys: list[str]
) -> list[manifest_module.Lesson]:
    lessons = [lesson for lesson in manifest.lessons.values() if lesson.exercises]
    if not keys:
        return lessons
    known = {lesson.key: lesson for lesson in lessons}
    missing = [key for key in keys if key not in known]
    if missing:
        raise SystemExit(
            f"make_nbgrader_source: {missing[0]!r} is not a graded lesson; "
            f"choose from {', '.join(known) or '(none)'}"
        )
    return [known[key] for key in keys]


def graded_cells(lesson: manifest_module.Lesson, manifest: manifest_module.Manifest) -> list:
    cells = [nbformat.v4.new_markdown_cell(GRADED_INTRO.rstrip())]
    for name in lesson.exercises:
        exercise = manifest.exercise(name)
        source = GRADED_CELL.format(variable=f"{name}_result", exercise=name)
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = {
            "grade": True,
            "grade_id": f"check-{name}",
            "locked": True,
            "points": exercise.points,
            "schema_version": NBGRADER_SCHEMA_VERSION,
            "solution": False,
            "task": False,
        }
        cells.append(cell)
    return cells


def starting_files(lesson: manifest_module.Lesson, manifest: manifest_module.Manifest) -> list[str]:
    """The exercises/ files a learner needs for this lesson: editable files, the __init__.py
    of every package above them and the maintained helpers in those packages."""
    files: set[str] = set()
    for name in lesson.exercises:
        for path in manifest.exercise(name).editable:
            files.add(path)
            parent = Path(path).parent
            while parent != Path("."):
                files.add((parent / "__init__.py").as_posix())
                parent = parent.parent
    folders = {Path(path).parent for path in files}
    files |= {helper for helper in manifest.helpers if Path(helper).parent in folders}
    return sorted(path for path in files if (REPO / path).is_file())


def make_source(
    lesson: manifest_module.Lesson, manifest: manifest_module.Manifest, course: Path
) -> Path:
    notebook = jupytext.read(REPO / lesson.source)
    notebook.metadata.pop("jupytext", None)  # the learner's copy is not paired with a .md
    notebook.cells += graded_cells(lesson, manifest)
    nbformat.validate(notebook)
    folder = course / "source" / lesson.key
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{lesson.key}.ipynb")
    for path in starting_files(lesson, manifest):
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / path, target)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "lessons", nargs="*", metavar="LESSON", help="lesson keys (default: all graded)"
    )
    parser.add_argument("--course-dir", type=Path, default=REPO / "course")
    args = parser.parse_args(argv)
    manifest = manifest_module.load()
    for lesson in graded_lessons(manifest, args.lessons):
        folder = make_source(lesson, manifest, args.course_dir)
        print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
