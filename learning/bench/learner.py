"""The learner's variant, timed without running the learner's Python in the timing process.

A benchmark that imports a learner's module into its own process can be told anything: the
module can rescale the timers, slow the PyTorch baseline, switch off the oracle gate, find the
float64 oracle in memory, cache results, or do its work on another thread or stream. So
kernel-bench never imports it. For each case it:

1. **records** (untrusted, another process: :mod:`learning.bench.worker`): the learner's
   function is called once on inputs of the case's shape, dtype and device, with every Triton
   launch written down (:class:`learning.check.replay.TraceRecorder`). Only the trace comes
   back, as plain data (``torch.load(weights_only=True)``, sizes bounded). The process is
   ended before anything is timed.
2. **extracts** (here, by parsing only): the ``@triton.jit`` functions of the learner's
   package files (:func:`learning.check.replay.extract_kernels`, an allow-list of Triton
   constructs; nothing else of those files is run).
3. **verifies** (here): the trace is replayed with those kernels on HIDDEN inputs this process
   draws (never sent anywhere), with allocations poisoned; the variant is rejected, with the
   reason, unless every output element was stored, nothing was stored outside its buffers, the
   inputs are unchanged and the result matches the float64 oracle. The trace is read as the
   checker reads it (``learning.check.replaying.fresh_outputs``, and the copies and casts
   between the launches made again: ``learning.check.replay.plumbing``), so the two accept
   and refuse the same calls.
4. **times** :class:`learning.check.replay.ReplayProgram`: the learner's kernels, launched as
   their function launched them. It then goes through the same gate, timing and re-check as
   every other variant (:mod:`learning.bench.gate`).

What is timed is therefore the work the learner's kernels do, and nothing the learner's Python
did can reach the timers, the baselines, the gate or the oracle.
"""

from __future__ import annotations

import ast
import importlib.util
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from learning import correctness, ops
from learning.bench.config import BenchInputError
from learning.report.fingerprint import report_path

WORKER_PROGRAM = Path(__file__).with_name("worker.py")
# The course's helpers the exercises import (reference.kernels.row_plan, .launch ...): those the
# learner's function loaded planned and launched its kernels, so the report names them too.
COURSE_HELPERS = Path(__file__).resolve().parents[2] / "reference"
CALL_LIMIT_S = 600.0  # one recorded call in the learner's process (interpreter runs are slow)

METHOD_NOTE = (
    "timed by replaying its kernels' launches: its function ran once, in a separate process, "
    "on inputs of this case's shape while its Triton launches were recorded; the kernels were "
    "read from its files (allow-listed Triton only) and the launches replayed here on hidden "
    "inputs (checked against the float64 oracle) and then timed; none of its Python ran in "
    "the timing process"
)
REPLAY_FAILED = (
    "replaying only your kernels' launches on new inputs {what}: part of the result came from "
    "PyTorch, from a cache, or from state outside your kernels"
)


@dataclass
class LearnerCase:
    """One case's learner variant: the program to time, or why there is none."""

    call: Callable[[dict], tuple] | None = None
    reason: str | None = None


@dataclass
class Learner:
    """The learner's side of a run: its kernels (parsed), files and per-case programs."""

    package: str
    root: Path
    files: list[Path] = field(default_factory=list)  # what the report fingerprints
    cases: dict[tuple, LearnerCase] = field(default_factory=dict)  # (op, shape, dtype) ->


def package_root(package: str) -> Path:
    """Where ``package`` lives, found without importing (and so without running) it."""
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found else []
    if not locations:
        raise BenchInputError(f"cannot find the learner package {package!r} (a folder on the path)")
    return Path(locations[0]).resolve()


def module_file(root: Path, spec: ops.OpSpec) -> Path:
    return root.joinpath(*spec.module.split(".")).with_suffix(".py")


def stub_kernels(source: str) -> list[str]:
    """Names of the Triton kernels in ``source`` whose body is only ``pass`` (and a docstring)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    stubs = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
        if not any(word in decorators for word in ("jit", "autotune", "heuristics")):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        if all(isinstance(statement, ast.Pass) for statement in body):
            stubs.append(node.name)
    return stubs


def prepare_learner(
    selection: list, package: str, seed: int, device: str, limit_s: float = CALL_LIMIT_S
) -> Learner:
    """Record, extract and verify the learner's variant of every case in ``selection``.

    A request error (exit 2, before any timing): the package or a module is missing, a module
    does not import, lacks the function or raises ``NotImplementedError``, a TODO kernel does
    not work, or a kernel uses a construct the replay refuses. A kernel that runs but cannot be
    verified is not: its variant is recorded as failed, with the reason, per case.
    """
    from learning.check import integrity, remote
    from learning.check.replay import KernelSourceError, extract_kernels

    root = package_root(package)
    learner = Learner(package, root)
    specs = {spec.name: spec for spec, _, _ in selection}
    for spec in specs.values():
        path = module_file(root, spec)
        if not path.is_file():
            raise BenchInputError(f"learner module {package}.{spec.module} not found ({path})")
    try:
        bundle = extract_kernels(root, package)
    except KernelSourceError as error:
        raise BenchInputError(f"the learner's kernels cannot be replayed: {error}") from None
    learner.files = _files(root, bundle, specs.values())
    child = remote.Child(
        WORKER_PROGRAM.read_text(encoding="utf-8"),
        "main({}, {}, {})",
        remote.clean_environment([root.parent]),
        "learner's process",
    )
    # Every call is recorded first, then the learner's process and anything it started are
    # ended and the files this process loads are checked, and only then is anything replayed:
    # no learner code runs while its kernels are loaded here, and none can have changed them.
    integrity.become_subreaper()
    own_children = set(integrity.children())
    on_disk = integrity.snapshot(exclude=[root])
    recorded: dict = {}
    try:
        for spec in specs.values():
            _import(child, spec, learner, limit_s)
        for spec, shape, dtype in selection:
            recorded[(spec.name, tuple(shape), dtype)] = _record_case(
                child, learner, spec, shape, dtype, seed, device, limit_s
            )
    finally:
        child.close()  # nothing of the learner's runs while anything is timed
        integrity.kill_strays(keep=own_children)
    changed = integrity.changed(on_disk)
    if changed:
        raise BenchInputError(
            "the learner's code changed files the benchmark itself runs, so nothing it "
            f"measures could be trusted: {', '.join(changed)}"
        )
    for (spec, shape, dtype), key in zip(selection, recorded, strict=True):
        case = recorded[key]
        if not isinstance(case, LearnerCase):
            case = _verify_case(bundle, learner, spec, shape, dtype, case, device)
        learner.cases[key] = case
    return learner


def _files(root: Path, bundle, specs) -> list[Path]:
    """The learner files the run used: each op's module, the packages' ``__init__.py`` files
    above it, and every file the kernels were extracted from."""
    files = {root / relpath for relpath in bundle.modules}
    for spec in specs:
        path = module_file(root, spec)
        files.add(path)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if init.is_file():
                files.add(init)
    return sorted(files)


def _record_case(child, learner, spec, shape, dtype_name, seed, device, limit_s):
    """The learner's process runs the function once and sends its trace back: the reply, or a
    failed case."""
    from learning.check import protocol, remote

    name = f"{learner.package}.{spec.module}"
    message = {
        "kind": "bench_kernel", "op": spec.name, "module": name, "function": spec.function,
        "package": learner.package, "shape": list(shape), "dtype": dtype_name, "seed": seed,
        "device": device,
    }  # fmt: skip
    try:
        reply = child.request(message, limit_s)
    except remote.CallTimedOut as error:
        return LearnerCase(reason=f"its function {error} (recorded once, in its own process)")
    except remote.ProcessDied as error:
        return LearnerCase(reason=f"its process died while its function ran: {error.reason}")
    except protocol.BadReply as error:
        return LearnerCase(reason=f"its process sent a reply the protocol refuses: {error}")
    if reply.get("ok") is not True:
        _request_errors(spec, name, learner, reply.get("error"))
        error = protocol.revive_error(reply.get("error"))
        return LearnerCase(reason=f"raised {type(error).__name__}: {_one_line(error)}")
    if reply.get("missing") is True:
        raise BenchInputError(f"learner module {name} has no function {spec.function}()")
    loaded = [*_loaded_files(learner.root, reply.get("files")),
              *_loaded_files(COURSE_HELPERS, reply.get("helpers"))]  # fmt: skip
    learner.files = sorted({*learner.files, *loaded})
    return reply


def _verify_case(bundle, learner, spec, shape, dtype_name, reply: dict, device) -> LearnerCase:
    """Replay the recorded launches on hidden inputs; the timed call if they hold."""
    from learning.check.replay import ReplayError, ReplayProgram, replay
    from learning.check.replaying import fresh_outputs

    name = f"{learner.package}.{spec.module}"
    described = reply.get("described")
    trace = fresh_outputs(reply.get("trace"), described)  # as the checker replays it
    outside = _outside_launch(trace, learner.package)
    if outside:
        return _unfinished_or(spec, name, learner, outside)
    dtype = ops.dtype_from_name(dtype_name)
    hidden = spec.inputs(shape, dtype, secrets.randbits(31), device)  # never sent anywhere
    try:
        result = replay(bundle, trace, described, _detached(hidden), device=device)
    except ReplayError as error:
        return _unfinished_or(spec, name, learner, f"its launches cannot be replayed: {error}")
    except Exception as error:  # a kernel that fails to compile or run when replayed
        why = f"replaying its launches raised {type(error).__name__}: {_one_line(error)}"
        return _unfinished_or(spec, name, learner, why)
    problems = [*result.unwritten, *result.stray_stores, *result.inputs_changed]
    if result.unwritten:
        what = f"left {'; '.join(result.unwritten)}"
        return _unfinished_or(spec, name, learner, REPLAY_FAILED.format(what=what))
    if problems:
        return LearnerCase(reason=f"replaying its kernels on new inputs: {'; '.join(problems)}")
    verdicts = correctness.compare_all(
        result.outputs,
        spec.expected(hidden),
        spec.tolerances[dtype],
        dtype=dtype,
        labels=correctness.output_labels(spec),
    )
    if not all(v.passed for v in verdicts):
        reasons = "; ".join(v.reason for v in verdicts if not v.passed)
        what = f"gave a different result ({reasons})"
        return _unfinished_or(spec, name, learner, REPLAY_FAILED.format(what=what))
    del result, hidden
    try:
        program = ReplayProgram(bundle, trace, described, device=device)
    except Exception as error:
        return LearnerCase(reason=f"its launches cannot be replayed: {_one_line(error)}")

    def call(inputs: dict) -> tuple:
        return tuple(program(**_detached(inputs)))

    return LearnerCase(call=call)


def _outside_launch(trace: object, package: str) -> str | None:
    """The first launch of a kernel defined outside the learner's package, named: a kernel of
    the course's, such as the Gluon kernel the exercise's GEMM hands 16-bit products to on a
    Hopper GPU. Only the learner's own kernels are replayed and timed (said before the replay
    would stop at that launch's arguments, which a Gluon kernel's descriptors may be)."""
    launches = trace.get("launches") if isinstance(trace, dict) else None
    for index, launch in enumerate(launches if isinstance(launches, list) else []):
        kernel = launch.get("kernel") if isinstance(launch, dict) else None
        if isinstance(kernel, str) and kernel.startswith("outside:"):
            return (f"launch {index} runs {kernel.removeprefix('outside:')[:200]}, a kernel "
                    f"defined outside your {package} package: only your own kernels are "
                    "replayed and timed")
    return None


def _import(child, spec, learner: Learner, limit_s: float) -> None:
    """Import the op's module in the learner's process; any failure is a request error."""
    from learning.check import protocol, remote
    from learning.check.replay.extract import moved_helper

    name = f"{learner.package}.{spec.module}"
    message = {"kind": "import", "module": name, "package": learner.package}
    try:
        reply = child.request(message, limit_s)
    except (remote.CallTimedOut, remote.ProcessDied, protocol.BadReply) as error:
        raise BenchInputError(f"cannot import the learner module {name}: {error}") from None
    if reply.get("ok") is True:
        return
    error = protocol.revive_error(reply.get("error"))
    if error.not_implemented:
        raise BenchInputError(
            f"exercise {spec.exercise} is unfinished ({name} raises NotImplementedError when "
            f"imported: {_one_line(error) or 'TODO'}); finish it, or run --impl reference"
        )
    moved = moved_helper(str(error), learner.package)  # a helper the package once held
    raise BenchInputError(
        f"cannot import the learner module {name}: {type(error).__name__}: {_one_line(error)}"
        + (f"; {moved}" if moved else "")
    )


def _loaded_files(root: Path, names: object) -> list[Path]:
    """The files under ``root`` the learner's process says it loaded, each checked to be one
    (the claim only adds files to the fingerprint; it can take none away)."""
    if not isinstance(names, list):
        return []
    files = []
    for name in names[:1000]:
        if not isinstance(name, str) or not name.endswith(".py") or name.startswith("/"):
            continue
        path = (root / name).resolve()
        if path.is_relative_to(root) and path.is_file():
            files.append(path)
    return files


def _request_errors(spec, name: str, learner: Learner, info) -> None:
    """A call that raised and means "not ready to benchmark": a request error (exit 2)."""
    from learning.check import protocol

    error = protocol.revive_error(info)
    if error.not_implemented:
        raise BenchInputError(
            f"exercise {spec.exercise} is unfinished ({name} raises NotImplementedError: "
            f"{_one_line(error) or 'TODO'}); finish it, or run --impl reference"
        )
    stubs = stub_kernels(module_file(learner.root, spec).read_text(encoding="utf-8"))
    if stubs:
        raise BenchInputError(_unfinished(spec, learner, stubs))


def _unfinished(spec, learner: Learner, stubs: list[str]) -> str:
    where = report_path(module_file(learner.root, spec))  # repository-relative when inside
    return (
        f"exercise {spec.exercise} is unfinished ({where} still has TODO kernels: "
        f"{', '.join(stubs)}); finish it (python -m learning.check {spec.exercise}) "
        "or run --impl reference"
    )


def _unfinished_or(spec, name: str, learner: Learner, reason: str) -> LearnerCase:
    stubs = stub_kernels(module_file(learner.root, spec).read_text(encoding="utf-8"))
    if stubs:
        raise BenchInputError(_unfinished(spec, learner, stubs))
    return LearnerCase(reason=reason)


def _detached(inputs: dict) -> dict:
    return {k: v.detach() if torch.is_tensor(v) else v for k, v in inputs.items()}


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""
