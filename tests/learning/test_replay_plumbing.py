"""Copies and casts between the launches (replay/plumbing.py): made again, never trusted.

A wrapper may make its input contiguous, convert it, copy it into aligned memory or cast what
its kernel stored. Is each of those recorded as a step and made again on the replay's own
tensors, so that an honest wrapper replays on inputs it never saw? Does every PyTorch result
smuggled through one of them (a softmax passed through ``.to``, ``.contiguous()`` or
``.clone()``, or copied into an output) still fail? And do the checker and kernel-bench, which
share the rule, accept and refuse the same calls?
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import textwrap
import uuid
from pathlib import Path

import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.bench import learner as bench_learner
from learning.check import replaying
from learning.check.kernel_guards import AllocationTrap
from learning.check.replay import ReplayError, ReplayProgram, TraceRecorder, extract_kernels, replay
from learning.correctness import compare_all, output_labels

SOURCE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * y_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _copy_rows(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(y_ptr + row * y_stride + cols, tl.load(x_ptr + row * x_stride + cols, mask=mask),
             mask=mask)


@triton.jit
def _sum_padded_rows(x_ptr, out_ptr, x_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    values = tl.load(x_ptr + row * x_stride + tl.arange(0, BLOCK)).to(tl.float32)  # no mask
    tl.store(out_ptr + row, tl.sum(values, axis=0))


@triton.jit
def _noop(x_ptr):
    pass


def _run(kernel, x, y, rows=None):
    kernel[(x.shape[0] if rows is None else rows,)](
        x, y, x.shape[1], x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def _torch_softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


# -- honest: the kernel does the work, PyTorch only copies and converts

def contiguous_first(x):
    x = x.contiguous()
    return _run(_softmax_rows, x, torch.empty_like(x))


def cast_at_the_end(x):
    y32 = torch.empty(x.shape, dtype=torch.float32)
    _run(_softmax_rows, x, y32)
    return y32.to(x.dtype)


def float_in_float_out(x):
    x32 = x.float()
    return _run(_softmax_rows, x32, torch.empty_like(x32)).half()


def reshaped(x):
    flat = x.reshape(-1)  # strided rows: reshape copies
    rows = flat.view(x.shape)
    return _run(_softmax_rows, rows, torch.empty(x.shape, dtype=x.dtype))


def aligned_copy(x):
    buffer = torch.empty((x.shape[0], x.shape[1] + 5), dtype=x.dtype)
    aligned = buffer[:, : x.shape[1]]
    aligned.copy_(x)
    return _run(_softmax_rows, aligned, torch.empty(x.shape, dtype=x.dtype))


def cloned_output(x):
    return _run(_softmax_rows, x, torch.empty(x.shape, dtype=x.dtype)).clone()


def assigned_output(x):
    y = torch.empty(x.shape, dtype=x.dtype)
    y[:] = _run(_softmax_rows, x, torch.empty(x.shape, dtype=torch.float32))
    return y


def zero_padded_sum(x):
    width = triton.next_power_of_2(x.shape[1])
    padded = torch.zeros((x.shape[0], width), dtype=x.dtype)
    padded[:, : x.shape[1]] = x
    out = torch.empty((x.shape[0],), dtype=torch.float32)
    _sum_padded_rows[(x.shape[0],)](padded, out, padded.stride(0), BLOCK=width)
    return out.to(x.dtype)


# -- cheats: PyTorch's answer passed through a copy or a cast

def answer_through_to(x):
    _noop[(1,)](x)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def answer_made_contiguous(x):
    _noop[(1,)](x)
    return _torch_softmax(x).t().contiguous().t()


def answer_cloned(x):
    _noop[(1,)](x)
    return _torch_softmax(x).clone()


def answer_copied_over_the_kernels(x):
    y = _run(_softmax_rows, x, torch.empty(x.shape, dtype=x.dtype), rows=1)  # one row's work
    y.copy_(_torch_softmax(x))
    return y


def answer_assigned(x):
    y = torch.empty(x.shape, dtype=x.dtype)
    _noop[(1,)](x)
    y[:] = _torch_softmax(x)
    return y


def answer_in_a_copy_of_the_input(x):
    staged = x.contiguous()
    staged.copy_(_torch_softmax(x))  # the copy of x now holds the answer
    return _run(_copy_rows, staged, torch.empty(x.shape, dtype=x.dtype))


def answer_cast_for_a_kernel(x):
    answer = torch.softmax(x.float(), dim=-1).to(torch.float64).to(torch.float32)
    return _run(_copy_rows, answer, torch.empty(x.shape, dtype=torch.float32)).to(x.dtype)
'''

HONEST = {
    "contiguous_first": ("softmax", torch.float32),
    "cast_at_the_end": ("softmax", torch.float16),
    "float_in_float_out": ("softmax", torch.float16),
    "reshaped": ("softmax", torch.float32),
    "aligned_copy": ("softmax", torch.float16),
    "cloned_output": ("softmax", torch.float32),
    "assigned_output": ("softmax", torch.float16),
    "zero_padded_sum": ("sum", torch.float16),
}
CHEATS = {
    "answer_through_to": torch.float16,
    "answer_made_contiguous": torch.float32,
    "answer_cloned": torch.float32,
    "answer_copied_over_the_kernels": torch.float32,
    "answer_assigned": torch.float16,
    "answer_in_a_copy_of_the_input": torch.float32,
    "answer_cast_for_a_kernel": torch.float16,
}
SHAPE = (6, 40)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """The module above as a learner package: (its root, its kernels, the module loaded)."""
    root = tmp_path_factory.mktemp("plumbing") / f"pkg_{uuid.uuid4().hex[:8]}"
    (root / "kernels").mkdir(parents=True)
    path = root / "kernels" / "softmax.py"  # where kernel-bench looks for the op's module
    path.write_text(textwrap.dedent(SOURCE))
    spec = importlib.util.spec_from_file_location(root.name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return root, extract_kernels(root, root.name), module


def _strided(values: torch.Tensor, pad: int = 3) -> torch.Tensor:
    """``values`` in rows further apart than their width (so ``.contiguous()`` copies)."""
    rows, cols = values.shape
    holder = torch.full((rows, cols + pad), float("nan"), dtype=values.dtype)
    holder[:, :cols] = values
    return holder[:, :cols]


def _inputs(op: str, dtype: torch.dtype, seed: int) -> dict:
    inputs = ops.get(op).inputs(SHAPE, dtype, seed, "cpu")
    return {"x": _strided(inputs["x"])}


_RECORDED: dict = {}


def _recorded(package, name: str, op: str, dtype: torch.dtype) -> tuple:
    """One call of function ``name`` recorded as the workers record it (inside the
    allocation trap), the trace and output descriptions as a process boundary carries them."""
    if name not in _RECORDED:
        root, _, module = package
        inputs = _inputs(op, dtype, 1)
        recorder = TraceRecorder(root)
        recorder.add_input("x", inputs["x"])
        with AllocationTrap(), recorder:
            outputs = (getattr(module, name)(**inputs),)
        trace = json.loads(json.dumps(recorder.trace()))
        described = json.loads(json.dumps(recorder.describe_outputs(outputs)))
        _RECORDED[name] = (inputs, outputs, trace, described)
    return _RECORDED[name]


def _correct(op: str, dtype: torch.dtype, outputs, inputs) -> bool:
    spec = ops.get(op)
    verdicts = compare_all(outputs, spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
                           labels=output_labels(spec))  # fmt: skip
    return all(v.passed for v in verdicts)


# --------------------------------------------------------------------------- honest wrappers


@pytest.mark.parametrize("name", list(HONEST))
def test_an_honest_copy_or_cast_is_made_again_on_new_inputs(name, package):
    """The wrapper's copies and casts are steps of the trace; the replay makes them on the
    inputs it hides, and gives back bit for bit what the call returned on its own."""
    _, bundle, _ = package
    op, dtype = HONEST[name]
    inputs, outputs, trace, described = _recorded(package, name, op, dtype)
    assert trace["steps"], "no copy or cast was recorded"
    assert _correct(op, dtype, outputs, inputs)
    fresh = _inputs(op, dtype, 2)
    result = replay(bundle, trace, described, fresh, device="cpu")
    assert (result.unwritten, result.stray_stores, result.inputs_changed) == ([], [], [])
    assert _correct(op, dtype, result.outputs, fresh)
    again = replay(bundle, trace, described, inputs, device="cpu")
    assert torch.equal(outputs[0], again.outputs[0])


def test_each_kind_of_copy_is_recorded_as_the_operator_it_reaches():
    """``.contiguous()`` and ``.clone()`` reach ATen as ``clone``, ``.to()`` and ``.float()``
    as ``_to_copy``, ``copy_`` and ``y[...] = t`` as ``copy_``; a view is no step."""
    x = _strided(torch.randn(4, 8))
    recorder = TraceRecorder(Path.cwd())
    recorder.add_input("x", x)
    with recorder:
        x.contiguous()
        x.clone()
        x.to(torch.float16)
        x.float()  # already float32: x itself, no copy
        x.t()
        torch.empty(4, 8)[:] = x
        torch.empty(4, 8).copy_(x)
    assert [step["op"] for step in recorder.trace()["steps"]] == [
        "clone", "clone", "_to_copy", "copy_", "copy_"]  # fmt: skip


def test_the_cast_autograd_makes_of_a_gradient_is_a_step(package):
    """``Function.apply(x.float())``: autograd casts the float32 gradient back to x's dtype
    inside its engine, where no Python method runs; the recorder sees it at the dispatcher."""
    x = torch.randn(4, 8, dtype=torch.float16, requires_grad=True)
    recorder = TraceRecorder(Path.cwd())
    recorder.add_input("x", x)
    with recorder:
        (grad,) = torch.autograd.grad(x.float() * 1.0, [x], torch.ones(4, 8))
    ops_recorded = [step["op"] for step in recorder.trace()["steps"]]
    assert ops_recorded.count("_to_copy") == 2  # x.float(), then the gradient back to float16
    (view,) = recorder.describe_outputs((grad,))
    assert "error" not in view  # the gradient lies in a recorded buffer: a step made it


def test_the_timed_replay_makes_the_steps_too(package):
    """kernel-bench times ReplayProgram: the copies and casts run in each timed call."""
    _, bundle, _ = package
    _, _, trace, described = _recorded(package, "cast_at_the_end", "softmax", torch.float16)
    program = ReplayProgram(bundle, trace, described, device="cpu")
    try:
        fresh = _inputs("softmax", torch.float16, 3)
        assert _correct("softmax", torch.float16, program(**fresh), fresh)
    finally:
        program.close()


# --------------------------------------------------------------------------- cheats


@pytest.mark.parametrize("name", list(CHEATS))
def test_a_pytorch_answer_through_a_copy_or_cast_is_not_replayed(name, package):
    """Right where it ran; on new inputs the replay makes only the copies and casts of what it
    has, so the answer PyTorch computed is either refused outright or missing."""
    _, bundle, _ = package
    dtype = CHEATS[name]
    inputs, outputs, trace, described = _recorded(package, name, "softmax", dtype)
    assert _correct("softmax", dtype, outputs, inputs)
    fresh = _inputs("softmax", dtype, 2)
    try:
        result = replay(bundle, replaying.fresh_outputs(trace, described), described, fresh,
                        device="cpu")  # fmt: skip
    except ReplayError as refused:
        assert "a tensor PyTorch computed" in str(refused), refused
        return
    assert result.unwritten or not _correct("softmax", dtype, result.outputs, fresh)


def test_answers_smuggled_through_to_and_clone_are_refused_by_name(package):
    _, bundle, _ = package
    for name, made in (("answer_through_to", ".to()"), ("answer_cloned", ".clone()")):
        _, _, trace, described = _recorded(package, name, "softmax", CHEATS[name])
        fresh = _inputs("softmax", CHEATS[name], 2)
        expected = re.escape(f"output 0 is a tensor PyTorch computed ({made}")
        with pytest.raises(ReplayError, match=expected):
            replay(bundle, replaying.fresh_outputs(trace, described), described, fresh,
                   device="cpu")  # fmt: skip


def test_a_claimed_step_can_only_copy_what_the_replay_has(package):
    """The worker may write any step into its trace: one that copies the input into the
    output hands back the input (wrong); one whose view reinterprets a buffer's bits is not
    made; a step that writes outside its buffer is refused."""
    _, bundle, _ = package
    _, _, trace, described = _recorded(package, "cast_at_the_end", "softmax", torch.float16)
    fresh = _inputs("softmax", torch.float16, 2)
    (step,) = trace["steps"]
    forged = copy.deepcopy(trace)
    forged["steps"][0]["from"] = {**step["to"], "buffer": 0, "dtype": "float16",
                                  "stride": [SHAPE[1] + 3, 1]}  # fmt: skip
    result = replay(bundle, forged, described, fresh, device="cpu")
    assert torch.equal(result.outputs[0], fresh["x"]) and not _correct(
        "softmax", torch.float16, result.outputs, fresh)  # fmt: skip
    forged = copy.deepcopy(trace)
    forged["steps"][0]["from"]["dtype"] = "int32"
    with pytest.raises(ReplayError, match="output 0 is a tensor PyTorch computed"):
        replay(bundle, forged, described, fresh, device="cpu")
    forged = copy.deepcopy(trace)
    forged["steps"][0]["to"]["offset"] = 10**6
    with pytest.raises(ReplayError, match=r"step 0: to: elements 1000000\.\. of buffer"):
        replay(bundle, forged, described, fresh, device="cpu")


def test_what_an_output_held_before_its_copy_is_kept_only_when_it_is_zeros(package):
    """A buffer a copy made again starts as it was before the copy (the zeros of a padded
    operand): for an output, one value other than zero could be an answer, so a claimed
    constant start of 0.5 is replayed as poison, and only zeros are kept."""
    _, bundle, _ = package
    _, _, trace, described = _recorded(package, "cast_at_the_end", "softmax", torch.float16)
    fresh = _inputs("softmax", torch.float16, 2)
    forged = copy.deepcopy(trace)
    (step,) = forged["steps"]
    step["to"]["shape"] = step["from"]["shape"] = [1, SHAPE[1]]  # the first row only
    target = forged["buffers"][step["to"]["buffer"]]
    target["start"] = {"kind": "const", "fill": 0.5}
    result = replay(bundle, forged, described, fresh, device="cpu")
    assert result.unwritten == [f"output 0: {(SHAPE[0] - 1) * SHAPE[1]} of "
                                f"{SHAPE[0] * SHAPE[1]} elements never stored"]  # fmt: skip
    target["start"] = {"kind": "const", "fill": 0.0}
    result = replay(bundle, forged, described, fresh, device="cpu")
    assert result.unwritten == [] and not result.outputs[0][1:].any()


# --------------------------------------------------------------------------- one rule, two users


def _checker_accepts(bundle, trace, described, op, dtype, hidden) -> bool:
    """What the checker concludes from a replay on hidden inputs: the trace as kernels.py
    prepares it, replayed by the replay process's own code, compared with the oracle."""
    kernels = replaying._LoadedKernels(bundle.as_dict())
    try:
        result = kernels.replay(replaying.fresh_outputs(trace, described), described, hidden,
                                "cpu", False)  # fmt: skip
    except ReplayError:
        return False
    finally:
        kernels.kernels.close()
    clean = not (result.unwritten or result.stray_stores or result.inputs_changed)
    return clean and _correct(op, dtype, result.outputs, hidden)


def _bench_accepts(package, bundle, trace, described, op, dtype) -> bool:
    """What kernel-bench's learner path concludes from the same trace (its own hidden inputs)."""
    root, _, _ = package
    learner = bench_learner.Learner(root.name, root)
    reply = {"trace": trace, "described": described}
    case = bench_learner._verify_case(bundle, learner, ops.get(op), SHAPE, ops.dtype_name(dtype),
                                      reply, "cpu")  # fmt: skip
    return case.call is not None


@pytest.mark.parametrize("name", [*HONEST, *CHEATS])
def test_the_checker_and_kernel_bench_accept_and_refuse_the_same_calls(name, package,
                                                                       monkeypatch):  # fmt: skip
    """Both read a trace through ``fresh_outputs`` and the replay's plumbing rule: the same
    honest calls pass both, the same cheats fail both."""
    _, bundle, _ = package
    op, dtype = HONEST[name] if name in HONEST else ("softmax", CHEATS[name])
    _, _, trace, described = _recorded(package, name, op, dtype)
    monkeypatch.setattr(bench_learner, "stub_kernels", lambda source: [])  # _noop is a decoy
    checker = _checker_accepts(bundle, trace, described, op, dtype, _inputs(op, dtype, 5))
    bench = _bench_accepts(package, bundle, trace, described, op, dtype)
    assert checker == bench == (name in HONEST)
