"""A kernel launched on a stream other than the caller's is written down by the recorder.

On a GPU, ``with torch.cuda.stream(side): kernel[grid](...)`` leaves the caller's stream free to
read the output before the kernel has written it: the checker fails such a call on its
"is deterministic" check, naming the kernel (tests/adversarial/test_gpu_cheats.py grades one on
a GPU). A CPU has no streams, so here the stream the recorder sees is scripted.
"""

from __future__ import annotations

import itertools

import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.check.replay import record
from learning.check.replay.record import TraceRecorder
from learning.report.fingerprint import REPO_ROOT


def _softmax_trace(monkeypatch, streams) -> dict:
    spec = ops.OPS["softmax"]
    monkeypatch.setattr(record, "_current_stream", lambda: next(streams))
    values = {k: v.detach() for k, v in spec.inputs((4, 32), torch.float32, 1, "cpu").items()}
    recorder = TraceRecorder(REPO_ROOT / "reference")
    for name, value in values.items():
        recorder.add_input(name, value)
    with recorder:
        spec.call(spec.kernel_function("reference"), values)
    return recorder.trace()


def test_a_launch_on_another_stream_is_named_in_the_trace(monkeypatch):
    trace = _softmax_trace(monkeypatch, itertools.chain([1], itertools.repeat(2)))
    assert trace["side_streams"] and all("softmax" in name for name in trace["side_streams"])


def test_launches_on_the_callers_stream_leave_no_mark(monkeypatch):
    assert "side_streams" not in _softmax_trace(monkeypatch, itertools.repeat(7))
