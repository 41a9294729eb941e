"""JupyterLab for the course: each lesson listed once, and no nbgrader buttons for learners.

Read when JupyterLab starts with this folder on its config path, from the course folder:

    JUPYTER_CONFIG_PATH=.jupyter .venv/bin/jupyter lab

(the README's command). It comes before your own `~/.jupyter`, which still applies otherwise.
Beside it, `labconfig/page_config.json` turns off nbgrader's JupyterLab extension: its
assignment-authoring toolbar, formgrader and assignment list are the instructor's (who starts
JupyterLab without this folder, docs/instructor.md); learners grade with `learning.check`.

A lesson is two files, `lessons/NN-slug.md` (the MyST source) and `lessons/NN-slug.ipynb`,
which jupytext keeps in step: saving the notebook writes both. The file browser lists the
notebook alone. `ContentsManager.hide_globs` matches names only, and a journal has its
lesson's name (`journals/NN-slug.md`), so the rule is the pair instead: a `.md` file whose
`.ipynb` lies beside it is left out of a folder's listing. It is still there, and opens by
its path (File > Open from Path).

At the course's root the file browser lists only what the manifest's `[paths] browse` names
(the lessons, the learner's exercises and journals, results, README.md): the course's own
packages, tests and build output stay out of the way, and open by their path too. JupyterLab
opens on the manifest's first lesson, where the README says to start.
"""

from pathlib import Path

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from learning import manifest

COURSE = Path(__file__).resolve().parents[1]


def paired_source(name: str, names: set[str]) -> bool:
    """Is ``name`` the markdown half of a notebook pair among ``names`` (one folder's files)?"""
    return name.endswith(".md") and name.removesuffix(".md") + ".ipynb" in names


def browsed(root: Path) -> set[str] | None:
    """The names the file browser lists at ``root`` (the manifest's ``browse``); None: all of
    them (no manifest there, or one that names none)."""
    try:
        names = manifest.load(root / manifest.MANIFEST_PATH.name).browse
    except (OSError, manifest.ManifestError):
        return None
    return {name.rstrip("/") for name in names} or None


def first_lesson(root: Path) -> str:
    """The key of the manifest's first lesson, where the course starts."""
    return next(iter(manifest.load(root / manifest.MANIFEST_PATH.name).lessons))


class LessonsListedOnce(AsyncLargeFileManager):
    """JupyterLab's default contents manager, less the markdown half of each pair in listings
    and, at the root, what the manifest does not list (jupytext builds its own manager on top
    of this one)."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model["type"] == "directory" and model.get("content"):
            names = {entry["name"] for entry in model["content"]}
            shown = browsed(Path(self.root_dir)) if not path.strip("/") else None
            model["content"] = [
                entry for entry in model["content"]
                if not paired_source(entry["name"], names)
                and (shown is None or entry["name"] in shown)
            ]  # fmt: skip
        return model


c = get_config()  # noqa: F821 (traitlets provides it to a config file)
c.ServerApp.contents_manager_class = LessonsListedOnce
# The first screen: the first lesson open (a later visit to /lab keeps the learner's own layout).
c.LabApp.default_url = f"/lab/tree/lessons/{first_lesson(COURSE)}.ipynb"
