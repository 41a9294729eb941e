"""A picture of a failed kernel check: which output elements were wrong or never stored, and
which program stored each one.

When a call's result is wrong, the checker replays its launches on the same inputs and asks
the replay which program stored each output element last (the store hooks of
:mod:`learning.check.replay.watch` see every store). :func:`draw` turns that into a small PNG
under ``results/local/``: on the left every element coloured by the program that stored it
(white: none did), on the right right / wrong / never stored. A grid one program short shows
as a white band where no program reached; a wrong mask as wrong elements along an edge.

The file is the checker's own: its PNG text says so (:data:`MARK`), and :func:`draw` never
replaces a file that does not (another name is taken instead).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import torch

from learning.check.kernel_guards import unwritten_mask
from learning.check.replay.watch import owner_parts

MARK = "learning.check: wrong and unwritten elements"
FOLDER = Path(__file__).resolve().parents[2] / "results" / "local"


def wrong_elements(actual: torch.Tensor, expected: torch.Tensor, tolerance) -> torch.Tensor:
    """Per element, whether it is outside ``tolerance`` (the rule of learning.correctness:
    ``|got - ref| <= atol * max|ref| + rtol * |ref|``, a non-finite value where the oracle is
    finite is wrong)."""
    got, ref = actual.detach().double(), expected.detach().double()
    finite = torch.isfinite(ref)
    scale = float(ref[finite].abs().max()) if bool(finite.any()) else 1.0
    bound = tolerance.atol * (scale if scale > 0 else 1.0) + tolerance.rtol * ref.abs()
    close = (got - ref).abs() <= bound
    return ~torch.where(finite, close & torch.isfinite(got), got == ref)


def _as_2d(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dim() == 1:
        return tensor.reshape(-1, 1)  # one value a row (sum, max): a column
    if tensor.dim() > 2:  # rows of the last dimension (attention's query rows of every head)
        return tensor.reshape(-1, tensor.shape[-1])
    return tensor.reshape(tensor.shape[0], -1) if tensor.dim() else tensor.reshape(1, 1)


def _is_ours(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as file:
            head = file.read(4096)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and MARK.encode() in head


def _free_path(folder: Path, stem: str) -> Path:
    """``folder/stem.png``, or ``stem-2.png`` ... when a file not drawn by the checker is
    there."""
    for number in range(1, 100):
        path = folder / (f"{stem}.png" if number == 1 else f"{stem}-{number}.png")
        if not os.path.lexists(path) or _is_ours(path):
            return path
    raise FileExistsError(f"no free name for {stem}.png in {folder}")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "check"


def draw(stem: str, title: str, actual: torch.Tensor, wrong: torch.Tensor,
         owners: torch.Tensor, folder: Path | None = None) -> Path:  # fmt: skip
    """Write the picture of one output and return its path (see the module docstring).

    ``wrong`` marks the elements outside the tolerance, ``owners`` holds for each element who
    stored it last (``-1``: nobody), as the replay reports it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    unwritten = unwritten_mask(actual)
    unwritten = unwritten if unwritten is not None else torch.zeros_like(wrong)
    unwritten = unwritten | (owners < 0)
    status = torch.where(unwritten, 2, torch.where(wrong, 1, 0))
    status, owners = _as_2d(status), _as_2d(owners)
    rows, cols = status.shape

    programs = torch.tensor([owner_parts(int(o))[1] for o in owners.flatten().tolist()],
                            dtype=torch.float64).reshape(owners.shape)  # fmt: skip
    programs[owners < 0] = float("nan")
    figure = Figure(figsize=(9, 4.2), dpi=100)
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    aspect = "auto"
    image = left.imshow(programs.numpy(), cmap="viridis", interpolation="nearest", aspect=aspect)
    left.set_title("program that stored each element\n(white: no program did)", fontsize=9)
    figure.colorbar(image, ax=left, label="program id (linear)")
    palette = ListedColormap(["#2e7d32", "#c62828", "#ffffff"])
    right.imshow(status.numpy(), cmap=palette, vmin=0, vmax=2, interpolation="nearest",
                 aspect=aspect)  # fmt: skip
    counts = [int((status == k).sum()) for k in range(3)]
    right.set_title(f"green right ({counts[0]}), red wrong ({counts[1]}),\n"
                    f"white never stored ({counts[2]})", fontsize=9)  # fmt: skip
    for axes in (left, right):
        axes.set_xlabel("column" if cols > 1 else "")
        axes.set_ylabel("row")
        axes.set_facecolor("#ffffff")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()

    folder = FOLDER if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    path = _free_path(folder, stem)
    descriptor, scratch = tempfile.mkstemp(prefix=".picture-", suffix=".png", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as file:
            figure.savefig(file, format="png", metadata={"Software": MARK, "Title": title})
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return path


_PER_OP = 3  # pictures an op's failures get in one run: each costs a replay


def worth_drawing(cases, outputs: tuple) -> bool:
    """Whether a wrong call gets a picture: some output was partly stored (an output never
    stored at all is a stub, said in words), and its op has fewer than ``_PER_OP`` so far."""
    drawn = sum(call.picture_replay is not None for case in cases for call in case.calls)
    partly = any(type(o) is torch.Tensor and (m := unwritten_mask(o)) is not None and
                 not bool(m.all()) for o in outputs)  # fmt: skip
    return drawn < _PER_OP and partly


def of_failure(case, call, replayed, title: str) -> str | None:
    """The picture of a wrong call's first wrong output, from its replay on the same inputs:
    the line the check's message gets, or None (no owners came back, nothing was wrong in the
    replay, or the file could not be written)."""
    if replayed.error is not None or call.expected is None:
        return None
    tolerance = case.spec.tolerances[case.dtype]
    for index, (actual, expected) in enumerate(zip(replayed.outputs, call.expected, strict=False)):
        owners = replayed.owners[index] if index < len(replayed.owners) else None
        if owners is None or type(actual) is not torch.Tensor or actual.shape != expected.shape \
                or owners.shape != actual.shape:  # fmt: skip
            continue
        wrong = wrong_elements(actual, expected, tolerance)
        stray = unwritten_mask(actual)
        if not bool(wrong.any()) and not (stray is not None and bool(stray.any())):
            continue
        stem = f"check-{slug(case.check)}-{slug(str(case.dtype).removeprefix('torch.'))}"
        try:
            path = draw(stem, f"{title} (output {index})", actual, wrong, owners)
        except OSError:
            return None
        root = FOLDER.parents[1]  # the course's root: the path as `ls` there shows it
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        return f"picture: {shown} (which elements were wrong or never stored, which program " \
               "stored each)"
    return None
