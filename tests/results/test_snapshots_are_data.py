"""Are the preserved sources under results/ stored as data, so that no tool (ruff, pytest, an
editor's index, a search for duplicated code) takes an old version of a module for course
code?"""

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "results"
# what the repository keeps (results/local/ is a learner's own, and not kept)
KEPT = [path for path in RESULTS.rglob("*") if "local" not in path.relative_to(RESULTS).parts]


def test_no_python_file_is_left_under_results():
    assert [str(path.relative_to(RESULTS)) for path in KEPT if path.suffix == ".py"] == []


def test_every_snapshot_has_its_data_name():
    names = [path.name for path in (RESULTS / "snapshots").iterdir()]
    assert names, "results/snapshots/ holds no snapshot"
    assert [name for name in names if not name.endswith(".txt")] == []


def test_every_recorded_snapshot_names_a_data_file_that_is_there():
    wrong = []
    for path in sorted(path for path in KEPT if path.suffix == ".json"):
        for source, copy in (json.loads(path.read_text()).get("source_snapshots") or {}).items():
            if not copy.endswith(".txt") or not (RESULTS.parent / copy).is_file():
                wrong.append(f"{path.name}: {source} -> {copy}")
    assert wrong == []
