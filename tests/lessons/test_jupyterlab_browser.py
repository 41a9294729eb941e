"""Can a learner open a lesson in JupyterLab, run a cell and see its output, in a real browser?

The test starts this environment's JupyterLab on loopback (a free port, a random token, no
browser of its own), opens a lesson in headless Chromium through Playwright, runs the lesson's
code cells up to the first one that prints, with a click and Shift+Enter as a learner would, and
checks that the output shown is what the kernel printed (the same cells run by nbclient give the
expected text). A screenshot is saved under the test's tmp folder, and also in
`$LESSON_SCREENSHOT_DIR` when that is set.

It needs Debian's `chromium` (`apt-get install chromium`; Playwright's own browser download is
not used) and is skipped, saying so, when `/usr/bin/chromium` is missing.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

# the course extra (pip install -e ".[course]"); without it this test is skipped
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
LESSON = "01-tensors-and-bytes.ipynb"  # runs on a CPU in seconds
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_S = 60
CELL_LIMIT_MS = 60_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason=f"{CHROMIUM} is missing: `apt-get install chromium` enables this browser test "
        "(an optional system package; see the README)",
    ),
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(home: Path) -> dict[str, str]:
    """The server's environment: kernels on the CPU, and every Jupyter state file under tmp."""
    environment = dict(os.environ)
    environment.update(
        TRITON_INTERPRET="1",
        CUDA_VISIBLE_DEVICES="",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"),
        IPYTHONDIR=str(home / "ipython"),
    )
    return environment


class Lab:
    def __init__(self, url: str, token: str, root: Path):
        self.url, self.token, self.root = url, token, root

    def request(self, path: str, method: str = "GET") -> int:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of lessons/, up and answering, shut down cleanly afterwards.

    A copy, so that the notebook JupyterLab saves is never the one in the repository; the
    lesson imports the course (`learning`, `reference`) from this environment's install.
    """
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "course"
    shutil.copytree(ROOT / "lessons", root / "lessons")
    # No "get notified about Jupyter news?" pop-up over the notebook in the screenshot.
    notification = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}\n')
    port, token = _free_port(), secrets.token_hex(16)
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            *(["--allow-root"] if os.geteuid() == 0 else []),  # CI containers run as root
        ],
        cwd=root,
        env=_environment(home),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root)

    def server_log() -> str:
        log.flush()
        return (home / "server.log").read_text()[-4000:]

    deadline = time.monotonic() + SERVER_START_S
    while True:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited with {server.returncode}:\n{server_log()}")
        try:
            if lab.request("/api/status") == 200:
                break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{server_log()}")
        time.sleep(0.3)
    try:
        yield lab
    finally:
        try:  # the server's own shutdown stops its kernels too
            lab.request("/api/shutdown", method="POST")
            server.wait(timeout=20)
        except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()


def _cells_to_run(notebook: nbformat.NotebookNode) -> list[int]:
    """Indexes of the code cells from the top through the first one that prints."""
    code = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for position, index in enumerate(code):
        if "print(" in notebook.cells[index].source:
            return code[: position + 1]
    pytest.fail(f"{LESSON} has no code cell that prints; pick another lesson for this test")


def _expected_text(notebook: nbformat.NotebookNode, cells: list[int]) -> str:
    """What the last of ``cells`` prints when the same cells run without a browser."""
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
    return "".join(o.get("text", "") for o in executed.cells[-1].outputs if "text" in o)


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _run_cell(cell) -> None:
    """Focus the cell's editor, wait until the cell is the active one, press Shift+Enter."""
    from playwright.sync_api import expect

    cell.locator(".jp-InputArea-editor").click()
    expect(cell).to_have_class(re.compile(r"\bjp-mod-active\b"))
    cell.page.keyboard.press("Shift+Enter")


def test_a_lesson_cell_runs_in_jupyterlab(lab: Lab, tmp_path: Path):
    """Does JupyterLab open the lesson, run its cells on Shift+Enter and show the output?"""
    from playwright.sync_api import expect, sync_playwright

    notebook = nbformat.read(lab.root / "lessons" / LESSON, as_version=4)
    cells = _cells_to_run(notebook)
    expected = _expected_text(notebook, cells)
    assert expected.strip(), f"cell {cells[-1]} of {LESSON} printed nothing under nbclient"

    screenshot = tmp_path / f"jupyterlab-{Path(LESSON).stem}.png"
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(CELL_LIMIT_MS)
            page.goto(f"{lab.url}/lab/tree/lessons/{LESSON}?reset&token={lab.token}")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            idle = page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first
            idle.wait_for()  # the kernel has started and answers

            all_cells = page.locator(".jp-Notebook .jp-Cell")
            for count, index in enumerate(cells, start=1):
                cell = all_cells.nth(index)
                prompt = cell.locator(".jp-InputPrompt")
                cell.scroll_into_view_if_needed()
                for _ in range(3):
                    _run_cell(cell)
                    # The prompt turns from [ ] through [*] to [count] when the kernel has
                    # replied. A Shift+Enter sent before the editor took the focus runs
                    # nothing and leaves it at [ ]: the kernel is idle, so a cell that runs
                    # shows [*] at once, and sending it again is safe.
                    try:
                        expect(prompt).not_to_have_text(re.compile(r"^\[ \]"), timeout=5_000)
                        break
                    except AssertionError:
                        continue
                expect(prompt).to_contain_text(f"[{count}]", timeout=CELL_LIMIT_MS)
                idle.wait_for()

            last = all_cells.nth(cells[-1])
            output = last.locator(".jp-OutputArea-output").first
            output.wait_for()
            shown = last.locator(".jp-OutputArea").inner_text()
            last.scroll_into_view_if_needed()
            page.screenshot(path=str(screenshot))
        finally:
            context.close()

    if os.environ.get("LESSON_SCREENSHOT_DIR"):
        keep = Path(os.environ["LESSON_SCREENSHOT_DIR"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy2(screenshot, keep / screenshot.name)
    assert "Traceback" not in shown, f"the cell failed:\n{shown}"
    assert _normalized(expected) in _normalized(shown), (
        f"JupyterLab shows\n{shown}\nbut the kernel printed\n{expected}"
    )
    assert screenshot.stat().st_size > 10_000, "the screenshot looks empty"
