"""scripts/lesson_time.py: each lesson's reading and run time against its stated minutes."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

import lesson_time  # noqa: E402


def test_words_leave_the_front_matter_out():
    source = "---\njupytext:\n  formats: ipynb,md:myst\n---\n# Two words\n\nthree more here\n"
    assert lesson_time.words(source) == 5


def test_a_lesson_fits_when_reading_and_running_are_within_its_minutes():
    assert lesson_time.fits(30, 29.0, 60.0)
    assert not lesson_time.fits(30, 29.5, 60.0)


def test_every_lesson_fits_its_stated_minutes_when_read(capsys):
    assert lesson_time.main([]) == 0
    out = capsys.readouterr().out
    count = len(lesson_time.manifest_module.load().lessons)
    assert " NO" not in out and out.rstrip().splitlines()[-1].startswith(f"{count} of {count}")


def test_a_lesson_stated_too_short_is_named_and_the_exit_is_1(monkeypatch, capsys):
    real = lesson_time.manifest_module.load()
    key = next(iter(real.lessons))
    short = {**real.lessons, key: dataclasses.replace(real.lessons[key], minutes=1)}
    monkeypatch.setattr(lesson_time.manifest_module, "load",
                        lambda: dataclasses.replace(real, lessons=short))  # fmt: skip
    assert lesson_time.main([]) == 1
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith(key))
    assert line.endswith("NO")
