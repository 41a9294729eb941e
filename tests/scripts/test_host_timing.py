"""Does the paired host-time comparison pair what it says, and summarize it right? (CPU)

``scripts/_gpu_timing.paired_host_ratios`` times two calls back to back, pair after pair; on
a GPU it syncs between samples. Here a clock that each call advances stands in for the host
clock, so every ratio is known exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import _gpu_timing  # noqa: E402  (imports learning first: it selects the backend)
import wrapper_overhead  # noqa: E402


class _Clock:
    def __init__(self):
        self.now, self.order = 0.0, []

    def call_taking(self, seconds: float, name: str):
        def call():
            self.now += seconds
            self.order.append(name)

        return call


def test_each_pair_times_both_back_to_back_in_a_drawn_order(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_gpu_timing.time, "perf_counter", lambda: clock.now)
    monkeypatch.setattr(_gpu_timing.torch.cuda, "synchronize", lambda: None)
    baseline, candidate = clock.call_taking(4e-6, "a"), clock.call_taking(3e-6, "b")
    ratios = _gpu_timing.paired_host_ratios(baseline, candidate, calls_per_sample=10, pairs=9)
    assert ratios == pytest.approx([0.75] * 9)
    timed = clock.order[2 * 50 :]  # after 50 warm-up calls of each
    samples = [timed[k : k + 10] for k in range(0, len(timed), 10)]
    assert len(samples) == 18 and all(len(set(sample)) == 1 for sample in samples)
    pairs = [(samples[k][0], samples[k + 1][0]) for k in range(0, 18, 2)]
    assert set(pairs) == {("a", "b"), ("b", "a")}  # each pair both, in both orders (seed 0)
    again = _Clock()
    monkeypatch.setattr(_gpu_timing.time, "perf_counter", lambda: again.now)
    same = _gpu_timing.paired_host_ratios(again.call_taking(1e-6, "a"),
                                          again.call_taking(1e-6, "b"), 5, pairs=3)  # fmt: skip
    assert same == pytest.approx([1.0] * 3)


def test_the_paired_summary_reads_the_median_quartiles_and_the_sign_test():
    summary = wrapper_overhead.paired_summary([0.9, 0.95, 0.97, 0.99, 1.02, 0.96, 0.98])
    assert summary["paired_ratio_to_torch_softmax"] == pytest.approx(0.97)
    low, high = summary["paired_ratio_quartiles"]
    assert low == pytest.approx(0.95) and high == pytest.approx(0.99)
    assert summary["paired_faster"] == 6
    assert summary["paired_p"] == pytest.approx(16 / 128)  # 6 of 7: two-sided sign test
