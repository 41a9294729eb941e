"""Build the fingerprints of every known answer the course has shipped (see
learning/check/known_answers.py).

    python scripts/known_answers.py           # rewrite learning/check/known_answers.json
    python scripts/known_answers.py --check   # exit 1 if the checked-in file is not current

The answers are the functions that hold a solution region in some version of a reference
file, and the finished functions of its course-code regions (which the exercise imports): the
files in ``reference/`` now, every reference file a report preserved under
``results/snapshots/``, and every version of a file under ``reference/`` in the repository's
history (``git log`` and ``git show``). From each, the fingerprints the course hands out
without the answer are taken away: every exercise as ``scripts/make_exercises.py`` makes it,
that version's own stub, and the helper modules of ``reference/`` that hold no solution.

Only hashes are written, never source. Run it after any change to a reference file's
solution regions; ``tests/learning/test_known_answers.py`` fails until the file is current.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import make_exercises  # noqa: E402

from learning.check import known_answers  # noqa: E402

BEGIN = "### BEGIN SOLUTION"
SNAPSHOTS = "results/snapshots"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def versions(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """``(reference path, origin, text)`` of every version of a reference file that holds a
    solution region: the current files first, then the snapshots, then the history, newest
    first (an answer found twice keeps its first origin)."""
    found = []
    for path in sorted((root / "reference").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if BEGIN in text:
            relative = path.relative_to(root).as_posix()
            found.append((relative, relative, text))
    measured = _snapshot_paths(root)
    for path in sorted((root / SNAPSHOTS).glob("*.py.txt")):
        text = path.read_text(encoding="utf-8")
        name = f"{SNAPSHOTS}/{path.name}"
        if BEGIN in text and name in measured:
            found.append((measured[name], f"{name} (a snapshot of {measured[name]})", text))
    log = _git(root, "log", "--format=@%H %cs", "--name-only", "--", "reference/")
    commit = date = ""
    for line in log.splitlines():
        if line.startswith("@"):
            commit, date = line[1:].split()
        elif line.endswith(".py"):
            try:
                text = _git(root, "show", f"{commit}:{line}")
            except subprocess.CalledProcessError:  # the commit deleted it
                continue
            if BEGIN in text:
                found.append((line, f"{line} at commit {commit[:10]} ({date})", text))
    return found


def _snapshot_paths(root: Path) -> dict[str, str]:
    """Each snapshot's reference path, as the reports that keep it name it."""
    named = {}
    for report in sorted((root / "results").rglob("*.json")):
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        snapshots = data.get("source_snapshots") if isinstance(data, dict) else None
        for path, snapshot in (snapshots or {}).items():
            if path.startswith("reference/"):
                named.setdefault(snapshot, path)
    return named


def answer_texts(root: Path = ROOT) -> list[tuple[dict, list[str]]]:
    """Each known answer as the corpus keeps it, with the text of its functions."""
    shipped = set()
    for path, text in make_exercises.render(root).items():
        if path.endswith(".py"):
            shipped |= known_answers.fingerprints(text.decode())
    for path in sorted((root / "reference").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if BEGIN not in text:
            shipped |= known_answers.fingerprints(text)
    found, seen = [], set()
    for path, origin, text in versions(root):
        exercise = "exercises/" + path.removeprefix("reference/")
        try:
            given = make_exercises.take_out_course_code(text, path=path)
            stub = make_exercises.strip_solutions(given, path=path, exercise_path=exercise)
        except make_exercises.MarkerError:
            continue  # a version whose markers did not parse was never shipped as an exercise
        handed_out = shipped | known_answers.fingerprints(stub)
        finished = _course_code(text)
        small, small_names, small_texts = set(), [], []
        for name, function in known_answers.functions(text):
            if name not in finished and not any(
                line.strip() == BEGIN for line in function.splitlines()
            ):  # fmt: skip
                continue
            own = known_answers.fingerprints(function) - handed_out
            if len(own) < known_answers.SMALLEST:  # compared with the others, file to file
                small |= own
                small_names.append(name)
                small_texts.append(function)
            elif (name, frozenset(own)) not in seen:
                seen.add((name, frozenset(own)))
                entry = {"function": name, "unit": "function", "path": path, "origin": origin}
                if name in finished:
                    entry["given"] = True  # finished course code, which the exercise imports
                entry["fingerprints"] = known_answers.pack(own)
                found.append((entry, [function]))
        names = ", ".join(small_names)
        if len(small) >= known_answers.SMALLEST and (names, frozenset(small)) not in seen:
            seen.add((names, frozenset(small)))
            found.append(({"function": names, "unit": "file", "path": path, "origin": origin,
                           "fingerprints": known_answers.pack(small)},
                          small_texts))  # fmt: skip
    return found


def _course_code(text: str) -> set[str]:
    """The functions of a course-code region (scripts/make_exercises.py): finished code the
    exercise imports rather than holds, because it solves the exercise's own TODOs."""
    inside, names = False, set()
    for line in text.splitlines():
        inside = {make_exercises.GIVEN_BEGIN: True, make_exercises.GIVEN_END: False}.get(
            line.strip(), inside)  # fmt: skip
        if inside and line.startswith("def "):
            names.add(line[4:].partition("(")[0])
    return names


def build(root: Path = ROOT) -> dict:
    return {
        "about": "Fingerprints of every known answer (learning/check/known_answers.py); "
                 "made by scripts/known_answers.py, hashes only",
        "noise": known_answers.NOISE,
        "guarantee": known_answers.GUARANTEE,
        "smallest": known_answers.SMALLEST,
        "answers": [answer for answer, _ in answer_texts(root)],
    }  # fmt: skip


def text(corpus: dict) -> str:
    return json.dumps(corpus, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args = parser.parse_args(argv)
    made = text(build())
    if args.check:
        current = known_answers.CORPUS.read_text(encoding="utf-8")
        if current != made:
            print(f"{known_answers.CORPUS.relative_to(ROOT)} is not current: run "
                  "python scripts/known_answers.py")  # fmt: skip
            return 1
        return 0
    known_answers.CORPUS.write_text(made, encoding="utf-8")
    count = len(json.loads(made)["answers"])
    print(f"wrote {known_answers.CORPUS.relative_to(ROOT)}: {count} answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
