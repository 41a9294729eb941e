"""Does course_manifest.toml agree with the files on disk and with the op registry?"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from learning import manifest as manifest_module
from learning import ops

ROOT = manifest_module.ROOT
MANIFEST = manifest_module.load()
KERNEL_CHECK = "learning.check.kernels"


def _listed_files() -> set[str]:
    files = set()
    for exercise in MANIFEST.exercises.values():
        files.update(exercise.editable)
    return files


@pytest.mark.parametrize("key", list(MANIFEST.lessons))
def test_every_file_of_a_listed_lesson_exists(key):
    """Does each listed lesson have its source, its notebook and its journal template?"""
    lesson = MANIFEST.lessons[key]
    missing = [file for file in lesson.files if not (ROOT / file).is_file()]
    assert not missing, f"lesson {key} is listed but these files do not exist: {missing}"


def test_every_lesson_on_disk_is_listed():
    """Is every lessons/NN-slug.md in the manifest? (A glossary or schedule page is no lesson.)"""
    listed = {lesson.source for lesson in MANIFEST.lessons.values()}
    lessons = (ROOT / "lessons").glob("[0-9][0-9]-*.md")
    on_disk = {path.relative_to(ROOT).as_posix() for path in lessons}
    unlisted = sorted(on_disk - listed)
    assert not unlisted, f"add a [lessons.NN-slug] table to course_manifest.toml for {unlisted}"


def test_every_exercise_module_is_listed():
    """Is every module under exercises/ an exercise's editable file? (The helpers the kernels
    import stay in reference/: make_exercises.py copies only files with TODOs.)"""
    on_disk = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "exercises").rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    unlisted = sorted(on_disk - _listed_files())
    assert not unlisted, f"list as an exercise's editable file in course_manifest.toml: {unlisted}"


def test_every_registry_exercise_is_in_the_manifest_and_back():
    """Does the manifest list exactly the registry's kernel exercises, graded by kernel checks?"""
    registry = set(ops.exercises())
    kernel_exercises = {e.name for e in MANIFEST.exercises.values() if e.check == KERNEL_CHECK}
    assert registry - set(MANIFEST.exercises) == set(), "registry exercises not in the manifest"
    assert kernel_exercises == registry, "manifest kernel exercises the registry does not have"
    for name in registry:
        assert MANIFEST.exercise(name).check == KERNEL_CHECK


@pytest.mark.parametrize("name", sorted(ops.exercises()))
def test_kernel_exercise_files_are_the_registry_modules(name):
    """Are a kernel exercise's files <impl>/<spec.module>.py, as the registry resolves them?"""
    modules = {spec.module.replace(".", "/") for spec in ops.exercises()[name]}
    exercise = MANIFEST.exercise(name)
    assert set(exercise.editable) == {f"exercises/{module}.py" for module in modules}
    assert set(exercise.reference) == {f"reference/{module}.py" for module in modules}


@pytest.mark.parametrize("name", list(MANIFEST.exercises))
def test_exercise_files_exist_where_they_belong(name):
    """Are editable files under exercises/, reference files under reference/, and do they exist?"""
    exercise = MANIFEST.exercise(name)
    assert all(file.startswith("exercises/") for file in exercise.editable)
    assert all(file.startswith("reference/") for file in exercise.reference)
    not_written = [file for file in exercise.reference if not (ROOT / file).is_file()]
    if not_written:
        pytest.skip(f"{name}: {', '.join(not_written)} not written yet")
    missing = [file for file in exercise.editable if not (ROOT / file).is_file()]
    assert not missing, f"run `python scripts/make_exercises.py` to create {missing}"


@pytest.mark.parametrize("name", list(MANIFEST.exercises))
def test_check_module_exists(name):
    """Does each exercise name a check module that can be found?"""
    check = MANIFEST.exercise(name).check
    if check == KERNEL_CHECK and importlib.util.find_spec(check) is None:
        pytest.skip(f"{check} not written yet")
    assert importlib.util.find_spec(check) is not None, f"{name}: no module {check}"


def test_paths_are_split_between_maintainers_and_learner():
    """Do the maintained and the learner's paths exist and never overlap?"""
    assert set(MANIFEST.learner) == {"exercises/", "journals/"}
    assert not set(MANIFEST.maintained) & set(MANIFEST.learner)
    for path in (*MANIFEST.maintained, *MANIFEST.learner):
        assert (ROOT / path).exists(), f"{path} is in the manifest but not in the repository"
    assert MANIFEST.is_learners("exercises/measurement.py")
    assert not MANIFEST.is_learners("reference/measurement.py")


def test_the_file_browser_lists_the_learners_paths_and_the_lessons():
    """Does JupyterLab's root listing (``browse``) name only paths that exist, the learner's own
    and the lessons among them?"""
    for path in MANIFEST.browse:
        assert (ROOT / path).exists(), f"browse names {path}, which is not in the repository"
    assert {*MANIFEST.learner, "lessons/"} <= set(MANIFEST.browse)


def test_each_exercise_belongs_to_at_most_one_lesson():
    """Is every exercise set by one lesson at most (none while its lesson is not written)?"""
    sets = [name for lesson in MANIFEST.lessons.values() for name in lesson.exercises]
    assert len(sets) == len(set(sets))
    assert MANIFEST.lesson_of("measurement").key == "07-measurement"


# --------------------------------------------------------------------------- the loader


def _minimal() -> dict:
    return {
        "paths": {"maintained": ["learning/"], "learner": ["exercises/"]},
        "lessons": {
            "07-measurement": {
                "title": "t", "minutes": 10, "prerequisites": [], "runs_on": "cpu",
                "exercises": ["measurement"],
            }
        },
        "exercises": {
            "measurement": {
                "check": "learning.check.measurement", "editable": ["exercises/measurement.py"],
                "reference": ["reference/measurement.py"], "points": 10, "time_limit_s": 30,
            }
        },
    }


def test_a_lesson_key_gives_its_number_slug_and_files():
    """Does the key NN-slug alone give the lesson's number, slug and three files?"""
    lesson = manifest_module.parse(_minimal()).lessons["07-measurement"]
    assert (lesson.number, lesson.slug) == (7, "measurement")
    assert lesson.files == (
        "lessons/07-measurement.md", "lessons/07-measurement.ipynb", "journals/07-measurement.md"
    )


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d["lessons"]["07-measurement"].update(runs_on="tpu"), "runs_on"),
        (lambda d: d["lessons"]["07-measurement"].update(exercises=["nope"]), "nope"),
        (lambda d: d["lessons"]["07-measurement"].update(prerequisites=[9]), "earlier"),
        (lambda d: d["lessons"]["07-measurement"].pop("title"), "title"),
        (lambda d: d["lessons"].update({"7-x": d["lessons"]["07-measurement"]}), "NN-slug"),
        (lambda d: d["exercises"]["measurement"].update(editable=["reference/x.py"]), "exercises/"),
        (lambda d: d["exercises"]["measurement"].update(points="ten"), "points"),
        (lambda d: d.pop("paths"), "paths"),
    ],
)
def test_a_malformed_manifest_names_the_table_and_key(change, expected):
    """Does a mistake in the manifest raise ManifestError naming where it is?"""
    data = _minimal()
    change(data)
    with pytest.raises(manifest_module.ManifestError, match=expected):
        manifest_module.parse(data)


def test_invalid_toml_is_a_manifest_error(tmp_path: Path):
    """Is a TOML syntax error reported as a ManifestError, not a decoder traceback?"""
    path = tmp_path / "course_manifest.toml"
    path.write_text("[lessons\n")
    with pytest.raises(manifest_module.ManifestError, match="not valid TOML"):
        manifest_module.load(path)
