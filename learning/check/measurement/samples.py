"""The checks of reading samples and claiming a result: ``summarize``, ``paired_speedup``
and ``result_sentence``.
"""

from __future__ import annotations

import math
import numbers
import random
import statistics

from learning.check.measurement.support import (
    PARAMETERS,
    Failed,
    Learner,
    call_text,
    failure,
    ms_text,
    nearly_equal,
)


def check_summarize(learner: Learner, rng: random.Random) -> None:
    cases = [[1.0, 3.0, 2.0]]
    for count in (rng.randrange(5, 16, 2), rng.randrange(4, 15, 2)):
        samples = [round(rng.uniform(0.1, 5.0), 4) for _ in range(count)]
        samples[rng.randrange(count)] *= 10  # one slow outlier, as a real run often has
        cases.append(samples)
    for samples in cases:
        given = list(samples)
        got = learner.call("summarize", given)
        call = call_text("summarize", (samples,), {})
        ordered = sorted(samples)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            median = ordered[middle]
        else:
            median = (ordered[middle - 1] + ordered[middle]) / 2
        expected = (median, ordered[0], ordered[-1])
        if given != samples:
            raise failure(call, "the caller's list left as it was", f"it became {given}",
                           "sort a copy (sorted(samples_ms)): the samples' order records when "
                           "each was taken, which is how drift and warm-up are seen.")
        try:
            values = tuple(float(v) for v in got)
        except TypeError:
            values = ()
        if len(values) != 3:
            raise failure(call, f"Spread(median_ms, min_ms, max_ms) = {expected}", repr(got),
                           "return Spread(median_ms=..., min_ms=..., max_ms=...).")
        if all(nearly_equal(a, b) for a, b in zip(values, expected, strict=True)):
            continue
        hint = "median: the middle sample once sorted; min and max: the first and last."
        if nearly_equal(values[0], sum(samples) / len(samples)):
            hint = ("that median is the mean: one slow outlier pulls the mean, while the median "
                    "is the middle sample once sorted.")
        elif nearly_equal(values[0], samples[len(samples) // 2]):
            hint = "sort first: the middle sample in the order taken is not the median."
        elif len(samples) % 2 == 0 and values[0] in (ordered[middle - 1], ordered[middle]):
            hint = "with an even count the median is the mean of the two middle samples."
        elif nearly_equal(values[1], expected[2]) and nearly_equal(values[2], expected[1]):
            hint = "min and max are swapped: the order is (median_ms, min_ms, max_ms)."
        raise failure(call, f"Spread{expected}", f"{got!r}", hint)


# The docstring's example: ratios 2, 2, 1, 0.8, 2 -> PairedSpeedup(2.0, slower=1, rounds=4).
PAIRED_WORKED = ([2.0, 4.0, 3.0, 1.0, 5.0], [1.0, 2.0, 3.0, 1.25, 2.5])
PAIRED_HINTS = {
    "inverted": "inverted: each round's ratio is baseline / candidate, so a faster candidate "
    "(smaller times) gives a speedup above 1, as speedup() does.",
    "of medians": "that is the ratio of the two medians. Divide round by round first, then take "
    "the median of those ratios: a round's two samples share its clocks, and only their ratio "
    "cancels that round's drift.",
    "sorted": "the pairs were broken: sample i of each list was taken in round i, under the same "
    "clocks, and sorting the samples before dividing pairs the fastest with the fastest instead. "
    "Divide in round order (zip); sort only the ratios, to find their median.",
    "mean": "that is the mean of the round-by-round ratios; take their median, so that one "
    "disturbed round does not pull it.",
    "ties left out": "a tie is a ratio of exactly 1 and stays in the median; ties are left out of "
    "slower and rounds only.",
    "even": "with an even number of rounds the median is the mean of the two middle ratios "
    "(summarize computes it).",
    "reordered": "leave the caller's lists as they were: their order is the rounds' order, which "
    "pairs sample i of one list with sample i of the other. Sort a copy of the ratios, never "
    "the samples.",
    "ties as losses": "a tie (two equal samples) is not a loss: slower counts the rounds in which "
    "the candidate took longer (candidate > baseline), strictly.",
    "won": "that counts the rounds the candidate won; slower counts those it lost "
    "(candidate > baseline).",
    "ties in rounds": "a tie says nothing about which variant is faster: rounds counts the "
    "rounds that were not ties.",
}


def _paired_expected(baseline: list[float], candidate: list[float]) -> tuple[float, int, int]:
    """(speedup, slower, rounds) as the engine's paired ratio counts them (the one definition)."""
    from learning.report.stats import paired

    result = paired({"samples_ms": candidate}, {"samples_ms": baseline})
    return result["paired_ratio"], result["slower"], result["rounds"]


def _paired_mistakes(baseline: list[float], candidate: list[float]) -> list[tuple[float, str]]:
    """The speedup each usual mistake gives on these samples, with the hint that names it."""
    ratios = [b / c for b, c in zip(baseline, candidate, strict=True)]
    untied = [b / c for b, c in zip(baseline, candidate, strict=True) if b != c]
    resorted = zip(sorted(baseline), sorted(candidate), strict=True)
    mistakes = [
        (statistics.median(c / b for b, c in zip(baseline, candidate, strict=True)), "inverted"),
        (statistics.median(baseline) / statistics.median(candidate), "of medians"),
        (statistics.median(b / c for b, c in resorted), "sorted"),
        (sum(ratios) / len(ratios), "mean"),
    ]
    if untied and len(untied) < len(ratios):
        mistakes.append((statistics.median(untied), "ties left out"))
    if len(ratios) % 2 == 0:
        ordered = sorted(ratios)
        mistakes += [(ordered[len(ordered) // 2], "even"), (ordered[len(ordered) // 2 - 1], "even")]
    return [(value, PAIRED_HINTS[name]) for value, name in mistakes]


def paired_samples(rng: random.Random, count: int) -> tuple[list[float], list[float]]:
    """Two variants' samples for ``count`` rounds, in round order, with a drift that each round's
    two samples share.

    Each round runs in one of two clock states 13% apart (as the H200's do), plus up to 10% of
    slower drift; the candidate is a few percent faster or slower than the baseline, each
    sample has 3% of noise of its own, one round is disturbed for the candidate alone, and one
    or two rounds tie. Drawn again until the ratio of the medians misses the paired speedup by
    more than 1% and each usual mistake gives an answer of its own, so that the hints tell them
    apart.
    """
    for _ in range(1000):
        base_ms = 10 ** rng.uniform(math.log10(0.02), math.log10(5.0))
        true_speedup = rng.choice((0.96, 0.97, 0.98, 1.02, 1.03, 1.04))
        baseline, candidate = [], []
        for _ in range(count):
            round_ms = base_ms * rng.choice((1.0, 1.13)) * rng.uniform(1.0, 1.1)
            baseline.append(round(round_ms * rng.uniform(0.97, 1.03), 6))
            candidate.append(round(round_ms / true_speedup * rng.uniform(0.97, 1.03), 6))
        disturbed, *ties = rng.sample(range(count), 1 + rng.randint(1, 2))
        candidate[disturbed] = round(candidate[disturbed] * rng.uniform(1.3, 1.6), 6)
        for tie in ties:
            candidate[tie] = baseline[tie]
        if _telling_apart(baseline, candidate):
            return baseline, candidate
    raise RuntimeError("no paired samples that tell the mistakes apart in 1000 draws")


def _telling_apart(baseline: list[float], candidate: list[float]) -> bool:
    speedup, slower, rounds = _paired_expected(baseline, candidate)
    of_medians = statistics.median(baseline) / statistics.median(candidate)
    values = [speedup] + [value for value, _ in _paired_mistakes(baseline, candidate)]
    apart = all(
        not math.isclose(a, b, rel_tol=1e-4) for i, a in enumerate(values) for b in values[i + 1:]
    )
    return apart and abs(of_medians / speedup - 1) > 0.01 and 2 * slower != rounds


def _paired_values(got: object) -> tuple[float, float, float] | None:
    """(speedup, slower, rounds) from a PairedSpeedup, or any three numbers in that order."""
    if all(hasattr(got, name) for name in ("speedup", "slower", "rounds")):
        values = (got.speedup, got.slower, got.rounds)
    else:
        try:
            values = tuple(got)
        except TypeError:
            return None
    if len(values) != 3:
        return None
    if any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in values):
        return None
    return tuple(float(v) for v in values)


def _check_paired_case(learner: Learner, baseline: list[float], candidate: list[float]) -> None:
    given_baseline, given_candidate = list(baseline), list(candidate)
    got = learner.call("paired_speedup", given_baseline, given_candidate)
    call = call_text("paired_speedup", (baseline, candidate), {})
    speedup, slower, rounds = _paired_expected(baseline, candidate)
    expected = f"PairedSpeedup(speedup={round(speedup, 6)!r}, slower={slower}, rounds={rounds})"
    if given_baseline != baseline or given_candidate != candidate:
        changed = given_baseline if given_baseline != baseline else given_candidate
        raise failure(call, "the caller's lists left as they were", f"one became {changed}",
                       PAIRED_HINTS["reordered"])
    values = _paired_values(got)
    if values is None:
        raise failure(call, expected, repr(got),
                       "return PairedSpeedup(speedup=..., slower=..., rounds=...): a number and "
                       "two counts.")
    got_speedup, got_slower, got_rounds = values
    if nearly_equal(got_speedup, speedup) and got_slower == slower and got_rounds == rounds:
        return
    ties = len(baseline) - rounds
    worked = _paired_expected(*PAIRED_WORKED)
    if (baseline, candidate) != PAIRED_WORKED and values == worked:
        hint = ("that is the worked example's answer, but this is a different input: compute the "
                "result from the arguments.")
    elif not nearly_equal(got_speedup, speedup):
        hint = "speedup: the median over rounds of baseline[i] / candidate[i]."
        for value, mistake in _paired_mistakes(baseline, candidate):
            if nearly_equal(got_speedup, value):
                hint = mistake
                break
    elif got_slower != slower:
        hint = "slower: the rounds in which candidate[i] > baseline[i]."
        if ties and got_slower == slower + ties:
            hint = PAIRED_HINTS["ties as losses"]
        elif got_slower in (rounds - slower, len(baseline) - slower):
            hint = PAIRED_HINTS["won"]
    else:
        hint = "rounds: the rounds whose two samples differ."
        if ties and got_rounds == len(baseline):
            hint = PAIRED_HINTS["ties in rounds"] + f" Here {ties} of {len(baseline)} rounds tie."
    raise failure(call, expected, repr(got), hint)


def _check_paired_refusal(learner: Learner, baseline: list, candidate: list, hint: str) -> None:
    outcome = learner.attempt("paired_speedup", list(baseline), list(candidate))
    if isinstance(outcome.error, ValueError):
        return
    call = call_text("paired_speedup", (baseline, candidate), {})
    if outcome.error is None:
        got = f"it returned {outcome.value!r}"
    else:
        got = f"{type(outcome.error).__name__}: {outcome.error}"
    raise failure(call, "ValueError", got, hint)


def check_paired_speedup(learner: Learner, rng: random.Random) -> None:
    counts = (rng.randrange(9, 16, 2), rng.randrange(10, 17, 2), rng.randint(9, 16))
    cases = [PAIRED_WORKED] + [paired_samples(rng, count) for count in counts]
    cases.append(([0.5, 0.7, 0.6], [0.5, 0.7, 0.6]))  # every round a tie: 1.0, 0 of 0 rounds
    for baseline, candidate in cases:
        _check_paired_case(learner, list(baseline), list(candidate))
    baseline, candidate = cases[1]
    unequal = "lists of different lengths cannot be paired round by round: a sample without its "
    unequal += "partner (a run cut short) has no ratio. Compare the lengths and raise ValueError; "
    unequal += "zip(..., strict=True) raises it for you."
    not_positive = ("a sample of 0 ms or less is not a time (a cold sample minus the flush "
                    "median can be), and its ratio means nothing: check every sample before "
                    "dividing, and raise ValueError.")
    refusals = [
        ([1.0, 2.0], [1.0, 2.0, 3.0], unequal),
        (baseline, candidate[:-1], unequal),  # a run cut short
        ([], [], "no rounds, no median: raise ValueError for empty lists rather than return a "
         "number."),
        ([1.0, 2.0, 3.0], [1.0, -0.5, 3.0], not_positive),
        ([1.0, 0.0, 2.0], [1.0, 1.0, 1.0], not_positive),
        ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], not_positive),
    ]
    for baseline, candidate, hint in refusals:
        _check_paired_refusal(learner, baseline, candidate, hint)


_SENTENCE_VALUES = {
    "gpu": ("NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA GeForce RTX 4090"),
    "variant": ("triton", "triton BLOCK=1024", "the learner's kernel", "torch.compile"),
    "timing_mode": ("CUDA graph replay", "CUDA events", "cold timing with L2 flushed"),
    "baseline": ("torch eager", "the 10-kernel composition", "F.rms_norm"),
    "check": ("the float64 oracle check", "the fp16 tolerance check at every shape"),
    "not_established": ("that it is faster at other shapes", "why it is faster",
                        "that the difference survives a cold L2"),
}


def check_result_sentence(learner: Learner, rng: random.Random) -> None:
    sentences = set()
    for _ in range(2):
        chosen = {key: rng.choice(choices) for key, choices in _SENTENCE_VALUES.items()}
        op = rng.choice(("softmax", "rmsnorm", "add"))
        chosen["case"] = f"{op} {rng.randint(100, 20000)}x{rng.randint(100, 20000)} float16"
        chosen["median_ms"] = round(rng.uniform(0.005, 30.0), rng.randint(2, 6))
        chosen["baseline_median_ms"] = round(rng.uniform(0.005, 30.0), rng.randint(2, 6))
        fields = {key: chosen[key] for key in PARAMETERS["result_sentence"][1:]}  # in order
        got = learner.call("result_sentence", **fields)
        call = call_text("result_sentence", (), fields)
        median = ms_text(fields["median_ms"])
        baseline_median = ms_text(fields["baseline_median_ms"])
        expected = (
            f"On {fields['gpu']}, for {fields['case']}, {fields['variant']} took {median} under "
            f"{fields['timing_mode']}, versus {fields['baseline']} at {baseline_median}. "
            f"It passed {fields['check']}. "
            f"The result does not establish {fields['not_established']}."
        )
        if not isinstance(got, str):
            shown = f"{got!r} ({type(got).__name__})"
            raise failure(call, repr(expected), shown, "return the sentence as a str.")
        if " ".join(got.split()) == expected:
            sentences.add(got)
            continue
        pieces = [
            ("GPU", fields["gpu"]), ("case", fields["case"]), ("variant", fields["variant"]),
            ("median", median), ("timing mode", fields["timing_mode"]),
            ("baseline", fields["baseline"]), ("baseline's median", baseline_median),
            ("check it passed", fields["check"]),
            ("question it does not answer", fields["not_established"]),
        ]
        missing = [(label, text) for label, text in pieces if text not in got]
        if missing and missing[0][0] in ("median", "baseline's median"):
            hint = f"write both medians with format_ms (here {missing[0][1]!r})."
        elif missing:
            hint = f"the sentence lacks the {missing[0][0]} ({missing[0][1]!r})."
        else:
            hint = ("every ingredient is there; compare the wording and punctuation with the "
                    "template in the docstring, word by word.")
        raise failure(call, repr(expected), repr(got), hint)
    if len(sentences) < 2:
        raise Failed("result_sentence returned the same sentence for different inputs; build it "
                     "from the arguments.")
