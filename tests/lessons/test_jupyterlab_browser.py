"""Can a learner open lessons in JupyterLab, run their cells and see the output, in a browser?

The test starts this environment's JupyterLab as the README tells a learner to (the course's
`.jupyter/` on its config path; `course_lab.py`), on loopback with a free port, a random token
and no browser of its own, and drives headless Chromium through Playwright. The file browser
must list each lesson of the manifest once, as its notebook, and show no nbgrader menu. In two
lessons it runs the first three code cells, with a click and Shift+Enter as a learner would,
and checks that each output shown is what the kernel printed (the same cells run by nbclient
give the expected text). Screenshots are saved under the test's tmp folder, and also in
`$LESSON_SCREENSHOT_DIR` when that is set.

It needs Debian's `chromium` (`apt-get install chromium`; Playwright's own browser download is
not used) and is skipped, saying so, when `/usr/bin/chromium` is missing.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from course_lab import ROOT, Lab, ServerFailed, running_lab

from learning import manifest as manifest_module

# the course extra (pip install -e ".[course]"); without it this test is skipped
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

CHROMIUM = Path("/usr/bin/chromium")
LESSONS = ["01-tensors-and-bytes.ipynb", "09-first-triton-kernels.ipynb"]  # seconds on a CPU
CELLS_RUN = 3  # the first code cells of each
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CELL_LIMIT_MS = 60_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason=f"{CHROMIUM} is missing: `apt-get install chromium` enables this browser test "
        "(an optional system package; see the README)",
    ),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab with the course's configuration, serving a copy of the course."""
    try:
        with running_lab(tmp_path_factory.mktemp("jupyterlab")) as lab:
            yield lab
    except ServerFailed as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    """One headless Chromium page for the module's tests."""
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(CELL_LIMIT_MS)
            yield page
        finally:
            context.close()


def _keep(screenshot: Path) -> None:
    if os.environ.get("LESSON_SCREENSHOT_DIR"):
        keep = Path(os.environ["LESSON_SCREENSHOT_DIR"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy2(screenshot, keep / screenshot.name)


def _code_cells(notebook: nbformat.NotebookNode) -> list[int]:
    """Indexes of the first CELLS_RUN code cells."""
    return [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"][:CELLS_RUN]


def _expected_texts(notebook: nbformat.NotebookNode, cells: list[int]) -> list[str]:
    """What each of ``cells`` prints when the same cells run without a browser."""
    head = nbformat.v4.new_notebook(metadata=notebook.metadata)
    head.cells = [notebook.cells[i] for i in cells]
    client = NotebookClient(
        head,
        kernel_name="python3",
        timeout=CELL_LIMIT_MS // 1000,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(ROOT / "lessons")}},
    )
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    executed = client.execute(env=env)
    return ["".join(o.get("text", "") for o in cell.outputs) for cell in executed.cells]


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _run_cell(cell) -> None:
    """Focus the cell's editor, wait until the cell is the active one, press Shift+Enter."""
    from playwright.sync_api import expect

    cell.locator(".jp-InputArea-editor").click()
    expect(cell).to_have_class(re.compile(r"\bjp-mod-active\b"))
    cell.page.keyboard.press("Shift+Enter")


def test_the_first_screen_is_the_first_lesson(lab: Lab, browser_page, tmp_path: Path):
    """Does the address a learner opens show the first lesson, beside a file browser that lists
    the learner's folders and not the course's own?"""
    from playwright.sync_api import expect

    first = next(iter(manifest_module.load().lessons))
    (lab.root / "tests").mkdir(exist_ok=True)  # a maintainer's folder the browser must leave out
    page = browser_page
    page.goto(f"{lab.url}/?token={lab.token}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
    expect(tab).to_contain_text(f"{first}.ipynb")
    page.locator(".jp-BreadCrumbs-home").first.click()  # the browser's root folder
    items = page.locator(".jp-DirListing-content .jp-DirListing-itemText")
    page.locator('.jp-DirListing-itemText:has-text("journals")').first.wait_for()
    shown = [text.strip() for text in items.all_inner_texts()]
    screenshot = tmp_path / "jupyterlab-first-screen.png"
    page.screenshot(path=str(screenshot))
    _keep(screenshot)
    assert "lessons" in shown and "journals" in shown, shown
    assert "tests" not in shown and "course_manifest.toml" not in shown, shown


def test_the_file_browser_lists_each_lesson_once(lab: Lab, browser_page, tmp_path: Path):
    """Does the file browser show each lesson once, as its notebook, and no nbgrader menu?"""
    page = browser_page
    page.goto(f"{lab.url}/lab/tree/lessons?reset&token={lab.token}")
    items = page.locator(".jp-DirListing-content .jp-DirListing-itemText")
    items.first.wait_for()
    page.locator('.jp-DirListing-itemText:has-text("01-tensors-and-bytes")').first.wait_for()
    shown = [text.strip() for text in items.all_inner_texts()]
    menus = [text.strip() for text in page.locator(".lm-MenuBar-itemLabel").all_inner_texts()]
    screenshot = tmp_path / "jupyterlab-lessons-folder.png"
    page.screenshot(path=str(screenshot))
    _keep(screenshot)
    for key in manifest_module.load().lessons:
        entries = [name for name in shown if name.rsplit(".", 1)[0] == key]
        assert entries == [f"{key}.ipynb"], f"the file browser shows lesson {key} as {entries}"
    assert "File" in menus, f"no menu bar read: {menus}"
    assert not [menu for menu in menus if "nbgrader" in menu.lower()], menus


@pytest.mark.parametrize("lesson", LESSONS, ids=[Path(name).stem for name in LESSONS])
def test_a_lessons_first_cells_run_in_jupyterlab(lab: Lab, browser_page, lesson, tmp_path: Path):
    """Does JupyterLab open the lesson, run its first cells on Shift+Enter and show the output?"""
    from playwright.sync_api import expect

    notebook = nbformat.read(lab.root / "lessons" / lesson, as_version=4)
    cells = _code_cells(notebook)
    expected = _expected_texts(notebook, cells)
    assert any(text.strip() for text in expected), f"{lesson}'s first cells print nothing"

    page = browser_page
    screenshot = tmp_path / f"jupyterlab-{Path(lesson).stem}.png"
    page.goto(f"{lab.url}/lab/tree/lessons/{lesson}?reset&token={lab.token}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    idle = page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first
    idle.wait_for()  # the kernel has started and answers

    all_cells = page.locator(".jp-Notebook .jp-Cell")
    shown = []
    for count, index in enumerate(cells, start=1):
        cell = all_cells.nth(index)
        prompt = cell.locator(".jp-InputPrompt")
        cell.scroll_into_view_if_needed()
        for _ in range(3):
            _run_cell(cell)
            # The prompt turns from [ ] through [*] to [count] when the kernel has replied. A
            # Shift+Enter sent before the editor took the focus runs nothing and leaves it at
            # [ ]: the kernel is idle, so a cell that runs shows [*] at once, and sending it
            # again is safe.
            try:
                expect(prompt).not_to_have_text(re.compile(r"^\[ \]"), timeout=5_000)
                break
            except AssertionError:
                continue
        expect(prompt).to_contain_text(f"[{count}]", timeout=CELL_LIMIT_MS)
        idle.wait_for()
        if expected[count - 1].strip():
            cell.locator(".jp-OutputArea-output").first.wait_for()
        shown.append(cell.locator(".jp-OutputArea").inner_text())
    all_cells.nth(cells[-1]).scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot))
    _keep(screenshot)

    for index, text, printed in zip(cells, shown, expected, strict=True):
        assert "Traceback" not in text, f"cell {index} of {lesson} failed:\n{text}"
        assert _normalized(printed) in _normalized(text), (
            f"JupyterLab shows cell {index} of {lesson} as\n{text}\nbut the kernel printed\n"
            f"{printed}"
        )
    assert screenshot.stat().st_size > 10_000, "the screenshot looks empty"
