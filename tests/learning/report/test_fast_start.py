"""Does reading reports start at once (no torch, no triton, no slow format plugins), while the
Triton backend is still chosen before Triton is imported?

Each check runs in a fresh interpreter: what a process has imported is the question."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from learning.report.fingerprint import REPO_ROOT, SCHEMA_PATH
from learning.report.records import RECORD_SCHEMA_PATH
from learning.report.validate import _FORMAT_LIBRARIES

SLOW = ("torch", "triton", "numpy", "rfc3987_syntax", "lark")


def _python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    environment |= {"CUDA_VISIBLE_DEVICES": "", **env}  # no GPU, whatever the machine has
    answer = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=environment,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    return answer.stdout.strip().splitlines()[-1]


def _imported_by_validating(*paths: str) -> str:
    code = (
        "import sys\n"
        "from learning.report.__main__ import main\n"
        f"main(['validate', *{list(paths)!r}])\n"
        f"print(sorted(name for name in {SLOW!r} if name in sys.modules))"
    )
    return _python(code)


def test_validating_a_report_imports_nothing_slow():
    """`python -m learning.report validate` on a script record and on a report made before
    verdicts were recorded: nothing slow. A report that records verdicts needs numpy (and
    scipy's t quantile) for the intervals it re-derives, and nothing else slow."""
    assert _imported_by_validating("results/h200/clock-probe.json",
                                   "results/h200/all-burst-off.json") == "[]"  # fmt: skip
    assert "margin" in json.loads((REPO_ROOT / "results/h200/all.json").read_text())["settings"]
    assert _imported_by_validating("results/h200/all.json") == "['numpy']"


def test_the_format_libraries_are_hidden_only_while_jsonschema_is_imported():
    """None left in sys.modules: a later ``import rfc3987_syntax`` is an ordinary import."""
    code = (
        "import sys\n"
        "from learning.report.validate import _FORMAT_LIBRARIES, _jsonschema\n"
        "_jsonschema()\n"
        "print([n for n in _FORMAT_LIBRARIES if n in sys.modules and sys.modules[n] is None])"
    )
    assert _python(code) == "[]"


def test_the_schemas_use_no_format_so_hiding_its_libraries_changes_no_verdict():
    def keys(node):
        if isinstance(node, dict):
            yield from node
            for value in node.values():
                yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)

    for path in (SCHEMA_PATH, RECORD_SCHEMA_PATH):
        assert "format" not in set(keys(json.loads(path.read_text()))), (
            f"{path.name} uses a string format: validate it with a FormatChecker of that format "
            f"and stop hiding its library ({_FORMAT_LIBRARIES})"
        )


def test_the_backend_is_chosen_when_triton_is_imported():
    code = (
        "import os, sys\n"
        "import learning\n"
        "before = ('torch' in sys.modules, 'TRITON_INTERPRET' in os.environ)\n"
        "import triton\n"
        "print(before, os.environ.get('TRITON_INTERPRET'))"
    )
    assert _python(code) == "(False, False) 1"


def test_the_backend_is_chosen_when_it_is_asked_for():
    code = (
        "import os, learning.runtime as runtime\n"
        "print(runtime.default_device(), os.environ.get('TRITON_INTERPRET'))"
    )
    assert _python(code) == "cpu 1"


def test_an_explicit_choice_is_kept_and_needs_no_torch():
    code = (
        "import os, sys, learning\n"
        "print(learning.runtime.backend(), 'torch' in sys.modules)"
    )
    assert _python(code, TRITON_INTERPRET="0") == "cuda False"


def test_triton_imported_before_the_course_is_still_an_error():
    code = (
        "import triton\n"
        "try:\n"
        "    import learning\n"
        "except RuntimeError as error:\n"
        "    print('refused:', error)"
    )
    assert _python(code).startswith("refused: triton was imported before the course chose")
