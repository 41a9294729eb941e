"""The attention exercises' checks: does each typical mistake fail with its hint, and the
untouched stub with "not done yet"?

Each mistaken kernel is a copy of ``reference/kernels/`` with one edit (``mutant``), graded
on the one check that shows it (``run_only``), the way the checker grades ``exercises``. What
the checker knows of attention beyond its spec is in ``learning/ops/attention/check.py`` and
``learning/ops/attention_train/check.py``.
"""

from __future__ import annotations

import random
import sys

import pytest
import torch
from test_check_kernel_paths import failures, mutant
from test_check_kernels import run_only

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import correctness, ops
from learning.check import kernel_hints, kernels
from learning.manifest import ROOT

_RESCALE = ("        acc = acc * rescale[:, None]\n", "")
_SCALE = "        LOG2E.value / math.sqrt(head_dim),\n"
_CAUSAL = "visible = visible & (keys[None, :] <= rows[:, None])\n            scores = tl.where("
_LSE = "lse = torch.empty((batch, heads, n), dtype=torch.float32, device=q.device)"

# exercise, the check that shows the mistake, the edits, a phrase of the hint it must earn
MISTAKES = {
    "running output not rescaled": (
        "attention", "attention 1x2x67x64", (_RESCALE,),
        "in which the running output acc was not rescaled when a tile raised the row maximum",
    ),
    "scale missing": (
        "attention", "attention 1x2x67x64", ((_SCALE, "        LOG2E.value,\n"),),
        "never scaled by 1/sqrt(D)",
    ),
    "scale doubled": (
        "attention", "attention 1x2x67x64", ((_SCALE, "        LOG2E.value / head_dim,\n"),),
        "scaled by 1/sqrt(D) twice",
    ),
    "causal mask off by one": (
        "attention", "attention_causal 1x2x67x64", ((_CAUSAL, _CAUSAL.replace("<=", "<")),),
        "the mask one key off, j < i",
    ),
    "log-sum-exp saved in 16 bits": (
        "attention", "attention saved log-sum-exp", ((_LSE, _LSE.replace("torch.float32",
                                                                          "q.dtype")),),
        "; it must be float32: the backward recomputes every probability",
    ),
    "log-sum-exp rounded before the store": (
        "attention", "attention saved log-sum-exp", ((
            "    tl.store(lse_ptr + head_rows, (row_max + tl.log2(row_sum)) * LN2,",
            "    tl.store(lse_ptr + head_rows, ((row_max + tl.log2(row_sum)) * LN2).to("
            "o_ptr.dtype.element_ty).to(tl.float32),"),),
        "can hold: it was rounded to",
    ),
    "backward without D_i": (
        "attention_train", "attention_train 1x2x67x64", (
            ("        ds = p * (dp - delta[:, None])", "        ds = p * dp"),
            ("        ds_t = p_t * (dp_t - delta[None, :])", "        ds_t = p_t * dp_t"),
        ),
        "dq and dk match a backward without D_i = rowsum(dO * o)",
    ),
}


@pytest.mark.parametrize("mistake", [
    pytest.param(name, marks=[pytest.mark.slow] if exercise == "attention_train" else [])
    for name, (exercise, *_) in MISTAKES.items()
])  # fmt: skip
def test_a_typical_mistake_fails_with_its_hint(mistake, tmp_path, monkeypatch):
    """The reference with one typical mistake made: does the check that shows it fail, and its
    message name the mistake?"""
    exercise, check, edits, hint = MISTAKES[mistake]
    package = mutant(tmp_path, monkeypatch, "attention", *edits)
    failed = failures(run_only(exercise, package, check))
    assert check in failed, f"{check} passed with the mistake made"
    assert hint in failed[check], failed[check]


def test_the_untouched_stub_says_not_done_yet(tmp_path, monkeypatch):
    """The exercise as make_exercises writes it: does the forward say where to start?"""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_exercises
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    package = "untouched_attention"
    for path, content in make_exercises.render().items():
        if path.startswith("exercises/kernels/") or path == "exercises/__init__.py":
            target = tmp_path / package / path.removeprefix("exercises/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    monkeypatch.syspath_prepend(str(tmp_path))
    failed = failures(run_only("attention", package, "attention 1x2x67x64"))
    message = failed["attention 1x2x67x64"]
    assert "not done yet: start with the TODOs in" in message
    assert "kernels/attention.py" in message


# --------------------------------------------------------------------------- without kernels


def _lse_case(seed: int = 5):
    spec = ops.get("attention")
    inputs = spec.inputs((1, 2, 67, 64), torch.float16, seed=seed)
    from learning.ops.attention.check import log_sum_exp

    as64 = {k: v.double() if torch.is_tensor(v) else v for k, v in inputs.items()}
    return spec, inputs, spec.expected(inputs)[0], log_sum_exp(**as64)


@pytest.mark.parametrize("rounded", [False, True])
def test_an_lse_rounded_to_16_bits_is_named_and_an_exact_one_is_not(rounded):
    """Is "holds only values a float16 can hold" said of an fp32 lse whose values were rounded
    to float16 (and only of it: an lse wrong in another way gets no such hint)?"""
    spec, inputs, output, lse = _lse_case()
    got = lse.to(torch.float16).float() if rounded else (lse * 1.01).float()
    extra = {"lse": (torch.float32, "why")}
    labels = ("output", "lse")
    verdicts = [correctness.compare(output.half(), output, spec.tolerances[torch.float16],
                                    dtype=torch.float16),
                correctness.compare(got, lse, spec.tolerances[torch.float32],
                                    dtype=torch.float32, label="lse")]  # fmt: skip
    assert verdicts[0].passed and not verdicts[1].passed
    hints = kernel_hints.explain(spec, inputs, (output.half(), got), (output, lse), verdicts,
                                 dtype=torch.float16, start_here="", extra=extra)  # fmt: skip
    named = any("holds only values a float16 can hold" in h for h in hints)
    assert named == rounded, (labels, hints)


def test_a_right_output_earns_no_hint_about_its_mistakes():
    """A mistake's hint is given only for an output that failed: with o right and the lse
    wrong, is no hint about o given?"""
    spec, inputs, output, lse = _lse_case()
    verdicts = [correctness.compare(output.half(), output, spec.tolerances[torch.float16],
                                    dtype=torch.float16),
                correctness.Verdict(False, "lse: wrong")]  # fmt: skip
    hints = kernel_hints.explain(spec, inputs, (output.half(), lse.float() + 1), (output, lse),
                                 verdicts, dtype=torch.float16, start_here="",
                                 extra={"lse": (torch.float32, "why")})  # fmt: skip
    assert not any(h.startswith("the output") for h in hints), hints


@pytest.mark.parametrize("name", ["attention", "attention_train"])
def test_the_plan_draws_heads_of_every_kind_for_named_dimensions(name):
    """Over many seeds, does the plan of a B x H x N x D op draw only the head dimensions its
    CPU shapes use, sequences from 1 (8 for a training op) to past 64 keys, ragged ones among
    them, and batch and head both past 1?"""
    spec = ops.get(name)
    sequences, heads, both = set(), set(), False
    for seed in range(40):
        for case in kernels._plan(spec, random.Random(seed)):
            batch, head_count, n, d = case.shape
            sequences.add(n)
            heads.add(d)
            both |= case.check.endswith("batches and heads") and batch > 1 and head_count > 1
    assert heads == {64, 128}
    shortest = kernels._SHORTEST_TRAINING if spec.training else 1
    assert min(sequences) == shortest and max(sequences) > 64
    assert any(n % 16 for n in sequences)
    assert both
