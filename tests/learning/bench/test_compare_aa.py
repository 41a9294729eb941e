"""Does ``kernel-bench compare`` read identical code as ``same`` or ``ambiguous``, never as
``slower`` or ``faster``, over every A/A pair of recorded runs, and do its intervals hold how
far such runs move apart?

An A/A pair is two recorded kernel-bench reports (``results/<card>/``) whose settings are the
same but for the seed and the output file, recorded on the same GPU model with the same torch,
Triton, CUDA, driver and Python, and whose fingerprints show no file whose code differs. Their
difference is the runs' alone.
"""

from __future__ import annotations

import itertools
import json
import math
from functools import cache

from learning.bench import compare
from learning.report.fingerprint import REPO_ROOT

RUN_ONLY = ("seed", "output")  # settings that say which run it was, not what it measured


def _measured(report: dict) -> str:
    settings = {k: v for k, v in report["settings"].items() if k not in RUN_ONLY}
    environment = {k: report["environment"].get(k) for k in ("gpu_name", *compare.NOTED_VERSIONS)}
    return json.dumps([settings, environment], sort_keys=True)


@cache
def aa_pairs() -> tuple[tuple[str, str], ...]:
    reports = {}
    for path in sorted((REPO_ROOT / "results").glob("*/*.json")):
        data = json.loads(path.read_text())
        if "cases" in data and "settings" in data:  # kernel-bench reports, not script records
            reports[path.relative_to(REPO_ROOT).as_posix()] = data
    pairs = []
    for first, second in itertools.combinations(reports, 2):
        base, new = reports[first], reports[second]
        if _measured(base) == _measured(new) and not compare.changed_files(base, new):
            pairs.append((first, second))
    return tuple(pairs)


@cache
def _load(path: str) -> dict:
    return compare.load_report(REPO_ROOT / path, "REPORT")


def test_identical_code_is_never_slower_or_faster():
    """Every A/A pair, each way round: three GEMM sweeps under three or four seeds each, on the
    H200 (3 + 6 + 6 pairs)."""
    pairs = aa_pairs()
    assert len(pairs) >= 15, pairs
    assert ("results/h200/gemm-fp16-seed1.json", "results/h200/gemm-fp16-seed2.json") in pairs
    confirmed = []
    for pair in pairs:
        for base_path, new_path in (pair, pair[::-1]):
            comparison = compare.compare_reports(_load(base_path), _load(new_path))
            assert comparison["mismatched_settings"] == comparison["noted_differences"] == []
            confirmed += [(base_path, new_path, row["case"], row["variant"], row["verdict"])
                          for row in comparison["pairs"]
                          if row["verdict"] in ("slower", "faster")]  # fmt: skip
    assert confirmed == []


def test_the_intervals_hold_how_far_identical_runs_move_apart():
    """The run-to-run component the A/A pairs leave beyond the intervals: pooled over every
    matched variant, the squared log ratio of two identical runs' medians against the squared
    spread its interval allows (half the interval's log width over 1.96, a normal's 97.5%
    point). Intervals of single samples allowed less than half of what the runs showed."""
    observed, allowed = [], []
    for base_path, new_path in aa_pairs():
        comparison = compare.compare_reports(_load(base_path), _load(new_path))
        for row in comparison["pairs"]:
            if row["verdict"] is None:
                continue
            low, high = row["interval"]
            observed.append(math.log(row["ratio"]) ** 2)
            allowed.append((math.log(high / low) / (2 * 1.96)) ** 2)
    assert len(observed) >= 80
    excess = (sum(observed) - sum(allowed)) / len(observed)
    assert excess <= 0.25 * sum(allowed) / len(allowed), (sum(observed), sum(allowed))
