"""Does every lesson notebook run from top to bottom on a CPU, as a learner without a GPU runs it?

Each `lessons/*.ipynb` is executed as it is on disk by a fresh Python kernel of this
interpreter, with Triton's interpreter switched on (`TRITON_INTERPRET=1`) and CUDA hidden. A
code cell tagged `gpu` only means something on a GPU, and goes through `learning.gpu_cell`,
which there runs nothing and prints one line saying what the cell would run and why it did
not: each such cell's output must be those lines alone, and no report they name may have been
written by the run. Each notebook has
`NOTEBOOK_LIMIT_S` seconds in all on the course's reference machine, multiplied by this
machine's pace measured before and after it runs (`learning.check.pace`, as the checker's own
limits are); the lesson's stated minutes are checked against its run time on the reference
machine, the same way. The same run's outputs are searched for any reference
solution region a cell shows (`test_no_solution_shown.py`): a lesson never shows the answer
before the learner writes it.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from stopwatch import Stopwatch  # a wall-clock limit scaled by the machine's pace

from learning import gpu_cell, manifest
from learning.check import pace

# the course extra (pip install -e ".[course]"); without it these tests are skipped
nbformat = pytest.importorskip("nbformat")
NoSuchKernel = pytest.importorskip("jupyter_client.kernelspec").NoSuchKernel
KernelManager = pytest.importorskip("jupyter_client.manager").KernelManager
NotebookClient = pytest.importorskip("nbclient").NotebookClient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from lesson_time import (  # noqa: E402  (what a lesson's time is made of)
    fits,
    kernel_environment,
    reading_minutes,
)

LESSONS = ROOT / "lessons"
NOTEBOOKS = sorted(LESSONS.glob("*.ipynb"))

KERNEL_NAME = "python3"
NOTEBOOK_LIMIT_S = 180  # on the reference machine: the assertion scales it
NOTEBOOK_BACKSTOP_S = NOTEBOOK_LIMIT_S * pace.MAX_SLOWDOWN  # a hung cell, on any machine
PAGER_AS_OUTPUT = "--InteractiveShell.display_page=True"  # %psource, ?? print into the cell

# A data URI of an image, wherever it hides: in markdown, in HTML or in an attachment.
IMAGE_BLOB = re.compile(r"data:image/[a-z0-9.+-]+;base64,", re.IGNORECASE)
# `![alt](path)`, `<img src="path">`, and MyST's {image} and {figure} directives.
IMAGE_REFERENCE = re.compile(
    r"!\[[^\]]*\]\(\s*<?([^)\s>]+)"
    r"|<img[^>]*\bsrc=[\"']([^\"']+)"
    r"|^(?:`{3,}|:{3,})\{(?:image|figure)\}\s+(\S+)",
    re.MULTILINE,
)
# What a skipped gpu cell names as its output: `--output results/local/x.json`, `--log ...`.
NAMED_FILE = re.compile(r"(?:^|\s)(results/local/\S+)")


def gpu_cells(notebook) -> list[int]:
    """The indices of the notebook's code cells tagged `gpu`."""
    tagged = [gpu_cell.TAG in cell.metadata.get("tags", []) for cell in notebook.cells]
    return [index for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and tagged[index]]  # fmt: skip


def skip_problems(executed, started: float) -> list[str]:
    """What is wrong with the executed notebook's `gpu` cells on a machine without a GPU: a
    cell that printed anything but `learning.gpu_cell`'s skip lines (it ran something, or
    failed), or a file one of them names that the run wrote."""
    problems = []
    for index in gpu_cells(executed):
        outputs = executed.cells[index].outputs
        lines = [line for output in outputs if output.output_type == "stream"
                 for line in output.text.splitlines() if line.strip()]  # fmt: skip
        others = [output.output_type for output in outputs if output.output_type != "stream"]
        where = f"gpu cell {index} ({executed.cells[index].source.splitlines()[-1][:60]!r})"
        if not lines or others or not all(line.startswith(gpu_cell.SKIPPED) for line in lines):
            shown = "\n    ".join(lines[:6] + [f"<{kind} output>" for kind in others])
            problems.append(f"{where} did not only say it was skipped:\n    {shown or '(nothing)'}")
            continue
        for line in lines:
            for name in NAMED_FILE.findall(line):
                path = ROOT / name
                if path.exists() and path.stat().st_mtime >= started:
                    problems.append(f"{where} wrote {name}, which it only names: {line}")
    return problems


def test_the_kernel_is_this_interpreter():
    """Will the notebooks run in this environment's Python, with the course's packages?"""
    try:
        command = KernelManager(kernel_name=KERNEL_NAME).format_kernel_cmd()
    except NoSuchKernel:
        pytest.fail(
            f"no Jupyter kernel named {KERNEL_NAME!r}: install ipykernel into this environment "
            "(`pip install -e '.[course]'`)"
        )
    assert Path(command[0]).resolve() == Path(sys.executable).resolve(), (
        f"the {KERNEL_NAME!r} kernel would start {command[0]}, not this interpreter "
        f"{sys.executable}; a kernel spec elsewhere shadows this environment's ipykernel"
    )


@pytest.mark.slow
@pytest.mark.timeout(NOTEBOOK_BACKSTOP_S + 60)  # a backstop behind the limit asserted below
@pytest.mark.parametrize("notebook_path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_the_notebook_runs_on_a_cpu(notebook_path: Path, tmp_path: Path):
    """Does every cell run without an error, within the notebook's time limit, and does the
    lesson fit its stated minutes (reading at 200 words a minute, plus this run)?"""
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL_NAME,
        timeout=NOTEBOOK_BACKSTOP_S,  # per cell; the whole notebook is held to the limit below
        startup_timeout=60,
        shutdown_kernel="immediate",  # a graceful shutdown waits seconds for nothing here
        extra_arguments=[PAGER_AS_OUTPUT],  # what %psource and ?? page shows in the outputs
        # The kernel starts in lessons/, as it does when a learner opens the notebook there.
        resources={"metadata": {"path": str(LESSONS)}},
    )
    started = time.time() - 2  # a file system's mtime may be a second or two coarse
    with Stopwatch() as watch:
        executed = client.execute(env=kernel_environment())
    elapsed = watch.elapsed / watch.slowdown  # seconds of the reference machine
    nbformat.write(executed, tmp_path / f"executed-{notebook_path.name}")

    problems = skip_problems(executed, started)
    assert not problems, f"{notebook_path.name}:\n" + "\n".join(problems)
    assert watch.elapsed <= watch.limit(NOTEBOOK_LIMIT_S), (
        f"{notebook_path.name} {watch.said(NOTEBOOK_LIMIT_S)}. Use smaller shapes or fewer "
        f"samples in its CPU cells, or tag the cells that only make sense on a GPU "
        f"`{gpu_cell.TAG}` (and run them through learning.gpu_cell)."
    )
    skipped = len(gpu_cells(executed))
    stated = next(
        lesson.minutes for lesson in manifest.load().lessons.values()
        if Path(lesson.notebook).name == notebook_path.name
    )  # fmt: skip
    reading = reading_minutes(notebook_path.with_suffix(".md"))
    assert fits(stated, reading, elapsed), (
        f"{notebook_path.name} states {stated} minutes, but reading it at 200 words a minute "
        f"takes {reading:.0f} and its cells {elapsed / 60:.1f} more: shorten it (move history "
        "to the case study or an appendix) or state the minutes it takes "
        "(python scripts/lesson_time.py --run prints the table)"
    )
    from test_no_solution_shown import solutions_in  # the same run, searched for solutions

    found = solutions_in(executed)
    assert not found, f"{notebook_path.name} shows reference solutions:\n" + "\n".join(
        f"  cell {index} ({notebook.cells[index].source.splitlines()[-1][:60]!r}): "
        + ", ".join(map(str, shown))
        for index, shown in found.items()
    )
    print(f"{notebook_path.name}: {watch.elapsed:.1f} s (x{watch.slowdown:.2f} the reference "
          f"machine's pace), {skipped} gpu cell(s) skipped")  # fmt: skip


@pytest.mark.parametrize("notebook_path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_gpu_cell_goes_through_the_gpu_cell_helper(notebook_path: Path):
    """Does every `gpu` cell run its work through `learning.gpu_cell` (which skips it without
    a GPU, saying so, and starts kernel-bench with the notebook's own Python), and start no
    program of its own? The executed run above shows what the cells print; this says, in a
    moment, which cell to fix."""
    notebook = nbformat.read(notebook_path, as_version=4)
    wrong = []
    for index in gpu_cells(notebook):
        source = notebook.cells[index].source
        starts = [word for word in ("subprocess", "os.system", "kernel-bench", "shutil.which")
                  if word in source]  # fmt: skip
        if "gpu_cell." not in source or starts:
            said = f"starts its own program ({', '.join(starts)})" if starts else "never calls it"
            wrong.append(f"cell {index} ({source.splitlines()[-1][:60]!r}) {said}")
    assert not wrong, (
        f"{notebook_path.name}: every cell tagged `{gpu_cell.TAG}` runs through learning.gpu_cell "
        "(bench, script, or `if gpu_cell.on_gpu(...)`):\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize("notebook_path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_the_notebook_carries_no_outputs_or_embedded_images(notebook_path: Path):
    """Is the notebook free of outputs and base64 images, its figures files that exist?

    A figure belongs in a PNG under `lessons/figures/` (made by `scripts/make_figures.py`),
    referenced from the markdown; an embedded blob bloats every diff and cannot be regenerated.
    """
    notebook = nbformat.read(notebook_path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        where = f"{notebook_path.name}, cell {index}"
        if cell.cell_type == "code":
            assert not cell.outputs, f"{where} has outputs: clear them before committing"
            assert cell.execution_count is None, f"{where} has an execution count"
        assert not cell.get("attachments"), (
            f"{where} has attachments: save the image as a file and reference it"
        )
        assert not IMAGE_BLOB.search(cell.source), (
            f"{where} embeds a base64 image: save it as a file and reference it"
        )
        if cell.cell_type != "markdown":
            continue
        for match in IMAGE_REFERENCE.finditer(cell.source):
            target = next(group for group in match.groups() if group)
            if re.match(r"[a-z]+://", target):
                continue
            assert (notebook_path.parent / target).is_file(), (
                f"{where} shows {target}, which is not a file next to the lesson"
            )
