"""JupyterLab started as the README tells a learner to start it, on loopback, for the tests.

`running_lab(home)` copies the course folder's learner-facing parts (lessons/, journals/, the
manifest) under ``home`` (so a notebook JupyterLab saves is never the repository's) and starts
this environment's JupyterLab there: a free port, a random token, no browser of its own, every
Jupyter state file under ``home``. ``course_config=True`` puts the course's `.jupyter/` on
`JUPYTER_CONFIG_PATH`, as the README's command does; False starts JupyterLab without it, the
case the course's rules must be seen to fail on.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COURSE_CONFIG = ROOT / ".jupyter"  # the README: JUPYTER_CONFIG_PATH=.jupyter .venv/bin/jupyter lab
COPIED = ("lessons", "journals", "course_manifest.toml")
SERVER_START_S = 60
PAGE_CONFIG = re.compile(
    r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', re.DOTALL
)


class ServerFailed(RuntimeError):
    """JupyterLab exited or did not answer; the message ends with its log."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(home: Path, course_config: bool) -> dict[str, str]:
    """The server's environment: kernels on the CPU, and every Jupyter state file under home."""
    environment = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    environment.update(
        TRITON_INTERPRET="1",
        CUDA_VISIBLE_DEVICES="",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"),
        IPYTHONDIR=str(home / "ipython"),
    )
    if course_config:
        environment["JUPYTER_CONFIG_PATH"] = str(COURSE_CONFIG)
    return environment


class Lab:
    """A running JupyterLab: its address, token and the folder it serves."""

    def __init__(self, url: str, token: str, root: Path):
        self.url, self.token, self.root = url, token, root

    def _open(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        return urllib.request.urlopen(request, timeout=10)

    def request(self, path: str, method: str = "GET") -> int:
        with self._open(path, method) as response:
            return response.status

    def listing(self, folder: str) -> list[str]:
        """The names the contents API lists in ``folder``: what the file browser shows."""
        with self._open(f"/api/contents/{urllib.parse.quote(folder)}?content=1") as response:
            model = json.load(response)
        return sorted(entry["name"] for entry in model["content"])

    def first_screen(self) -> str:
        """Where the address a learner opens (the server's root) sends the browser."""

        class Kept(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None  # the redirect is the answer, not the page behind it

        request = urllib.request.Request(
            f"{self.url}/", headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.build_opener(Kept).open(request, timeout=10) as response:
                return urllib.parse.urlsplit(response.url).path
        except urllib.error.HTTPError as error:
            if error.code not in (301, 302, 303, 307, 308):
                raise
            return urllib.parse.urlsplit(error.headers["Location"]).path

    def page_config(self) -> dict:
        """The page config JupyterLab's page hands the front end (its disabled extensions...)."""
        with self._open("/lab") as response:
            page = response.read().decode("utf-8")
        found = PAGE_CONFIG.search(page)
        if found is None:
            raise AssertionError("JupyterLab's page carries no jupyter-config-data")
        return json.loads(html.unescape(found.group(1)))


@contextlib.contextmanager
def running_lab(home: Path, course_config: bool = True) -> Iterator[Lab]:
    """JupyterLab serving a copy of the course under ``home``, shut down cleanly afterwards."""
    root = home / "course"
    for name in COPIED:
        source, target = ROOT / name, root / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    # No "get notified about Jupyter news?" pop-up over the notebook in a screenshot.
    notification = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}\n')
    port, token = _free_port(), secrets.token_hex(16)
    log_path = home / "server.log"
    log = log_path.open("w")
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
        env=_environment(home, course_config),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root)

    def server_log() -> str:
        log.flush()
        return log_path.read_text()[-4000:]

    deadline = time.monotonic() + SERVER_START_S
    try:
        while True:
            if server.poll() is not None:
                raise ServerFailed(f"JupyterLab exited with {server.returncode}:\n{server_log()}")
            try:
                if lab.request("/api/status") == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise ServerFailed(
                    f"JupyterLab did not answer within {SERVER_START_S} s:\n{server_log()}"
                )
            time.sleep(0.3)
        yield lab
    finally:
        try:  # the server's own shutdown stops its kernels too
            if server.poll() is None:
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
