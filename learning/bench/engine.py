"""``run(config) -> Report``: one benchmark run as a visible sequence of phases.

The order matters, and each phase says why it comes where it does (see :data:`PHASES`):

1. ``plan``: check the request and list the cases (ops x shapes x dtypes). Every bad input ends
   here, before any work, as one :class:`BenchInputError` line; so does an ``--output`` that
   already exists (a report is evidence: it is replaced only with ``--force``).
2. ``implementations``: import the reference modules; run the learner's function once per case
   in a separate process and keep only what its kernels did (``learning.bench.learner``). An
   unfinished exercise stops the run here.
3. ``idle check``: GPU utilization before any of our work (someone else's load slows figures).
4. ``prepare``: per case and variant, a call on poisoned memory, then the float64 oracle
   (computed only after the call returned) and a second look at the outputs a moment later
   (``learning.bench.gate``); a variant that fails is recorded as failed and never
   timed. Then JIT, autotuning, warm-up and (graph timing) capture. All cases are prepared
   before any is timed.
5. ``sample``: visits in a seeded random order; a clock warm-up burst before a visit when
   needed, one untimed run of every variant, then shuffled rounds of timed samples. With
   ``--max-noise``, more visits of each case whose samples are still noisier than asked, until
   they are quiet or the case's time is up. A thread reads the GPU's clocks, power and
   throttle reasons throughout (``learning.bench.telemetry``), and each round's start and end
   are kept, so that every round is summarised by the readings taken while it ran.
6. ``recheck``: each kernel variant once more the way it was timed, on fresh values written
   into the very input tensors the timed calls read, its outputs poisoned first; a variant
   whose timed work does not produce the answer is marked failed, its figures dropped.
7. ``report``: utilization after, figures from the samples, fingerprint, a warning for
   anything the measurement depends on that changed during the run (``learning.bench.tamper``),
   an atomic write that never replaces a file unless ``--force``.

Ctrl-C during 4 or 5 still writes a valid report of what was completed (``complete: false``,
re-checked first); an existing report is replaced only by a complete one.
"""

from __future__ import annotations

import os
import random
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.autograd.graph import increment_version

from learning import ops
from learning import report as report_format
from learning.bench import config as config_checks
from learning.bench import gate, tamper
from learning.bench.config import BenchConfig, BenchInputError
from learning.bench.machine import (
    ClockWarmer,
    PersistingL2,
    environment,
    idle_utilization,
)
from learning.bench.output import Progress
from learning.bench.record import build_report, correctness_record, recorded_samples
from learning.bench.schedule import schedule
from learning.bench.telemetry import Sampler
from learning.bench.timers import busy_wait_us, make_timer, out_of_memory
from learning.bench.variants import (
    Implementations,
    VariantSpec,
    case_variants,
    load_implementations,
)
from learning.report.stats import relative_spread


@dataclass
class Report:
    """What ``run`` returns: the report as written, and where it was written."""

    data: dict
    path: Path

    @property
    def complete(self) -> bool:
        return self.data["complete"]


@dataclass
class Timeline:
    """One thing sampled in a case's rounds: a variant, or the cold-cache flush-only graph."""

    timed: object = None
    samples: list[float] = field(default_factory=list)
    status: str = "pending"  # pending -> ready -> (timed on report) | failed | skipped
    reason: str | None = None


# Variants re-checked after timing: the kernels. The PyTorch baselines are what they compare
# with, not what is under test.
RECHECKED_KINDS = ("triton", "learner")


@dataclass
class VariantState(Timeline):
    variant: VariantSpec | None = None
    correctness: dict = field(default_factory=dict)
    rechecked: bool = False


@dataclass
class CaseState:
    spec: ops.OpSpec
    shape: tuple[int, ...]
    dtype: str
    variants: list[VariantState] = field(default_factory=list)
    flush: Timeline | None = None
    inputs: dict | None = None  # kept alive: the captured graphs read these buffers
    items: list[Timeline] = field(default_factory=list)  # what the schedule indexes
    windows: list[tuple[float, float]] = field(default_factory=list)  # each round's start, end
    extra_seconds: float = 0.0  # spent in visits --max-noise added

    @property
    def label(self) -> str:
        return f"{self.spec.name} {self.spec.shape_label(self.shape)} {self.dtype}"


@dataclass
class Run:
    config: BenchConfig
    progress: Progress
    device: str = "cpu"
    selection: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    numerics: dict = field(default_factory=dict)
    implementations: Implementations = field(default_factory=Implementations)
    timer: object = None
    warmer: ClockWarmer | None = None
    persisting_l2: PersistingL2 | None = None  # CUDA only: the L2-residency guard
    cases: list[CaseState] = field(default_factory=list)
    utilization: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    complete: bool = True
    snapshot: tamper.Snapshot | None = None  # what the measurement uses, as the run found it
    telemetry: Sampler | None = None  # the GPU's state while sampling


# --------------------------------------------------------------------------- phases


def plan(run: Run) -> None:
    config = run.config
    config_checks.check_numbers(config)
    config_checks.check_output(config.output, force=config.force)
    run.device = config_checks.resolve_device(config.device)
    run.selection = config_checks.select(config, run.device)
    ops.numerics_policy()  # once, before any baseline runs; recorded in the report
    matmul = torch.backends.cuda.matmul
    run.numerics = {
        "matmul_allow_tf32": matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "fp16_reduced_precision_reduction": matmul.allow_fp16_reduced_precision_reduction,
        "bf16_reduced_precision_reduction": matmul.allow_bf16_reduced_precision_reduction,
    }
    specs = _unique_specs(run.selection)
    dtypes = list(dict.fromkeys(dtype for _, _, dtype in run.selection))
    run.settings = config.settings(run.device, [s.name for s in specs], dtypes)
    run.environment = environment(run.device)


def implementations(run: Run) -> None:
    _start_l2_guard(run)
    run.implementations = load_implementations(run.selection, run.config, run.device)


def _start_l2_guard(run: Run) -> PersistingL2 | None:
    """Empty the context's persisting-L2 set-aside for the run (the driver may start with one:
    11.25 MiB on the H200 we measure on), so that no variant can keep lines resident through
    it; the set-aside is put back when the run ends."""
    if run.device != "cuda":
        return None
    # The limit belongs to the CUDA context, which the runtime creates lazily: a synchronize
    # makes it current (torch.cuda.init() alone does not, and the driver then answers nothing).
    torch.cuda.synchronize()
    guard = PersistingL2()
    found = guard.bytes()
    if found is None:
        run.warnings.append(
            "could not read the persisting-L2 limit from the CUDA driver: a variant that "
            "keeps data resident in L2 across the cold flush would not be caught"
        )
        return None
    guard.found = found
    guard.restore(0)
    guard.baseline = guard.bytes()
    run.environment["persisting_l2_bytes"] = {"found": found, "during_run": guard.baseline}
    run.persisting_l2 = guard
    return guard


def idle_check(run: Run) -> None:
    run.utilization["before"] = idle_utilization(run.device)


def prepare(run: Run) -> None:
    settings = run.settings
    run.timer = make_timer(
        run.device,
        settings["timing"],
        settings["cache"],
        settings["iterations"],
        settings["warmup_calls"],
        run.environment.get("l2_bytes"),
        flush=settings.get("flush", "read"),
    )
    run.warmer = ClockWarmer(enabled=run.device == "cuda" and settings["clock_burst"] == "on")
    if run.device == "cuda" and not run.warmer.enabled:
        run.warmer.off_note = "no GEMM bursts (--clock-burst off, the default on this course)"
    for index, (spec, shape, dtype) in enumerate(run.selection, start=1):
        case = CaseState(spec, shape, dtype)
        run.cases.append(case)
        _prepare_case(run, case)
        run.progress.prepared(index, len(run.selection), case.label)


def sample(run: Run) -> None:
    visits = schedule(
        [len(case.items) for case in run.cases],
        run.config.visits,
        run.settings["rounds_per_visit"],
        run.config.seed,
    )
    run.telemetry = Sampler.for_device(run.device)
    run.telemetry.start()
    try:
        for done, visit in enumerate(visits, start=1):
            _visit(run, run.cases[visit.case], visit.rounds)
            run.progress.visited(done, len(visits))
        _sample_until_quiet(run)
    finally:
        run.telemetry.stop()


def _visit(run: Run, case: CaseState, rounds) -> None:
    """One visit of ``case``: a warm-up burst when asked, one untimed run of each item, then
    one round per entry of ``rounds`` (the items' indices in the order they are timed)."""
    items, timer = case.items, run.timer
    if not any(item.status == "ready" for item in items):
        return
    run.warmer.before_visit()
    for item in items:
        if item.status == "ready":
            item.timed.replay_untimed()
    timer.finish_round()
    for order in rounds:
        start = time.perf_counter()
        pending = [(items[i], _start_sample(items[i])) for i in order]
        timer.finish_round()
        case.windows.append((start, time.perf_counter()))
        for item, read in pending:
            if read is not None and item.status == "ready":
                item.samples.append(read())


def noisy(run: Run, case: CaseState) -> bool:
    """Is some variant of ``case`` still short of ``--min-samples`` or noisier than
    ``--max-noise`` (its recorded samples' relative standard deviation)?"""
    config = run.config
    for state in case.variants:
        if state.status != "ready":
            continue
        samples = recorded_samples(case, state)
        spread = relative_spread(samples)
        if len(samples) < run.settings["min_samples"] or spread is None:
            return True
        if spread > config.max_noise:
            return True
    return False


def _sample_until_quiet(run: Run) -> None:
    """``--max-noise``: visit each noisy case again, in a seeded random order, until its
    samples are quiet, it has spent ``--max-seconds`` in such visits, or its variants hold
    ``config.MAX_SAMPLES`` samples."""
    config = run.config
    if config.max_noise is None:
        return
    rng = random.Random(f"{config.seed} max-noise")
    per_visit = run.settings["rounds_per_visit"]

    def still_open(case: CaseState) -> bool:
        room = len(case.windows) + per_visit <= config_checks.MAX_SAMPLES
        return room and case.extra_seconds < config.max_seconds and noisy(run, case)

    while True:
        pending = [case for case in run.cases if still_open(case)]
        if not pending:
            return
        rng.shuffle(pending)
        for case in pending:
            count = len(case.items)
            start = time.perf_counter()
            _visit(run, case, [tuple(rng.sample(range(count), count)) for _ in range(per_visit)])
            case.extra_seconds += time.perf_counter() - start
        run.progress.say(f"--max-noise: {len(pending)} cases sampled again")


def recheck(run: Run) -> None:
    """Each kernel variant's timed callable once more, on fresh values in the same input
    tensors, outputs poisoned (see ``learning.bench.gate``)."""
    for case in run.cases:
        pending = [
            state
            for state in case.variants
            if state.status == "ready" and state.variant.kind in RECHECKED_KINDS
        ]
        if not pending or case.inputs is None:
            continue
        dtype = ops.dtype_from_name(case.dtype)
        for state in pending:
            seed = secrets.randbits(31)  # values no code could have prepared for
            fresh = case.spec.inputs(case.shape, dtype, seed, run.device)
            gate.refill(case.inputs, fresh)
            del fresh
            try:
                poison = gate.poisoner(case.inputs)
                outputs = gate.trapped(lambda s=state, p=poison: s.timed.verify(p), run.device)
                check = gate.check_outputs(case.spec, case.inputs, outputs, dtype, run.device)
                del outputs
            except Exception as error:
                check = gate.Check(False, f"raised {type(error).__name__}: {_one_line(error)}")
            state.rechecked = True
            if not check.passed:
                _reject(
                    state,
                    "re-checked after timing, its timed call on fresh values in the same input "
                    f"tensors: {check.reason}",
                    check.record(),
                )


PHASES = (
    ("plan", plan),  # the request, checked whole before anything runs
    ("implementations", implementations),  # imports can fail: fail before any GPU work
    ("idle check", idle_check),  # before our own kernels make the GPU busy
    ("prepare", prepare),  # every case checked and captured before any timing
    ("sample", sample),  # visits across the whole run, so drift spreads over every case
    ("recheck", recheck),  # what was timed still gives the answer, on values it never saw
)


def run(config: BenchConfig) -> Report:
    """Carry out ``config``; write the report; return it. Raises BenchInputError on bad input."""
    snapshot = tamper.Snapshot(compiling=config.compile)
    state = Run(config=config, progress=Progress(config.quiet), snapshot=snapshot)
    try:
        for name, phase in PHASES:
            try:
                phase(state)
            except KeyboardInterrupt:
                if name in ("plan", "implementations"):
                    raise  # nothing measured yet: no report
                state.complete = False
                state.progress.note(f"interrupted during {name}; writing what was completed")
                if name == "sample":  # what was timed is re-checked before it is reported
                    try:
                        recheck(state)
                    except KeyboardInterrupt:
                        pass  # variants not re-checked are reported untimed
                break
    finally:
        if state.persisting_l2 is not None:  # the context's set-aside as the run found it
            state.persisting_l2.restore(state.persisting_l2.found)
    return _write(state)


# --------------------------------------------------------------------------- one case


def _prepare_case(run: Run, case: CaseState) -> None:
    spec, config = case.spec, run.config
    dtype = ops.dtype_from_name(case.dtype)
    run.timer.new_case()
    compile_mode = config.compile_mode if config.compile else None
    variants = case_variants(spec, case.shape, dtype, run.implementations, compile_mode)
    case.variants = [VariantState(variant=v) for v in variants]
    try:
        case.inputs = spec.inputs(case.shape, dtype, config.seed, run.device)
    except Exception as error:
        if not out_of_memory(error):
            raise
        case.inputs = None
        _release_memory(run.device)
        for state in case.variants:
            state.status, state.reason = (
                "skipped",
                f"out of memory preparing inputs: {_one_line(error)}",
            )
        return
    for state in case.variants:
        if state.variant.rejected:
            _reject(state, state.variant.rejected)
            continue
        before = run.persisting_l2.bytes() if run.persisting_l2 else None
        _check(run, case, state, dtype)
        if state.status == "ready":
            _prepare_timing(run, case, state)
        if before is not None:
            _guard_l2_residency(run, state, before)
    if run.timer.subtracts_flush and any(s.status == "ready" for s in case.variants):
        case.flush = Timeline(timed=run.timer.prepare_flush(), status="ready")
    case.items = [*case.variants, *([case.flush] if case.flush else [])]


def _guard_l2_residency(run: Run, state: VariantState, before: int) -> None:
    """A variant that set L2 aside for persisting accesses is rejected, and the set-aside undone:
    data held there survives the cold flush (and slows every other variant's warm runs). (The
    learner's own code runs in a process of its own, whose CUDA context ends before timing.)"""
    after = run.persisting_l2.bytes()
    if after is None or after <= before:
        return
    run.persisting_l2.restore(before)
    _reject(
        state,
        f"set aside {after / 2**20:.1f} MiB of L2 for persisting accesses "
        "(CU_LIMIT_PERSISTING_L2_CACHE_SIZE): data kept there survives the cold-cache flush, "
        "so its figures would not be what they claim; not timed",
    )


def _reject(state: VariantState, reason: str, record: dict | None = None) -> None:
    state.status, state.reason, state.timed, state.samples = "failed", reason, None, []
    state.correctness = record or correctness_record(False, None, None, reason)
    state.correctness["passed"], state.correctness["reason"] = False, reason


def _check(run: Run, case: CaseState, state: VariantState, dtype: torch.dtype) -> None:
    """The gate before timing: a first call whose outputs are poisoned and freed, then the
    checked call, then the checks of ``learning.bench.gate`` on what it returned."""
    spec, variant = case.spec, state.variant
    try:
        gate.first_call(lambda: variant.invoke(spec, case.inputs), case.inputs)
        outputs = gate.trapped(lambda: variant.invoke(spec, case.inputs), run.device)
        check = gate.check_outputs(spec, case.inputs, outputs, dtype, run.device)
        del outputs
    except Exception as error:
        if out_of_memory(error):
            state.status, state.reason = "skipped", f"out of memory: {_one_line(error)}"
            state.correctness = correctness_record(None, None, None, "not checked: out of memory")
            return
        reason = f"raised {type(error).__name__}: {_one_line(error)}"
        state.status, state.reason = "failed", reason
        state.correctness = correctness_record(False, None, None, reason)
        return
    state.correctness = check.record()
    state.status = "ready" if check.passed else "failed"
    state.reason = check.reason


def _prepare_timing(run: Run, case: CaseState, state: VariantState) -> None:
    variant, spec, inputs, delay = state.variant, case.spec, case.inputs, run.config.host_delay_us

    def invoke() -> object:
        if delay:
            busy_wait_us(delay)  # debug: a host-side stall inside the callable
        return variant.invoke(spec, inputs)

    def touch() -> None:  # a new version number before each call: see learning.bench.timers
        for value in inputs.values():
            if torch.is_tensor(value):
                increment_version(value)

    try:
        state.timed = run.timer.prepare(invoke, touch)
    except Exception as error:
        if hasattr(run.timer, "pool"):  # a failed capture can leave its pool recording
            run.timer.new_case()
        _release_memory(run.device)
        what = "out of memory" if out_of_memory(error) else f"{type(error).__name__}"
        state.status = "skipped"
        state.reason = (
            f"passed the oracle but could not be prepared for timing ({what}): {_one_line(error)}"
        )


def _start_sample(item: Timeline):
    if item.status != "ready":
        return None
    try:
        return item.timed.sample()
    except Exception as error:
        item.status, item.samples = "skipped", []
        item.reason = f"raised while being timed: {type(error).__name__}: {_one_line(error)}"
        return None


def incomplete_path(output: Path) -> Path:
    """Where an interrupted run writes when a report already exists at ``output``."""
    return output.with_name(f"{output.stem}.incomplete{output.suffix or '.json'}")


def _numbered(path: Path, number: int) -> Path:
    return path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")


def write_new(data: dict, path: Path) -> bool:
    """Write ``data`` to ``path`` all at once, only if no file is there (False if one is).

    The report is written whole under a temporary name, then linked to ``path``: a link, unlike
    a rename, fails when the name exists, so a report that appeared meanwhile (another run
    writing the same file) is never replaced, and a crash leaves no half-written report.
    """
    path = Path(path)
    staged = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.staged")
    report_format.write_atomic(data, staged)
    try:
        os.link(staged, path)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: claim the name, then replace it
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return False
        os.replace(staged, path)
    finally:
        staged.unlink(missing_ok=True)
    return True


def _write(run: Run) -> Report:
    fallback = getattr(run.timer, "fallback_reason", None)
    if fallback:
        run.warnings.append(
            "cold cache: in-graph events were not available "
            f"({fallback}); fell back to subtracting a flush-only graph's median (noisier)"
        )
    changed = tamper.warning(run.snapshot.changes()) if run.snapshot else None
    if changed:
        run.warnings.append(changed)
    data = build_report(run)
    output = Path(run.config.output)
    if run.complete and run.config.force:
        report_format.write_atomic(data, output)  # asked for: replace what is there
        path = output
    else:
        # Never over an existing file: an interrupted run beside it, a report that appeared
        # during the run under the next free number.
        first = output if run.complete or not output.exists() else incomplete_path(output)
        number = 1
        while not write_new(data, _numbered(first, number)):
            number += 1
        path = _numbered(first, number)
        if path != output and run.complete:
            run.progress.note(f"{output} appeared during the run; it is left as it is")
    for warning in run.warnings:
        run.progress.note(f"warning: {warning}")
    return Report(data=data, path=path)


# --------------------------------------------------------------------------- helpers


def _unique_specs(selection: list) -> list[ops.OpSpec]:
    return list({spec.name: spec for spec, _, _ in selection}.values())


def _release_memory(device: str) -> None:
    if device == "cuda":
        torch.cuda.empty_cache()


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""


__all__ = ["PHASES", "BenchConfig", "BenchInputError", "Report", "run"]
