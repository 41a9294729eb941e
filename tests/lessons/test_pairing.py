"""Is every lesson's notebook the faithful, output-free pair of its markdown source?

`lessons/NN-slug.md` (MyST) is the source; `jupytext --sync` makes `lessons/NN-slug.ipynb`.
Other markdown pages under lessons/ (a glossary, a schedule) are paired only if they say so in a
jupytext header.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# the course extra (pip install -e ".[course]"); without it these tests are skipped
jupytext = pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    path
    for path in (ROOT / "lessons").glob("*.md")
    if path.name[:2].isdigit() or path.read_text(encoding="utf-8").startswith("---\njupytext:")
)


def _cells(notebook) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


@pytest.mark.parametrize("source", SOURCES, ids=[path.stem for path in SOURCES])
def test_the_notebook_has_the_same_cells_as_its_source(source: Path):
    """Does the .ipynb exist and hold the .md's cells, in order, with the same sources?"""
    notebook = source.with_suffix(".ipynb")
    assert notebook.is_file(), f"run `jupytext --sync {source.relative_to(ROOT)}`"
    from_markdown = jupytext.read(source)
    from_notebook = jupytext.read(notebook)
    assert _cells(from_markdown) == _cells(from_notebook), (
        f"{notebook.name} differs from {source.name}: run `jupytext --sync lessons/{source.name}`"
    )


@pytest.mark.parametrize("source", SOURCES, ids=[path.stem for path in SOURCES])
def test_the_source_is_paired_as_myst(source: Path):
    """Does the markdown declare the ipynb,md:myst pairing in its jupytext header?"""
    formats = jupytext.read(source).metadata.get("jupytext", {}).get("formats", "")
    assert set(formats.split(",")) == {"ipynb", "md:myst"}


@pytest.mark.parametrize("source", SOURCES, ids=[path.stem for path in SOURCES])
def test_the_notebook_carries_no_outputs(source: Path):
    """Is the committed notebook free of outputs and execution counts?"""
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"cell {index} of {source.stem}.ipynb has outputs"
            assert cell.execution_count is None, f"cell {index} has an execution count"
