"""``run(config) -> Report``: one benchmark run as a visible sequence of phases.

The order matters, and each phase says why it comes where it does (see :data:`PHASES`):

1. ``plan``: check the request and list the cases (ops x shapes x dtypes). Every bad input ends
   here, before any work, as one :class:`BenchInputError` line.
2. ``implementations``: import the kernel modules; an unfinished exercise stops the run here.
3. ``idle check``: GPU utilization before any of our work (someone else's load slows figures).
4. ``prepare``: per case, inputs, the float64 oracle and every variant checked against it; a
   variant that fails is recorded as failed and never timed. Then JIT, autotuning, warm-up and
   (graph timing) capture. All cases are prepared before any is timed.
5. ``sample``: visits in a seeded random order; a clock warm-up burst before a visit when
   needed, one untimed run of every variant, then shuffled rounds of timed samples.
6. ``report``: utilization after, figures from the samples, fingerprint, an atomic write.

Ctrl-C during 4 or 5 still writes a valid report of what was completed (``complete: false``);
an existing report is replaced only by a complete one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from learning import correctness, ops
from learning import report as report_format
from learning.bench import config as config_checks
from learning.bench.config import BenchConfig, BenchInputError
from learning.bench.machine import (
    ClockWarmer,
    PersistingL2,
    environment,
    idle_utilization,
)
from learning.bench.output import Progress
from learning.bench.record import build_report, correctness_record
from learning.bench.schedule import schedule
from learning.bench.timers import busy_wait_us, make_timer, out_of_memory
from learning.bench.variants import (
    Implementations,
    VariantSpec,
    case_variants,
    load_implementations,
)


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


@dataclass
class VariantState(Timeline):
    variant: VariantSpec | None = None
    correctness: dict = field(default_factory=dict)


@dataclass
class CaseState:
    spec: ops.OpSpec
    shape: tuple[int, ...]
    dtype: str
    variants: list[VariantState] = field(default_factory=list)
    flush: Timeline | None = None
    inputs: dict | None = None  # kept alive: the captured graphs read these buffers
    items: list[Timeline] = field(default_factory=list)  # what the schedule indexes

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
    learner_rejected: str | None = None  # why every learner variant fails untimed
    cases: list[CaseState] = field(default_factory=list)
    utilization: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    complete: bool = True


# --------------------------------------------------------------------------- phases


def plan(run: Run) -> None:
    config = run.config
    config_checks.check_numbers(config)
    config_checks.check_output(config.output)
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
    guard = _start_l2_guard(run)
    run.implementations = load_implementations(_unique_specs(run.selection), run.config, run.device)
    if guard is not None:
        # the learner's modules ran once (a preflight call): did that set L2 aside?
        _guard_l2_residency(run, None, guard.baseline)


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
    timer, warmer = run.timer, run.warmer
    for done, visit in enumerate(visits, start=1):
        items = run.cases[visit.case].items
        if any(item.status == "ready" for item in items):
            warmer.before_visit()
            for item in items:
                if item.status == "ready":
                    item.timed.replay_untimed()
            timer.finish_round()
            for order in visit.rounds:
                pending = [(items[i], _start_sample(items[i])) for i in order]
                timer.finish_round()
                for item, read in pending:
                    if read is not None and item.status == "ready":
                        item.samples.append(read())
        run.progress.visited(done, len(visits))


PHASES = (
    ("plan", plan),  # the request, checked whole before anything runs
    ("implementations", implementations),  # imports can fail: fail before any GPU work
    ("idle check", idle_check),  # before our own kernels make the GPU busy
    ("prepare", prepare),  # every case checked and captured before any timing
    ("sample", sample),  # visits across the whole run, so drift spreads over every case
)


def run(config: BenchConfig) -> Report:
    """Carry out ``config``; write the report; return it. Raises BenchInputError on bad input."""
    state = Run(config=config, progress=Progress(config.quiet))
    try:
        for name, phase in PHASES:
            try:
                phase(state)
            except KeyboardInterrupt:
                if name in ("plan", "implementations"):
                    raise  # nothing measured yet: no report
                state.complete = False
                state.progress.note(f"interrupted during {name}; writing what was completed")
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
        expected = spec.expected(case.inputs)
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
        if run.learner_rejected and state.variant.kind == "learner":
            _reject(state, run.learner_rejected)
            continue
        before = run.persisting_l2.bytes() if run.persisting_l2 else None
        _check(case, state, expected, dtype)
        if state.status == "ready":
            _prepare_timing(run, case, state)
        if before is not None:
            _guard_l2_residency(run, state, before)
    del expected
    if run.timer.subtracts_flush and any(s.status == "ready" for s in case.variants):
        case.flush = Timeline(timed=run.timer.prepare_flush(), status="ready")
    case.items = [*case.variants, *([case.flush] if case.flush else [])]


def _guard_l2_residency(run: Run, state: VariantState | None, before: int) -> None:
    """A variant that set L2 aside for persisting accesses is rejected, and the set-aside undone:
    data held there survives the cold flush (and slows every other variant's warm runs).
    ``state`` None: the learner's modules did it while being imported and tried once, so every
    learner variant of the run is rejected."""
    after = run.persisting_l2.bytes()
    if after is None or after <= before:
        return
    run.persisting_l2.restore(before)
    reason = (
        f"set aside {after / 2**20:.1f} MiB of L2 for persisting accesses "
        "(CU_LIMIT_PERSISTING_L2_CACHE_SIZE): data kept there survives the cold-cache flush, "
        "so its figures would not be what they claim; not timed"
    )
    if state is None:
        run.learner_rejected = reason
    else:
        _reject(state, reason)


def _reject(state: VariantState, reason: str) -> None:
    state.status, state.reason, state.timed = "failed", reason, None
    state.correctness = correctness_record(False, None, None, reason)


def _check(case: CaseState, state: VariantState, expected, dtype: torch.dtype) -> None:
    spec = case.spec
    try:
        outputs = spec.call(state.variant.fn, case.inputs)
    except Exception as error:
        if out_of_memory(error):
            state.status, state.reason = "skipped", f"out of memory: {_one_line(error)}"
            state.correctness = correctness_record(None, None, None, "not checked: out of memory")
            return
        reason = f"raised {type(error).__name__}: {_one_line(error)}"
        state.status, state.reason = "failed", reason
        state.correctness = correctness_record(False, None, None, reason)
        return
    verdicts = correctness.compare_all(
        outputs,
        expected,
        spec.tolerances[dtype],
        dtype=dtype,
        labels=correctness.output_labels(spec),
    )
    del outputs
    passed = all(v.passed for v in verdicts)
    errors = [v.max_abs_error for v in verdicts if v.max_abs_error is not None]
    used = [v.tolerance_used for v in verdicts if v.tolerance_used is not None]
    reason = "; ".join(v.reason for v in verdicts if not v.passed) or None
    state.correctness = correctness_record(
        passed, max(errors, default=None), max(used, default=None), reason
    )
    state.status = "ready" if passed else "failed"
    state.reason = None if passed else f"failed the float64 oracle: {reason}"


def _prepare_timing(run: Run, case: CaseState, state: VariantState) -> None:
    fn, inputs, call, delay = (
        state.variant.fn,
        case.inputs,
        case.spec.call,
        run.config.host_delay_us,
    )

    def invoke() -> None:
        if delay:
            busy_wait_us(delay)  # debug: a host-side stall inside the callable
        call(fn, inputs)

    try:
        state.timed = run.timer.prepare(invoke)
    except Exception as error:
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


def _write(run: Run) -> Report:
    fallback = getattr(run.timer, "fallback_reason", None)
    if fallback:
        run.warnings.append(
            "cold cache: in-graph events were not available "
            f"({fallback}); fell back to subtracting a flush-only graph's median (noisier)"
        )
    data = build_report(run)
    output = Path(run.config.output)
    path = output if run.complete or not output.exists() else incomplete_path(output)
    report_format.write_atomic(data, path)
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
