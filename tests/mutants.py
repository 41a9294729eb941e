"""Mutants: a reference kernel file with one named fault, for the tests that ask what the
checker gives for that fault (``tests/adversarial/test_points_need_correctness.py``).

A mutant is the learner's file as ``scripts/make_exercises.py`` makes it with the reference's
solutions left in (``make_exercises.solved``: its helpers imported from ``reference/``), with
textual edits made to it. Each edit's anchor must occur exactly once: a mutant whose anchor is
gone (the reference was rewritten) fails loudly instead of grading the unchanged reference.
Unchanged kernels are the reference's own, so a grading lets copies through
(``reference_copies=True``): these tests ask what a fault costs, not whose kernel it is.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402

Edit = tuple[str, str]  # (the text that is there once, what it becomes)


def edited(text: str, edits: tuple[Edit, ...], where: str) -> str:
    """``text`` with each edit made; an anchor that is not there exactly once is an error."""
    for old, new in edits:
        if text.count(old) != 1:
            raise AssertionError(f"{where}: the text to edit is not there once: {old!r}")
        text = text.replace(old, new)
    return text


@dataclass(frozen=True)
class Mutant:
    name: str
    fault: str  # the fault, in a few words
    edits: tuple[Edit, ...]
    module: str = "softmax"  # the learner's kernels/<module>.py

    def source(self) -> str:
        solved = make_exercises.solved(f"exercises/kernels/{self.module}.py").decode()
        return edited(solved, self.edits, f"mutant {self.name}")

    def package(self, folder: Path) -> str:
        """Write the mutant as a learner package under ``folder``; its importable name."""
        name = f"mutant_{self.name}_{uuid.uuid4().hex[:8]}"
        kernels = folder / name / "kernels"
        kernels.mkdir(parents=True)
        (folder / name / "__init__.py").write_text("import learning  # noqa: F401\n")
        (kernels / "__init__.py").write_text("")
        (kernels / f"{self.module}.py").write_text(self.source())
        return name


# --------------------------------------------------------------------------- softmax's anchors

_ONE_PASS_LOAD = """\
    x = tl.load(
        x_ptr + read_rows[:, None] * x_row_stride + cols[None, :],
        mask=col_mask,
        other=float("-inf"),
    ).to(tl.float32)
"""
_CHUNK_LOAD = 'x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)'
_REREAD = 'x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)'
_FIRST_PASS = """\
    for col_start in tl.range(0, N, BLOCK, num_stages=NUM_STAGES):
        cols = col_start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N"""
_ONE_PASS_ROWS = """\
    ### TODO: ROWS whole rows as one [ROWS, BLOCK] tile: subtract the max, exp, divide by the sum
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
"""

_CHUNKED_WITHOUT_MAX = (
    ("running_sum = running_sum * tl.exp(running_max - shift) + tl.exp(x - shift)",
     "running_sum = running_sum + tl.exp(x)"),
    ("inverse_sum = 1.0 / tl.sum(running_sum * tl.exp(running_max - row_max), axis=0)",
     "inverse_sum = 1.0 / tl.sum(running_sum, axis=0)"),
    ("y = tl.exp(x - row_max) * inverse_sum", "y = tl.exp(x) * inverse_sum"),
)  # fmt: skip

SOFTMAX = {
    mutant.name: mutant
    for mutant in (
        Mutant("one_over_n", "stores 1/N everywhere, never reading x", (
            (_ONE_PASS_LOAD, '    x = tl.where(col_mask, 0.0, float("-inf")) + tl.zeros((ROWS, '
             "BLOCK), dtype=tl.float32)\n"),
            (_CHUNK_LOAD, 'x = tl.where(cols < N, 0.0, float("-inf"))'),
            (_REREAD, 'x = tl.where(mask, 0.0, float("-inf"))'),
        )),
        Mutant("without_max", "no row maximum subtracted, on either path", (
            ("numerator = tl.exp(x - row_max[:, None])", "numerator = tl.exp(x)"),
            *_CHUNKED_WITHOUT_MAX,
        )),
        Mutant("chunked_without_max", "the chunked path alone skips the row maximum",
               _CHUNKED_WITHOUT_MAX),
        Mutant("chunked_first_block", "the chunked path's first pass reads only the first chunk",
               ((_FIRST_PASS, _FIRST_PASS.replace("tl.range(0, N, BLOCK", "tl.range(0, BLOCK, "
                                                  "BLOCK")),)),
        Mutant("one_pass_hangs", "the one-pass kernel never returns", (
            (_ONE_PASS_ROWS, _ONE_PASS_ROWS + "    spin = 0\n    while spin < 1:\n"
             "        spin = spin * 1\n"),
        )),
        Mutant("one_pass_hangs_on_full_blocks",
               "the one-pass kernel never returns where a row fills its block", (
            (_ONE_PASS_ROWS, _ONE_PASS_ROWS + "    spin = 0\n    while spin < N - BLOCK + 1:\n"
             "        spin = spin * 1\n"),
        )),
        Mutant("without_tail_mask", "the one-pass load has no mask past the row's end", (
            (_ONE_PASS_LOAD, _ONE_PASS_LOAD.replace('        mask=col_mask,\n        other=float('
                                                    '"-inf"),\n', "")),
        )),
    )
}  # fmt: skip
