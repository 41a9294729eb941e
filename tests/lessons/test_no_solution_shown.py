"""Does any lesson show a reference solution before the learner has written it?

A lesson may show the spec, the exercise's skeleton (its TODOs) and the learner's own code,
never the lines `scripts/make_exercises.py` strips from `reference/` (`solution_regions.py`
reads them with that script's parser). Each notebook runs as `test_notebooks_run.py` runs a
lesson (on a CPU, where its `gpu` cells skip themselves), with IPython's pager shown as
output, so what `%psource`, `%pinfo2` and `??` page is there too; then every output of every
code cell, as the learner would see it (printed text, displayed text and HTML, tracebacks), is
searched for a run of a solution region's lines. Whatever showed it, `inspect.getsource`, a
pager, a file read or a shell `cat`, the region is named with the cell.

The lessons themselves are searched in `test_notebooks_run.py`, on the one run of each notebook
that test makes (with the pager shown as output, as here). The failing cases are the lessons'
own earlier cells (the reference kernels' source printed
in full and in part) and the other ways of showing source, run as a small notebook below.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from solution_regions import (
    ROOT,
    html_text,
    make_exercises,
    regions,
    shown_regions,
    without_colours,
)
from test_notebooks_run import (
    KERNEL_NAME,
    NOTEBOOK_BACKSTOP_S,
    PAGER_AS_OUTPUT,
    kernel_environment,
)

nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient



def _shown(output) -> str:
    """One output of a code cell, as text: what a reader of the notebook sees of it."""
    if output.output_type == "stream":
        text = output.text
    elif output.output_type == "error":
        text = "\n".join(output.traceback)
    else:
        data = output.get("data", {})
        text = "\n".join(
            html_text(value) if kind == "text/html" else value
            for kind, value in data.items()
            if isinstance(value, str)
        )
    return without_colours(text)  # the pager's and the traceback's syntax colours


def solutions_shown(notebook, cwd: Path) -> dict[int, list]:
    """Run ``notebook`` in a fresh kernel started in ``cwd``; the regions each code cell shows."""
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL_NAME,
        timeout=NOTEBOOK_BACKSTOP_S,
        startup_timeout=60,
        shutdown_kernel="immediate",
        extra_arguments=[PAGER_AS_OUTPUT],
        allow_errors=True,  # a traceback is shown too; test_notebooks_run fails the error
        resources={"metadata": {"path": str(cwd)}},
    )
    return solutions_in(client.execute(env=kernel_environment()))


def solutions_in(executed) -> dict[int, list]:
    """The regions each code cell of an executed notebook shows, by cell index."""
    found = {}
    for index, cell in enumerate(executed.cells):
        if cell.cell_type == "code":
            shown = shown_regions("\n".join(_shown(output) for output in cell.outputs))
            if shown:
                found[index] = shown
    return found


# --------------------------------------------------------------------------- the matching


def test_every_region_can_be_caught():
    """Does each region hold a run of lines that the learner's copy lacks, so showing it can be
    told from showing the skeleton? (A region that is the engine's own spec written out again,
    such as ``gemm_flops``'s ``2 * m * n * k``, gives nothing away and is exempt.)"""
    hidden = [str(region) for region in regions() if not region.runs and not region.spec]
    assert not hidden, f"these regions repeat code the learners' copies hold: {hidden}"


def test_a_reference_file_shows_each_of_its_regions():
    """Does the text of each reference file show every one of its regions, and one run of a
    region's lines, indented anew, that region?"""
    for path in sorted({region.path for region in regions()}):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert set(shown_regions(text)) == {r for r in regions() if r.path == path and r.runs}, path
    for region in (region for region in regions() if region.runs):
        run = "\n".join(sorted(region.runs)[0])
        assert region in shown_regions(textwrap.indent(run, "        ")), region


def test_the_learners_copies_show_no_region():
    """Does no file of exercises/ as the script makes it (skeletons and TODOs) show a region?"""
    for path, content in make_exercises.render(ROOT).items():
        if path.endswith(".py"):
            assert shown_regions(content.decode("utf-8")) == [], f"{path} shows a solution"


# --------------------------------------------------------------------------- the ways to show

PREAMBLE = """\
import importlib
import inspect
from pathlib import Path

from learning import runtime
add = importlib.import_module("reference.kernels.add")
matmul = importlib.import_module("reference.kernels.matmul")
skeleton = importlib.import_module("exercises.kernels.softmax")
"""
# (source, shows a solution?): the first two are lessons 10's and 11's cells as they were.
CELLS = [
    (
        'IMPLEMENTATION = "reference"  # "exercises" once `python -m learning.check reductions` '
        "/ `softmax` pass\n"
        'reductions = importlib.import_module(f"{IMPLEMENTATION}.kernels.reductions")\n'
        'softmax = importlib.import_module(f"{IMPLEMENTATION}.kernels.softmax")\n'
        'print(f"using {IMPLEMENTATION}/kernels/ on {runtime.backend()}\\n")\n'
        "print(inspect.getsource(softmax._softmax_fwd_kernel.fn))",
        True,
    ),
    (
        'IMPLEMENTATION = "reference"  # "exercises" once `python -m learning.check rmsnorm` '
        "passes\n"
        'rmsnorm = importlib.import_module(f"{IMPLEMENTATION}.kernels.rmsnorm")\n'
        'source = inspect.getsource(rmsnorm._rmsnorm_fwd_kernel.fn)\n'
        'print(source[: source.index("    else:")])',
        True,
    ),
    ("%psource matmul.matmul_bwd", True),
    ("matmul.matmul_fwd??", True),
    ('print(open("reference/kernels/add.py").read())', True),
    ('print(Path("reference/measurement.py").read_text()[:3000])', True),
    ("!cat reference/kernels/reductions.py", True),
    ("from IPython.display import Code\nCode(filename='reference/kernels/add.py')", True),
    ("print(inspect.getsource(skeleton._softmax_fwd_kernel.fn))", False),
    ("print(inspect.getsource(add.choose_block))", False),
    ("%psource skeleton.softmax_fwd", False),
]


@pytest.mark.slow
@pytest.mark.timeout(NOTEBOOK_BACKSTOP_S)
def test_each_way_of_showing_a_solution_is_caught():
    """Is a cell caught when it prints, pages, reads, cats or displays a solution region, and
    not when it shows the skeleton or code without a solution?"""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(PREAMBLE)]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source, _ in CELLS]
    found = solutions_shown(notebook, cwd=ROOT)
    expected = {index for index, (_, shows) in enumerate(CELLS, start=1) if shows}
    assert set(found) == expected, {
        CELLS[index - 1][0].splitlines()[-1]: [str(r) for r in found.get(index, [])]
        for index in expected ^ set(found)
    }
