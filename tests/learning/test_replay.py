"""learning.check.replay: record a call's Triton launches, replay them with kernels from source.

Every test runs on the CPU interpreter at small shapes. The reference implementation of each
op must replay to the oracle on inputs it never saw (and bit for bit on the ones it did); each
cheat the replay exists for must fail it, for the reason named; every kernel of reference/ and
exercises/ must pass the allow-list, and each construct outside it must be refused.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
import uuid
from pathlib import Path

import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.check.kernel_guards import AllocationTrap, LaunchCounter, place_inputs
from learning.check.replay import (
    KernelBundle,
    KernelSourceError,
    ReplayError,
    ReplayProgram,
    TraceRecorder,
    extract_kernels,
    replay,
)
from learning.check.replay.extract import extract_sources
from learning.correctness import compare_all, output_labels

ROOT = Path(__file__).resolve().parents[2]
DTYPE = torch.float32
SHAPES = {"M x N": (8, 96), "M x N x K": (40, 24, 48),
          "B x H x N x D": (1, 2, 19, 64)}  # masks in every dimension, small  # fmt: skip


def _shape(spec: ops.OpSpec) -> tuple[int, ...]:
    return SHAPES[" x ".join(spec.shape_names)]


@pytest.fixture(scope="module")
def reference_bundle() -> KernelBundle:
    return extract_kernels(ROOT / "reference", "reference")


def _record(root: Path, call, inputs: dict) -> tuple[tuple, dict, list[dict]]:
    recorder = TraceRecorder(root)
    for name, value in inputs.items():
        recorder.add_input(name, value)
    with recorder:
        outputs = tuple(call(inputs))
    trace, described = recorder.trace(), recorder.describe_outputs(outputs)
    # plain JSON, no NaN: what a process boundary carries
    trace, described = json.loads(json.dumps(trace, allow_nan=False)), json.loads(
        json.dumps(described, allow_nan=False)
    )
    return outputs, trace, described


_RECORDINGS: dict[str, tuple] = {}


def _reference_recording(name: str) -> tuple:
    """One recorded call of the reference for op ``name`` (seed 1), made once a run."""
    if name not in _RECORDINGS:
        spec = ops.OPS[name]
        fn = spec.kernel_function("reference")
        inputs = spec.inputs(_shape(spec), DTYPE, 1, "cpu")
        _RECORDINGS[name] = (inputs, *_record(ROOT / "reference", lambda i: spec.call(fn, i),
                                              inputs))  # fmt: skip
    return _RECORDINGS[name]


def _verdicts(spec: ops.OpSpec, outputs, inputs) -> list:
    return compare_all(outputs, spec.expected(inputs), spec.tolerances[DTYPE], dtype=DTYPE,
                       labels=output_labels(spec))  # fmt: skip


# --------------------------------------------------------------------------- the reference


@pytest.mark.parametrize("name", list(ops.OPS))
def test_reference_replays_to_the_oracle_on_new_inputs(name, reference_bundle):
    spec = ops.OPS[name]
    inputs, outputs, trace, described = _reference_recording(name)
    assert trace["launches"] and all(
        launch["kernel"].startswith("kernels/") for launch in trace["launches"]
    )
    assert {b["kind"] for b in trace["buffers"]} <= {"input", "alloc", "const"}

    fresh = spec.inputs(_shape(spec), DTYPE, 2, "cpu")
    result = replay(reference_bundle, trace, described, fresh, device="cpu")
    verdicts = _verdicts(spec, result.outputs, fresh)
    assert all(v.passed for v in verdicts), [v.reason for v in verdicts]
    assert (result.unwritten, result.stray_stores, result.inputs_changed) == ([], [], [])

    again = replay(reference_bundle, trace, described, inputs, device="cpu")
    for recorded, replayed in zip(outputs, again.outputs, strict=True):
        assert torch.equal(recorded.detach(), replayed)  # bit for bit: the same launches


def test_recording_inside_the_checkers_own_guards(reference_bundle):
    """Under AllocationTrap and LaunchCounter (the checker's), on inputs placed in NaN
    guards: the trap's guarded allocation is recorded (its interior), and replays."""
    spec = ops.OPS["softmax"]
    fn = spec.kernel_function("reference")
    values = {k: v.detach() for k, v in spec.inputs((8, 96), DTYPE, 1, "cpu").items()}
    placed, _ = place_inputs(values, spec.wrt)
    trap, counter, recorder = AllocationTrap(), LaunchCounter(), TraceRecorder(ROOT / "reference")
    for name, value in placed.items():
        recorder.add_input(name, value)
    with trap, counter, recorder:
        outputs = spec.call(fn, placed)
    assert counter.kernels == ["_softmax_fwd_kernel"] and len(trap.buffers) == 1
    alloc = recorder.trace()["buffers"][1]
    assert (alloc["kind"], alloc["nbytes"]) == ("alloc", 8 * 96 * 4)  # the view, not the guards
    fresh = spec.inputs((8, 96), DTYPE, 3, "cpu")
    result = replay(reference_bundle, recorder.trace(), recorder.describe_outputs(outputs), fresh,
                    device="cpu")  # fmt: skip
    assert all(v.passed for v in _verdicts(spec, result.outputs, fresh))


def test_a_gradient_made_contiguous_is_made_again_from_the_hidden_gradient(reference_bundle):
    """softmax backward copies a non-contiguous dy (dy.contiguous()) before its kernel reads
    it: the copy is a step of the trace, made again from the gradient the replay is given."""
    spec = ops.OPS["softmax_train"]
    fn = spec.kernel_function("reference")
    inputs = spec.inputs((8, 96), DTYPE, 1, "cpu")
    inputs["grad_output"] = torch.randn(96, 8).t()
    outputs, trace, described = _record(ROOT / "reference", lambda i: spec.call(fn, i), inputs)
    (step,) = trace["steps"]
    assert (step["op"], step["after"]) == ("clone", 1)  # after the forward, before backward
    assert trace["buffers"][step["from"]["buffer"]]["name"] == "grad_output"
    fresh = spec.inputs((8, 96), DTYPE, 2, "cpu")
    fresh["grad_output"] = torch.randn(96, 8).t()
    result = replay(reference_bundle, trace, described, fresh, device="cpu")
    assert all(v.passed for v in _verdicts(spec, result.outputs, fresh))
    again = replay(reference_bundle, trace, described, inputs, device="cpu")
    assert torch.equal(outputs[0], again.outputs[0])


@pytest.mark.parametrize("name", ["softmax", "rmsnorm_train"])
def test_replay_program_reproduces_the_reference_on_fresh_inputs(name, reference_bundle):
    spec = ops.OPS[name]
    _, _, trace, described = _reference_recording(name)
    program = ReplayProgram(reference_bundle, trace, described, device="cpu")
    try:
        for seed in (11, 12):
            fresh = spec.inputs(_shape(spec), DTYPE, seed, "cpu")
            outputs = program(**fresh)
            verdicts = _verdicts(spec, outputs, fresh)
            assert all(v.passed for v in verdicts), [v.reason for v in verdicts]
        wrong = dict(fresh, x=fresh["x"].detach()[:4])
        with pytest.raises(ReplayError, match=r"input x is float32 \(4, 96\); the trace was "):
            program(**wrong)
        strided = dict(fresh, x=torch.randn(96, 8).t())
        with pytest.raises(ReplayError, match="input x has strides"):
            program(**strided)
    finally:
        program.close()


# --------------------------------------------------------------------------- cheats

_HEADER = "import torch\nimport triton\nimport triton.language as tl\n"


def _source(body: str) -> str:
    """A test module: the usual imports, then ``body`` (dedented)."""
    return _HEADER + textwrap.dedent(body)


def _package(tmp_path: Path, files: dict[str, str], name: str | None = None) -> Path:
    root = tmp_path / (name or f"pkg_{uuid.uuid4().hex[:8]}")
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _load(path: Path):
    """Import one file of a test package by path, as the learner's process would."""
    spec = importlib.util.spec_from_file_location(f"cheat_{uuid.uuid4().hex[:8]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_NOOP = _HEADER + """
@triton.jit
def _noop_kernel(x_ptr, n):
    pass


def returns_torch(x):
    _noop_kernel[(1,)](x, x.numel())
    return torch.softmax(x, dim=-1)


def copies_torch(x):
    y = torch.empty_like(x)
    _noop_kernel[(1,)](x, x.numel())
    y.copy_(torch.softmax(x, dim=-1))
    return y
"""


def _softmax_cheat(tmp_path, source: str, function: str):
    root = _package(tmp_path, {"kernels.py": source})
    cheat = getattr(_load(root / "kernels.py"), function)
    spec = ops.OPS["softmax"]
    inputs = spec.inputs((4, 32), DTYPE, 1, "cpu")
    outputs, trace, described = _record(root, lambda i: (cheat(**i),), inputs)
    assert all(v.passed for v in _verdicts(spec, outputs, inputs))  # right where it ran
    return extract_kernels(root, root.name), trace, described, spec.inputs((4, 32), DTYPE, 2)


def test_a_pytorch_answer_behind_a_noop_kernel_is_refused(tmp_path):
    bundle, trace, described, fresh = _softmax_cheat(tmp_path, _NOOP, "returns_torch")
    with pytest.raises(ReplayError, match="output 0 cannot be replayed: a tensor PyTorch computed "
                       r"\(4x32 float32\)"):
        replay(bundle, trace, described, fresh, device="cpu")


def test_a_pytorch_answer_copied_into_an_allocation_is_never_stored(tmp_path):
    bundle, trace, described, fresh = _softmax_cheat(tmp_path, _NOOP, "copies_torch")
    result = replay(bundle, trace, described, fresh, device="cpu")
    assert result.unwritten == ["output 0: 128 of 128 elements never stored"]


_BORROWED = """
from reference.kernels.softmax import _softmax_fwd_kernel
"""
_RELABELLED = """
import types

from reference.kernels import softmax as _reference

_code = _reference._softmax_fwd_kernel.fn
_copy = types.FunctionType(_code.__code__, _code.__globals__, _code.__name__)
_copy.__module__ = __name__  # "defined here", says the label
_softmax_fwd_kernel = triton.jit(_copy)
"""
_LAUNCHES_IT = """

def softmax(x):
    y = torch.empty_like(x)
    _softmax_fwd_kernel[(x.shape[0],)](x, y, x.shape[0], x.stride(0), y.stride(0),
                                       N=x.shape[1], BLOCK=32, ROWS=1)
    return y
"""


@pytest.mark.parametrize(("prelude", "label"), [
    (_BORROWED, "outside:reference.kernels.softmax._softmax_fwd_kernel"),
    (_RELABELLED, "outside:cheat_"),  # the module name it was given, still outside
], ids=["imported", "relabelled"])  # fmt: skip
def test_the_reference_kernel_launched_from_a_learner_file_is_refused(tmp_path, prelude, label):
    source = _source(prelude + _LAUNCHES_IT)
    bundle, trace, described, fresh = _softmax_cheat(tmp_path, source, "softmax")
    assert trace["launches"][0]["kernel"].startswith(label)
    with pytest.raises(ReplayError, match="a kernel defined outside your"):
        replay(bundle, trace, described, fresh, device="cpu")


def test_an_answer_passed_in_scalar_arguments_is_the_old_answer(tmp_path):
    source = _source("""
    @triton.jit
    def _store4(out_ptr, a, b, c, d):
        tl.store(out_ptr + 0, a)
        tl.store(out_ptr + 1, b)
        tl.store(out_ptr + 2, c)
        tl.store(out_ptr + 3, d)


    def row_sum(x):
        out = torch.empty((4,), dtype=x.dtype)
        _store4[(1,)](out, *(float(v) for v in x.sum(dim=-1)))
        return out
    """)
    root = _package(tmp_path, {"kernels.py": source})
    cheat = _load(root / "kernels.py").row_sum
    spec = ops.OPS["sum"]
    inputs = spec.inputs((4, 8), DTYPE, 1, "cpu")
    _, trace, described = _record(root, lambda i: (cheat(**i),), inputs)
    bundle = extract_kernels(root, root.name)
    same = replay(bundle, trace, described, inputs, device="cpu")
    assert all(v.passed for v in _verdicts(spec, same.outputs, inputs))
    fresh = spec.inputs((4, 8), DTYPE, 2, "cpu")
    moved = replay(bundle, trace, described, fresh, device="cpu")
    assert not any(v.passed for v in _verdicts(spec, moved.outputs, fresh))
    assert moved.unwritten == []  # every element was stored: the values are the old answer


def test_stores_outside_the_output_and_into_an_input_are_reported(tmp_path):
    source = _source("""
    @triton.jit
    def _sloppy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        value = tl.load(x_ptr + offsets, mask=offsets < n)
        tl.store(y_ptr + offsets, value, mask=offsets < n + 3)  # 3 past the end
        tl.store(x_ptr + offsets, value * 2, mask=offsets < 2)  # writes its input


    def half_right(x):
        y = torch.empty_like(x)
        _sloppy[(1,)](x, y, x.numel() // 2, BLOCK=256)  # half of y is never stored
        return y
    """)
    root = _package(tmp_path, {"kernels.py": source})
    function = _load(root / "kernels.py").half_right
    values = {"x": torch.randn(4, 32)}
    placed, _ = place_inputs(values, ())
    recorder = TraceRecorder(root)
    recorder.add_input("x", placed["x"])
    with AllocationTrap(), recorder:  # guards where the stores land while recording
        outputs = (function(**placed),)
    bundle = extract_kernels(root, root.name)
    result = replay(bundle, recorder.trace(), recorder.describe_outputs(outputs),
                    {"x": torch.randn(8, 16).reshape(4, 32)}, device="cpu")  # fmt: skip
    assert result.unwritten == ["output 0: 61 of 128 elements never stored"]
    assert result.stray_stores == []  # 67 stores of 128 elements: inside the buffer
    assert result.inputs_changed == ["input x: the kernels changed 2 of its 128 elements"]
    tail = _package(tmp_path, {"kernels.py": source.replace("x.numel() // 2", "x.numel()")})
    function = _load(tail / "kernels.py").half_right
    recorder = TraceRecorder(tail)
    placed, _ = place_inputs(values, ())
    recorder.add_input("x", placed["x"])
    with AllocationTrap(), recorder:
        outputs = (function(**placed),)
    result = replay(extract_kernels(tail, tail.name), recorder.trace(),
                    recorder.describe_outputs(outputs), values, device="cpu")  # fmt: skip
    assert len(result.stray_stores) == 1
    assert result.stray_stores[0].endswith("a store 3 elements past the end")


def test_an_allocation_pytorch_filled_before_the_launch_is_a_constant_or_opaque(tmp_path):
    source = _source("""
    @triton.jit
    def _add_into(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n
        total = tl.load(acc_ptr + offsets, mask=mask) + tl.load(x_ptr + offsets, mask=mask)
        tl.store(acc_ptr + offsets, total, mask=mask)


    def zeroed(x):
        acc = torch.empty_like(x).zero_()  # one value everywhere: a constant
        _add_into[(1,)](x, acc, x.numel(), BLOCK=256)
        return acc


    def prefilled(x):
        acc = torch.empty_like(x)
        acc.copy_(x * 0 + torch.exp(x) - x)  # PyTorch's work, not a kernel's
        _add_into[(1,)](x, acc, x.numel(), BLOCK=256)
        return acc
    """)
    root = _package(tmp_path, {"kernels.py": source})
    module = _load(root / "kernels.py")
    bundle = extract_kernels(root, root.name)
    x = torch.randn(4, 32)
    _, trace, described = _record(root, lambda i: (module.zeroed(**i),), {"x": x})
    assert [b["kind"] for b in trace["buffers"]] == ["input", "const"]
    fresh = {"x": torch.randn(4, 32)}
    assert torch.equal(replay(bundle, trace, described, fresh, device="cpu").outputs[0],
                       fresh["x"])  # fmt: skip
    _, trace, described = _record(root, lambda i: (module.prefilled(**i),), {"x": x})
    with pytest.raises(ReplayError, match=r"argument acc_ptr: a tensor PyTorch computed "
                       r"\(torch.empty_like -> 4x32 float32, then written by PyTorch\)"):
        replay(bundle, trace, described, fresh, device="cpu")


def test_autotuning_runs_are_not_recorded_and_their_writes_are_not_pytorchs(tmp_path):
    """Triton times each candidate by launching it (here once): those launches write the
    output before the chosen one runs, and must leave it an allocation, not opaque."""
    source = _source("""
    def _time_once(kernel_call, quantiles):
        kernel_call()
        return [1.0, 1.0, 1.0]


    @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})],
                     key=["n"], do_bench=_time_once)
    @triton.jit
    def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


    def double(x):
        y = torch.empty_like(x)
        _double[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
        return y
    """)
    root = _package(tmp_path, {"kernels.py": source})
    double = _load(root / "kernels.py").double
    _, trace, described = _record(root, lambda i: (double(**i),), {"x": torch.randn(300)})
    assert [b["kind"] for b in trace["buffers"]] == ["input", "alloc"]
    (launch,) = trace["launches"]
    assert launch["grid"] == [300 // launch["args"]["BLOCK"] + 1, 1, 1]  # the grid resolved
    fresh = {"x": torch.randn(300)}
    result = replay(extract_kernels(root, root.name), trace, described, fresh, device="cpu")
    assert torch.equal(result.outputs[0], fresh["x"] * 2)


def test_the_recorder_puts_everything_back_even_when_the_call_raises():
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    before = (torch.empty, torch.zeros_like, JITFunction.run, InterpretedFunction.run,
              "new_empty" in vars(torch.Tensor))  # fmt: skip
    with pytest.raises(ZeroDivisionError), TraceRecorder(ROOT):
        assert torch.empty is not before[0]
        raise ZeroDivisionError("the call failed")
    after = (torch.empty, torch.zeros_like, JITFunction.run, InterpretedFunction.run,
             "new_empty" in vars(torch.Tensor))  # fmt: skip
    assert after == before


# --------------------------------------------------------------------------- extraction


def _jit_functions(package_root: Path) -> set[str]:
    """Every function of the package whose innermost decorator reads triton.jit, found by a
    plain text scan of the decorators (independent of the extractor)."""
    import ast

    found = set()
    for path in package_root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.decorator_list:
                if ast.unparse(node.decorator_list[-1]).startswith("triton.jit"):
                    found.add(f"{path.relative_to(package_root).as_posix()}::{node.name}")
    return found


@pytest.mark.parametrize("package", ["reference", "exercises"])
def test_every_kernel_of_the_course_passes_extraction(package):
    bundle = extract_kernels(ROOT / package, package)
    assert set(bundle.kernels) == _jit_functions(ROOT / package)
    assert len(bundle.kernels) >= 19
    for source in bundle.modules.values():
        assert "autotune" not in source and "heuristics" not in source and "torch" not in source
    # the generated modules are a fixed point: what extraction makes of them is themselves
    assert extract_sources(bundle.modules, package) == bundle
    assert KernelBundle.from_dict(json.loads(json.dumps(bundle.as_dict()))) == bundle


def test_kernels_and_constants_imported_between_files_replay(tmp_path):
    name = f"pkg_{uuid.uuid4().hex[:8]}"
    root = _package(tmp_path, {
        "__init__.py": "",
        "parts/__init__.py": "",
        "parts/helpers.py": _source("""
        from triton import jit

        SCALE = tl.constexpr(2.0)
        BLOCK = 64
        WIDE = BLOCK * 4 + 0
        UNUSED = torch.zeros(3)


        @jit
        def scaled(v):
            return v * SCALE
        """),
        "ops.py": _source(f"""
        from .parts.helpers import scaled
        from {name}.parts.helpers import WIDE as COLUMNS


        @triton.autotune(configs=[triton.Config({{}}, num_warps=2)], key=[])
        @triton.jit(do_not_specialize=["n"])
        def _scale(x_ptr, y_ptr, n):
            offsets = tl.arange(0, COLUMNS)
            mask = offsets < n
            tl.store(y_ptr + offsets, scaled(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


        def double(x):
            y = torch.empty_like(x)
            _scale[(1,)](x, y, x.numel())
            return y
        """),
    }, name=name)  # fmt: skip
    module = importlib.import_module  # the package is importable from tmp_path
    import sys

    sys.path.insert(0, str(root.parent))
    try:
        double = module(f"{root.name}.ops").double
        x = torch.randn(200)
        _, trace, described = _record(root, lambda i: (double(**i),), {"x": x})
    finally:
        sys.path.remove(str(root.parent))
    bundle = extract_kernels(root, root.name)
    assert set(bundle.modules) == {"ops.py", "parts/helpers.py"}
    helpers = bundle.modules["parts/helpers.py"]
    assert "SCALE = tl.constexpr(2.0)" in helpers and "WIDE = 256" in helpers
    assert "UNUSED" not in helpers and "BLOCK" not in helpers
    assert "from .parts.helpers import WIDE as COLUMNS, scaled" in bundle.modules["ops.py"]
    assert trace["launches"][0]["options"]["num_warps"] == 2  # the autotuner's choice
    fresh = {"x": torch.randn(200)}
    result = replay(bundle, trace, described, fresh, device="cpu")
    assert torch.equal(result.outputs[0], fresh["x"] * 2)


_KERNEL = _HEADER + """
import os

HELPER_TABLE = [1, 2]


def python_helper(v):
    return v


@triton.jit
def _kernel(x_ptr, N: tl.constexpr):
    {body}
"""

# (a kernel body, what the refusal names); each body is one construct outside the allow-list
_REFUSED = [
    ("import os", "an import inside a kernel"),
    ("value = getattr(x_ptr, 'dtype')", "getattr is a Python builtin"),
    ("value = x_ptr.__class__", "__dunder__ attributes"),
    ("value = x_ptr._private", "_private attribute"),
    ("with open('f') as f:\n        pass", "a with block"),
    ("try:\n        pass\n    except Exception:\n        pass", "try/except"),
    ("def inner():\n        pass", "a function defined inside a kernel"),
    ("f = lambda v: v", "a lambda"),
    ("class Inner:\n        pass", "a class inside a kernel"),
    ("global G", "global"),
    ("value = [i for i in range(3)]", "a comprehension"),
    ("value = tl.max(*[x_ptr])", "star-arguments"),
    ("tl.store(x_ptr, 0, **{})", "**keyword arguments"),
    ("value = eval('1')", "eval is a Python builtin"),
    ("value = open('f')", "open is a Python builtin"),
    ("value = __import__('os')", "__import__ is a Python builtin"),
    ("value = globals()", "globals is a Python builtin"),
    ("value = os.getcwd()", "os is the module os, imported"),
    ("value = tl.core.builtins", "the module builtins, outside the Triton language"),
    ("value = triton.runtime", "triton.language (tl), triton.cdiv"),
    ("x_ptr.dtype = 1", "that changes a Python object"),
    ("value = x_ptr.handle", "what Triton's values offer"),
    ("value = f'{N}'", "an f-string"),
    ("if (n := 3):\n        pass", "the := operator"),
    ("del x_ptr", "del"),
    ("raise ValueError()", "a kernel cannot raise"),
    ("for i in [1, 2]:\n        pass", "a loop over [1, 2]"),
    ("for i in range(2):\n        pass\n    else:\n        pass", "for ... else"),
    ("value = {1: 2}", "a dict"),
    ("value = python_helper(1)", "a Python function, not a @triton.jit kernel"),
    ("value = HELPER_TABLE", "assigned a List expression, not a constant"),
    ("value = tl.does_not_exist", "Triton's language has no such name"),
    ("a = b = 1", "a chained assignment"),
    ("value = tl", "the module tl as a value"),
    ("value = tl.core", "the module tl.core as a value"),
    ("value = undefined_name", "undefined_name is not a parameter"),
    ("x_ptr", "on its own"),
]


@pytest.mark.parametrize(("body", "why"), _REFUSED, ids=[b.split("\n")[0] for b, _ in _REFUSED])
def test_each_construct_outside_the_allow_list_is_refused(tmp_path, body, why):
    root = _package(tmp_path, {"kernels/bad.py": _KERNEL.replace("{body}", body)})
    with pytest.raises(KernelSourceError) as refused:
        extract_kernels(root, "learner")
    message = str(refused.value)
    assert message.startswith("learner/kernels/bad.py:16: ") and "in kernel _kernel" in message
    assert why in message and "\n" not in message


_SIGNATURES = [
    ("@triton.jit(repr=lambda _: 'x')\ndef _kernel(x_ptr):", "the options a kernel may set"),
    ("@triton.jit\ndef _kernel(x_ptr, N: print('hi')):", "annotated tl.constexpr"),
    ("@triton.jit\ndef _kernel(x_ptr, N=os.sep):", "use a literal"),
    ("@functools.cache\n@triton.jit\ndef _kernel(x_ptr):", "only @triton.jit, @triton.autotune"),
    ("@triton.jit\ndef _kernel(*args):", "*args, **kwargs or keyword-only"),
    ("@triton.jit\ndef _kernel(x_ptr) -> os.sep:", "a return annotation"),
    ("@triton.jit(do_not_specialize=os.environ)\ndef _kernel(x_ptr):", "must be a literal"),
]


@pytest.mark.parametrize(("header", "why"), _SIGNATURES, ids=[h for h, _ in _SIGNATURES])
def test_decorators_annotations_and_defaults_must_be_literals(tmp_path, header, why):
    source = f"import functools\nimport os\n{_HEADER}\n\n{header}\n    pass\n"
    root = _package(tmp_path, {"bad.py": source})
    with pytest.raises(KernelSourceError, match=f"^learner/bad.py:\\d+: .*{_escape(why)}"):
        extract_kernels(root, "learner")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_link_to_a_file_outside_the_package_is_refused(tmp_path):
    root = _package(tmp_path, {"__init__.py": ""})
    (root / "softmax.py").symlink_to(ROOT / "reference" / "kernels" / "softmax.py")
    with pytest.raises(KernelSourceError, match="learner/softmax.py: a link to .* outside"):
        extract_kernels(root, "learner")


def test_a_file_that_does_not_parse_is_refused(tmp_path):
    root = _package(tmp_path, {"broken.py": "def f(:\n"})
    with pytest.raises(KernelSourceError, match=r"^learner/broken.py:1: cannot be parsed"):
        extract_kernels(root, "learner")


# --------------------------------------------------------------------------- untrusted traces


def _mutated(change) -> tuple[dict, list]:
    _, _, trace, described = _reference_recording("softmax")
    trace, described = json.loads(json.dumps(trace)), json.loads(json.dumps(described))
    change(trace, described)
    return trace, described


def _launch0(trace):
    return trace["launches"][0]


_LIES = [
    (lambda t, d: t.update(launches=[_launch0(t)] * 10_001), "10001 launches; a replay takes"),
    (lambda t, d: t["buffers"][1].update(nbytes=1 << 40), "a replay allows at most"),
    (lambda t, d: t["buffers"][1].update(id=7), r"trace.buffers\[1\].id: expected an integer"),
    (lambda t, d: t["buffers"][1].update(kind="python"), "kind: expected one of"),
    (lambda t, d: t["buffers"][1].update(dtype="object"), "dtype: expected a dtype name"),
    (lambda t, d: t["buffers"][0].update(size=[9, 96]), "do not span its 3072 bytes"),
    (lambda t, d: _launch0(t).update(grid=[-1, 1, 1]), r"the grid\[0\]: expected an integer"),
    (lambda t, d: _launch0(t).update(grid=[1, 1]), "is not 3 sizes"),
    (lambda t, d: _launch0(t)["options"].update(ir_override="/tmp/x"), "option 'ir_override'"),
    (lambda t, d: _launch0(t)["args"]["y_ptr"]["tensor"].update(buffer=5), "buffer: expected"),
    (lambda t, d: _launch0(t)["args"]["y_ptr"]["tensor"].update(offset=769), "lie outside its"),
    (lambda t, d: _launch0(t)["args"].pop("n_rows"), "argument n_rows was not recorded"),
    (lambda t, d: _launch0(t)["args"].update(z=1), "argument z is not a parameter"),
    (lambda t, d: _launch0(t)["args"].update(N={"eval": "1"}), "not a value the trace format"),
    (lambda t, d: _launch0(t)["args"].update(N={"unrecordable": "a list"}), "could not write"),
    (lambda t, d: _launch0(t).update(kernel="outside:os.system"), "os.system, a kernel defined"),
    (lambda t, d: _launch0(t).update(kernel="kernels/softmax.py::softmax"), "not a @triton.jit"),
    (lambda t, d: d[0].update(offset=1), "lie outside its 3072 bytes"),
    (lambda t, d: d.__setitem__(0, {"error": "a tuple"}), "output 0 cannot be replayed"),
    (lambda t, d: t.update(buffers="all"), "trace.buffers: expected a list"),
]


@pytest.mark.parametrize(("change", "why"), _LIES, ids=[w for _, w in _LIES])
def test_an_untrusted_trace_is_checked_before_anything_runs(change, why, reference_bundle):
    trace, described = _mutated(change)
    fresh = ops.OPS["softmax"].inputs((8, 96), DTYPE, 2, "cpu")
    with pytest.raises(ReplayError, match=why):
        replay(reference_bundle, trace, described, fresh, device="cpu", max_bytes=1 << 30)


def test_a_scalar_input_must_be_the_recorded_one(reference_bundle):
    inputs, _, trace, described = _reference_recording("rmsnorm")
    assert trace["scalars"] == {"eps": ops.RMSNORM_EPS}
    with pytest.raises(ReplayError, match="input eps is 0.001 here but the trace was recorded"):
        replay(reference_bundle, trace, described, dict(inputs, eps=1e-3), device="cpu")


def test_an_edited_bundle_is_refused(reference_bundle):
    _, _, trace, described = _reference_recording("softmax")
    modules = dict(reference_bundle.modules)
    modules["kernels/softmax.py"] += "\nimport os\nos.system('echo edited')\n"
    edited = KernelBundle(reference_bundle.package, modules, reference_bundle.kernels)
    with pytest.raises(ReplayError, match="changed after extraction"):
        replay(edited, trace, described, {}, device="cpu")
    with pytest.raises(ValueError, match="module key must be a relative .py path"):
        KernelBundle.from_dict({"package": "p", "modules": {"../x.py": ""}, "kernels": {}})
