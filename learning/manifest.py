"""The course manifest (``course_manifest.toml``) as a small typed model.

The manifest says which lessons exist and which files each has, which exercises they set,
which check module grades each exercise, and which paths are maintained and which belong to
the learner. :func:`load` reads and validates it; a mistake in the file is a
:class:`ManifestError` that names the table and the key, never a ``KeyError`` later on.

Only the standard library is imported here: the checker reads the manifest before it starts a
check process, and that must stay fast.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANIFEST_PATH = ROOT / "course_manifest.toml"
RUNS_ON = ("cpu", "gpu")
_LESSON_KEY = re.compile(r"^(?P<number>\d{2})-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)$")


class ManifestError(ValueError):
    """The manifest is malformed or inconsistent; the message names the table and key."""


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    minutes: int
    prerequisites: tuple[int, ...]  # lesson numbers, e.g. (4, 7)
    runs_on: str  # "cpu" or "gpu"
    exercises: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.number:02d}-{self.slug}"

    @property
    def source(self) -> str:
        """The MyST markdown the notebook is made from."""
        return f"lessons/{self.key}.md"

    @property
    def notebook(self) -> str:
        return f"lessons/{self.key}.ipynb"

    @property
    def journal(self) -> str:
        """The learner's prediction and observation notes for this lesson."""
        return f"journals/{self.key}.md"

    @property
    def files(self) -> tuple[str, ...]:
        return (self.source, self.notebook, self.journal)


@dataclass(frozen=True)
class Exercise:
    name: str
    check: str  # module exposing run(exercise, impl) -> list[CheckResult]
    editable: tuple[str, ...]  # under exercises/
    reference: tuple[str, ...]  # under reference/
    points: float  # what the exercise is worth; the check module splits it among its checks
    time_limit_s: float  # for the whole check process


@dataclass(frozen=True)
class Manifest:
    maintained: tuple[str, ...]
    learner: tuple[str, ...]
    helpers: tuple[str, ...]
    browse: tuple[str, ...]  # what JupyterLab's file browser lists at the root; () lists all
    lessons: Mapping[str, Lesson]  # by key, in file order
    exercises: Mapping[str, Exercise]  # by name, in file order

    def exercise(self, name: str) -> Exercise:
        try:
            return self.exercises[name]
        except KeyError:
            choices = ", ".join(self.exercises)
            raise ManifestError(f"unknown exercise {name!r}; choose one of {choices}") from None

    def lesson_of(self, exercise: str) -> Lesson | None:
        """The lesson that sets ``exercise``; None while that lesson is not written yet."""
        for lesson in self.lessons.values():
            if exercise in lesson.exercises:
                return lesson
        return None

    def is_learners(self, path: str) -> bool:
        """Whether ``path`` (relative to the repository root) belongs to the learner."""
        return any(path == p.rstrip("/") or path.startswith(p) for p in self.learner)


def load(path: Path | str = MANIFEST_PATH) -> Manifest:
    """Read and validate the manifest at ``path``."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ManifestError(f"{path.name}: not valid TOML: {error}") from None
    return parse(data)


def parse(data: Mapping[str, Any]) -> Manifest:
    """Build and cross-check a :class:`Manifest` from the TOML's tables."""
    paths = _table(data, "paths", "paths")
    exercises = {
        name: _exercise(name, _table(table, None, f"exercises.{name}"))
        for name, table in _table(data, "exercises", "exercises").items()
    }
    lessons = {
        key: _lesson(key, _table(table, None, f"lessons.{key}"))
        for key, table in _table(data, "lessons", "lessons").items()
    }
    for key, lesson in lessons.items():
        for name in lesson.exercises:
            if name not in exercises:
                raise ManifestError(f"lessons.{key}: exercise {name!r} has no [exercises.{name}]")
        if any(number >= lesson.number for number in lesson.prerequisites):
            raise ManifestError(f"lessons.{key}.prerequisites: only earlier lessons can come first")
    return Manifest(
        maintained=_strings(paths, "maintained", "paths"),
        learner=_strings(paths, "learner", "paths"),
        helpers=_strings(paths, "helpers", "paths", default=()),
        browse=_strings(paths, "browse", "paths", default=()),
        lessons=lessons,
        exercises=exercises,
    )


def _lesson(key: str, table: Mapping[str, Any]) -> Lesson:
    where = f"lessons.{key}"
    match = _LESSON_KEY.match(key)
    if not match:
        raise ManifestError(f"{where}: a lesson's key is NN-slug (two digits, lower-case words)")
    runs_on = _value(table, "runs_on", str, where)
    if runs_on not in RUNS_ON:
        raise ManifestError(f"{where}.runs_on: {runs_on!r} is not one of {', '.join(RUNS_ON)}")
    return Lesson(
        number=int(match["number"]),
        slug=match["slug"],
        title=_value(table, "title", str, where),
        minutes=_value(table, "minutes", int, where),
        prerequisites=_numbers(table, "prerequisites", where),
        runs_on=runs_on,
        exercises=_strings(table, "exercises", where),
    )


def _exercise(name: str, table: Mapping[str, Any]) -> Exercise:
    where = f"exercises.{name}"
    exercise = Exercise(
        name=name,
        check=_value(table, "check", str, where),
        editable=_strings(table, "editable", where),
        reference=_strings(table, "reference", where),
        points=float(_value(table, "points", (int, float), where)),
        time_limit_s=float(_value(table, "time_limit_s", (int, float), where)),
    )
    for key, folder in (("editable", "exercises/"), ("reference", "reference/")):
        for file in getattr(exercise, key):
            if not file.startswith(folder):
                raise ManifestError(f"{where}.{key}: {file!r} is not under {folder}")
    if exercise.points <= 0 or exercise.time_limit_s <= 0:
        raise ManifestError(f"{where}: points and time_limit_s must be positive")
    return exercise


def _table(data: Mapping[str, Any], key: str | None, where: str) -> Mapping[str, Any]:
    value = data if key is None else data.get(key)
    if not isinstance(value, Mapping):
        raise ManifestError(f"[{where}] is missing or is not a table")
    return value


def _value(table: Mapping[str, Any], key: str, kind, where: str) -> Any:
    if key not in table:
        raise ManifestError(f"{where}: missing key {key!r}")
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ManifestError(f"{where}.{key}: unexpected value {value!r}")
    return value


def _numbers(table: Mapping[str, Any], key: str, where: str) -> tuple[int, ...]:
    value = _value(table, key, list, where)
    if not all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        raise ManifestError(f"{where}.{key}: expected a list of lesson numbers, got {value!r}")
    return tuple(value)


def _strings(table: Mapping[str, Any], key: str, where: str, default=None) -> tuple[str, ...]:
    if key not in table and default is not None:
        return tuple(default)
    value = _value(table, key, list, where)
    if not all(isinstance(item, str) for item in value):
        raise ManifestError(f"{where}.{key}: expected a list of strings, got {value!r}")
    return tuple(value)
