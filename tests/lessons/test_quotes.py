"""Are the figures the lessons quote from recorded reports the figures those reports hold?

`scripts/quote_reports.py` generates every region a lesson marks with `<!-- quote: ... -->`
(a table) or `<!-- q: ... -->` (a figure in prose) from the JSON the marker names. The first
test fails when a report is re-recorded and a lesson still quotes the old figures; the others
check the marker parser and renderer on a temporary lesson and a tiny synthetic report.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "quote_reports.py"

_spec = importlib.util.spec_from_file_location("quote_reports", SCRIPT)
quote_reports = importlib.util.module_from_spec(_spec)
sys.modules["quote_reports"] = quote_reports  # dataclasses look their module up there
_spec.loader.exec_module(quote_reports)


def _jupytext():
    """jupytext, of the course extra (pip install -e ".[course]"): the script writes and
    checks the lessons' notebooks through it; a test that needs it is skipped without it."""
    return pytest.importorskip("jupytext")


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip


def test_every_lesson_quote_matches_the_recorded_reports():
    """Does `--check` pass on the repository's lessons (no figure left stale)?"""
    _jupytext()  # the lessons are paired with notebooks
    result = _run("--check")
    assert result.returncode == 0, (
        f"{result.stdout}{result.stderr}\nrun `python scripts/quote_reports.py --write` and "
        "read the diff: a verdict (met / missed) or a claim around a figure may have changed"
    )


def test_the_lessons_use_markers():
    """Do the lessons that quote the benchmark quote it through markers?"""
    for name in ("09-first-triton-kernels", "10-row-kernels", "11-rmsnorm-fusion",
                 "12-tiled-gemm", "13-backward-passes", "16-capstone", "case-study"):  # fmt: skip
        text = (ROOT / "lessons" / f"{name}.md").read_text()
        assert "<!-- q: results/h200/" in text or "<!-- quote: results/h200/" in text, name


# --- a synthetic report and lesson ------------------------------------------------------------


def _variant(name, median_ms, *, ratio, gbps=None, tflops=None, status="timed"):
    timed = status == "timed"
    return {
        "name": name,
        "status": status,
        "reason": None if timed else "not installed",
        "correctness": {"passed": timed, "max_abs_error": 0.0 if timed else None},
        "median_ms": median_ms if timed else None,
        "min_ms": median_ms * 0.9 if timed else None,
        "max_ms": median_ms * 1.2 if timed else None,
        "logical_gbps": gbps,
        "tflops": tflops,
        "ratio_vs_eager": ratio,
    }


def _report(triton_ms=0.05) -> dict:
    return {
        "schema_version": 2,
        "settings": {"timing": "graph", "cache": "warm", "samples": 9, "visits": 3},
        "environment": {"gpu_name": "Test GPU"},
        "cases": [
            {"op": "softmax", "shape": [64, 128], "dtype": "float16", "eager_variant": "torch",
             "variants": [_variant("torch", 0.1, ratio=1.0, gbps=1000.0),
                          _variant("compile", 0.08, ratio=1.25, gbps=1250.0),
                          _variant("triton", triton_ms, ratio=0.1 / triton_ms,
                                   gbps=50.0 / triton_ms),
                          _variant("liger", 0.0, ratio=None, status="skipped")]},
            {"op": "softmax", "shape": [8, 8], "dtype": "float16", "eager_variant": "torch",
             "variants": [_variant("torch", 0.01, ratio=1.0, gbps=10.0),
                          _variant("triton", 0.004, ratio=2.5, gbps=25.0)]},
            {"op": "matmul", "shape": [16, 16, 16], "dtype": "float16", "eager_variant": "torch",
             "logical_bytes": 1536, "flops": 8192 * 16,  # read in TFLOP/s: 85 FLOPs a byte
             "variants": [_variant("torch", 0.002, ratio=1.0, gbps=3.0, tflops=4.1),
                          _variant("triton", 0.004, ratio=0.5, gbps=1.5, tflops=2.05)]},
        ],
    }  # fmt: skip


def _record() -> dict:
    return {
        "record": "script-output",
        "script": "scripts/validate_kernels.py",
        "recorded_at": "2026-01-01",
        "data": {
            "environment": {"gpu": "Test GPU"},
            "note": "rough medians",
            "cases": [
                {"op": "add", "shape": "8x8", "dtype": "float32", "status": "passed",
                 "max_abs_error": 0.0, "tolerance_used": 0.001, "reference_ms": 0.0021,
                 "baseline": "torch", "baseline_ms": 0.0042, "reference_tbps": 4.0,
                 "baseline_tbps": 2.0, "speedup": 2.0},
            ],
        },
    }  # fmt: skip


HEADER = """---
jupytext:
  formats: ipynb,md:myst
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
    jupytext_version: 1.19.6
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

LESSON = (
    HEADER
    + """
# A lesson

The kernel takes <!-- q: results/r.json softmax 64x128 float16 triton median_us -->50.00<!-- /q -->
µs, or <!-- q: results/r.json softmax 64x128 float16 triton speedup:compile -->1.60<!-- /q -->×
`compile`.

```{code-cell} ipython3
print("a code cell")
```

- the table:

  <!-- quote: results/r.json op=softmax shape=64x128 variants=torch,triton -->
  <!-- /quote -->
"""
)


def _lesson(tmp_path: Path, text: str = LESSON, report: dict | None = None) -> Path:
    (tmp_path / "results").mkdir(exist_ok=True)
    (tmp_path / "results" / "r.json").write_text(json.dumps(report or _report()))
    (tmp_path / "results" / "v.json").write_text(json.dumps(_record()))
    (tmp_path / "lessons").mkdir(exist_ok=True)
    lesson = tmp_path / "lessons" / "01-a-lesson.md"
    lesson.write_text(text)
    jupytext = _jupytext()
    jupytext.write(jupytext.read(lesson), lesson.with_suffix(".ipynb"), fmt="ipynb")
    return lesson


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def _cells(path: Path) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source.strip()) for cell in _jupytext().read(path).cells]


def test_write_fills_the_regions_and_syncs_the_notebook(tmp_path):
    """A new lesson is stale; --write fills it, keeps the notebook paired; then --check passes."""
    lesson = _lesson(tmp_path)
    check = _run("--check", "--root", tmp_path)
    assert check.returncode == 1
    table = _line(LESSON, "<!-- quote:")
    assert check.stdout.startswith(f"lessons/01-a-lesson.md:{table}: quote results/r.json")
    assert "1 stale quote(s)" in check.stdout  # the two figures in prose are right already

    written = _run("--write", "--root", tmp_path)
    assert written.returncode == 0, written.stderr
    text = lesson.read_text()
    assert "| softmax 64x128 float16 | torch | 100.00 | 90.00–120.00 | 1000.0 | 1.00× |" in text
    assert "|  | triton | 50.00 | 45.00–60.00 | 1000.0 | 2.00× |" in text
    assert "  *From `results/r.json`: Test GPU, graph timing, warm cache" in text  # indented
    assert "compile" not in text.split("<!-- quote:")[1]  # variants= chose the rows
    assert _cells(lesson) == _cells(lesson.with_suffix(".ipynb"))
    assert _run("--check", "--root", tmp_path).returncode == 0


def test_check_lists_a_region_a_new_report_left_stale(tmp_path):
    """A re-recorded report (the kernel got faster) makes --check fail, naming file:line."""
    lesson = _lesson(tmp_path)
    assert _run("--write", "--root", tmp_path).returncode == 0
    (tmp_path / "results" / "r.json").write_text(json.dumps(_report(triton_ms=0.04)))
    check = _run("--check", "--root", tmp_path)
    assert check.returncode == 1
    figure, table = _line(LESSON, "triton median_us"), _line(LESSON, "<!-- quote:")
    assert (f"lessons/01-a-lesson.md:{figure}: results/r.json softmax 64x128 float16 triton "
            "median_us: expected '40.00', found '50.00'") in check.stdout  # fmt: skip
    assert "speedup:compile: expected '2.00', found '1.60'" in check.stdout
    assert f"lessons/01-a-lesson.md:{table}: quote results/r.json" in check.stdout
    assert "3 stale quote(s)" in check.stdout
    before = lesson.read_text()
    assert _run("--write", "--root", tmp_path).returncode == 0
    assert lesson.read_text() != before
    assert "median_us -->40.00<!-- /q -->\nµs, or <!-- q:" in lesson.read_text()  # text kept
    assert _run("--check", "--root", tmp_path).returncode == 0


@pytest.mark.parametrize(
    "marker, message",
    [
        ("It <!-- q: results/missing.json softmax 64x128 float16 triton median_us -->1<!-- /q -->",
         "unknown file results/missing.json"),
        ("It is <!-- q: results/r.json softmax 1x1 float16 triton median_us -->1<!-- /q -->",
         "no case softmax 1x1 float16"),
        ("It is <!-- q: results/r.json softmax 64x128 float16 nope median_us -->1<!-- /q -->",
         "has no variant nope"),
        ("It is <!-- q: results/r.json softmax 64x128 float16 triton speed -->1<!-- /q -->",
         "unknown field 'speed'"),
        ("It is <!-- q: results/r.json softmax 64x128 float16 liger median_us -->1<!-- /q -->",
         "liger has no median_us (skipped)"),
        ("It is <!-- q: results/r.json softmax 64x128 float16 triton median_us -->1",
         "needs its <!-- /q -->"),
        ("<!-- quote: results/r.json op=softmax -->", "without its <!-- /quote -->"),
        ("* <!-- q: results/r.json softmax 8x8 float16 triton ratio -->2.50<!-- /q -->",
         "must follow text on its line"),
        ("<!-- quote: results/r.json colour=red -->\n<!-- /quote -->", "bad quote option"),
        ("It is <!-- q: results/r.json softmax * float16 triton gbps>=100 -->met<!-- /q -->",
         "a target needs one case"),
    ],
)  # fmt: skip
def test_a_bad_marker_is_exit_2_and_nothing_is_written(tmp_path, marker, message):
    """One line on stderr, exit 2, and neither the lesson nor its notebook touched, although
    the lesson's good markers are stale."""
    lesson = _lesson(tmp_path, LESSON + "\n" + marker + "\n")
    notebook = lesson.with_suffix(".ipynb")
    before, notebook_before = lesson.read_bytes(), notebook.read_bytes()
    for mode in ("--write", "--check"):
        result = _run(mode, "--root", tmp_path)
        assert result.returncode == 2, (mode, result.stdout, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("quote_reports: lessons/01-a-lesson.md:")
        assert message in result.stderr
        assert "Traceback" not in result.stderr
    assert lesson.read_bytes() == before
    assert notebook.read_bytes() == notebook_before
    assert not [p.name for p in lesson.parent.iterdir() if p.name.startswith(".")]


# --- the renderer, directly -------------------------------------------------------------------


@pytest.fixture
def sources(tmp_path):
    _lesson(tmp_path)
    return quote_reports.Sources(tmp_path)


@pytest.mark.parametrize(
    "args, text",
    [
        ("results/r.json softmax 64x128 float16 triton median_us", "50.00"),
        ("results/r.json softmax 64x128 float16 triton median_us .0f", "50"),
        ("results/r.json softmax 64x128 float16 triton median_ms", "0.0500"),
        ("results/r.json softmax 64x128 float16 triton range_us", "45.00–60.00"),
        ("results/r.json softmax 64x128 float16 triton gbps", "1000.0"),
        ("results/r.json softmax 64x128 float16 triton tbps", "1.00"),
        ("results/r.json softmax 64x128 float16 triton ratio", "2.00"),
        ("results/r.json softmax 64x128 float16 triton max_abs_error", "0"),
        ("results/r.json softmax 64x128 float16 triton speedup:compile", "1.60"),
        ("results/r.json softmax 64x128 float16 triton speedup:compile>=1.5", "met"),
        ("results/r.json softmax 64x128 float16 triton speedup:compile>=1.61", "**missed**"),
        ("results/r.json softmax 64x128 float16 triton median_us<=50", "met"),
        ("results/r.json softmax 64x128 float16 triton gbps@1100", "9.1 % below"),
        ("results/r.json softmax 64x128 float16 triton gbps@800", "25.0 % above"),
        ("results/r.json softmax * float16 triton ratio", "2.00–2.50"),
        ("results/r.json softmax,matmul * float16 torch ratio", "1.00"),
        ("results/r.json matmul 16x16x16 float16 triton tflops", "2.0"),
        ("results/v.json add 8x8 float32 triton median_ms", "0.0021"),
        ("results/v.json add 8x8 float32 torch gbps", "2000.0"),
        ("results/v.json add 8x8 float32 triton ratio", "2.00"),
        ("results/v.json add 8x8 float32 triton speedup:baseline", "2.00"),
        ("results/v.json add 8x8 float32 reference tolerance_used", "0.001"),
    ],
)  # fmt: skip
def test_inline_figures_are_formatted_deterministically(sources, args, text):
    assert quote_reports.render_inline(args, sources) == text


def test_a_record_table_and_a_mixed_rate_table(sources):
    record = quote_reports.render_block("results/v.json", "", sources)
    assert record[0] == "" and record[-1] == ""
    assert "| add 8x8 float32 | passed | 0.0021 | 4.00 | torch | 0.0042 | 2.00 | 2.00 |" in record
    note = "*From `results/v.json` (`scripts/validate_kernels.py`, recorded 2026-01-01, Test GPU)"
    assert any(line.startswith(f"{note}: rough medians") for line in record)
    mixed = quote_reports.render_block(
        "results/r.json cases=matmul/16x16x16/float16,softmax/8x8/float16", "  ", sources
    )
    assert mixed[1].startswith("  | case | variant | median µs | min–max µs | rate | vs eager |")
    matmul = "  | matmul 16x16x16 float16 | torch | 2.00 | 1.80–2.40 | 4.1 TFLOP/s | 1.00× |"
    assert mixed[3] == matmul
    assert mixed[5] == "  | softmax 8x8 float16 | torch | 10.00 | 9.00–12.00 | 10.0 GB/s | 1.00× |"
    skipped = quote_reports.render_block("results/r.json op=softmax shape=64x128", "", sources)
    assert "|  | liger | skipped: not installed | - | - | - |" in skipped


def test_a_bare_markdown_page_is_written_without_a_notebook(tmp_path):
    """case-study.md is not paired: --write changes it alone."""
    _lesson(tmp_path)
    page = tmp_path / "lessons" / "case-study.md"
    page.write_text("x <!-- q: results/r.json softmax 8x8 float16 triton ratio -->?<!-- /q -->\n")
    assert _run("--write", "--root", tmp_path, page).returncode == 0
    assert page.read_text() == (
        "x <!-- q: results/r.json softmax 8x8 float16 triton ratio -->2.50<!-- /q -->\n"
    )
    assert not page.with_suffix(".ipynb").exists()


# --- figures a lesson states outside a marker -------------------------------------------------

PROSE = (
    HEADER
    + """
# A lesson

The recorded run (`results/r.json`) has the kernel at {figure} µs, the eager softmax at
0.1000 ms and `compile` at 1250.0 GB/s; three times the kernel's time would be {tripled} µs{note}.

| case | median µs |
|---|---:|
| softmax 64x128 float16 | {cell} µs |

The log, `results/run.log`:

```text
softmax 64x128 float16  triton  {logged}
```
"""
)


@pytest.mark.parametrize(
    "values, flagged",
    [
        ({}, []),
        ({"figure": "51.00"}, ["51.00 µs"]),  # a wrong figure next to its report
        ({"note": ""}, ["150.00 µs"]),  # a computed figure must say it is one
        ({"cell": "50.10"}, ["50.10 µs"]),  # a table takes the files its section names
        ({"logged": "50.10"}, ["50.10"]),  # an excerpt of a log must be in the log
    ],
)  # fmt: skip
def test_a_figure_outside_a_marker_must_be_held_by_the_file_it_cites(tmp_path, values, flagged):
    """--check fails, naming file:line, on a figure no cited file holds; --write still writes
    the markers and lists the same figures."""
    fields = {"figure": "50.00", "tripled": "150.00", "cell": "50.00", "logged": "50.00",
              "note": " <!-- unchecked: computed here -->", **values}  # fmt: skip
    text = PROSE.format(**fields)
    lesson = _lesson(tmp_path, text)
    (tmp_path / "results" / "run.log").write_text("softmax 64x128 float16  triton  50.00\n")
    check = _run("--check", "--root", tmp_path)
    listed = [line for line in check.stdout.splitlines() if "is held by none" in line]
    assert [line.split(": ")[1].split(" is held")[0] for line in listed] == flagged, check.stdout
    assert check.returncode == (1 if flagged else 0), check.stdout + check.stderr
    for line, figure in zip(listed, flagged, strict=True):
        number = _line(text, figure.split()[0])
        assert line.startswith(f"lessons/{lesson.name}:{number}: {figure} "), line
    written = _run("--write", "--root", tmp_path)
    assert written.returncode == 0, written.stderr
    assert len([line for line in written.stdout.splitlines() if "is held by none" in line]) == len(
        flagged
    )


def test_a_figure_in_a_marker_or_a_code_span_or_without_a_citation_is_not_read(tmp_path):
    text = HEADER + (
        "\nThe kernel takes <!-- q: results/r.json softmax 64x128 float16 triton median_us -->"
        "50.00<!-- /q --> µs in `results/r.json` (`kernel-bench` printed `7.77 µs`).\n\n"
        "A made-up 9.99 µs, in a paragraph that cites no results file.\n"
    )
    _lesson(tmp_path, text)
    check = _run("--check", "--root", tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_lessons_state_no_figure_their_reports_do_not_hold():
    """The rule on the repository's lessons: every unmarked figure next to a results file is
    one that file holds (the first test runs the same check; this one names the rule)."""
    held = quote_reports.Held(ROOT)
    found = [
        str(item)
        for path in sorted((ROOT / "lessons").glob("*.md"))
        for item in quote_reports.unquoted(path.read_text(), f"lessons/{path.name}", held)
    ]
    assert not found, "\n".join(found)


# --- figures of earlier code ------------------------------------------------------------------


@pytest.mark.parametrize(
    "card, said, passes",
    [
        ("h200", "", False),  # recorded before the op definitions moved: earlier code
        ("h200", " They are figures of earlier code. <!-- earlier-code -->", True),
        ("h100", "", True),  # the same sweep on the current code
    ],
)  # fmt: skip
def test_a_quote_of_earlier_code_must_say_so(tmp_path, card, said, passes):
    """A page quoting a case whose code has changed since it was measured (per case,
    ``learning.report.binding``) fails --check until it says so in words, marked."""
    page = tmp_path / "page.md"
    page.write_text(f"The add took <!-- q: results/{card}/all.json add 16384x4096 float16 triton "
                    f"median_us -->?<!-- /q --> µs.{said}\n")  # fmt: skip
    assert _run("--write", "--root", ROOT, page).returncode == 0
    checked = _run("--check", "--root", ROOT, page)
    assert (checked.returncode == 0) == passes, checked.stdout + checked.stderr
    if not passes:
        assert "measured on code that has changed since" in checked.stdout
        assert f"results/{card}/all.json add 16384x4096 float16" in checked.stdout
