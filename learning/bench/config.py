"""What a benchmark run is asked to do (:class:`BenchConfig`) and the checks on that request.

Everything a user can get wrong is checked here, before any work: a bad request ends as one
:class:`BenchInputError` line (the command prints it and exits 2) and no file is written.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from learning import ops, runtime
from learning.bench import suite as shape_suite

TIMINGS = ("graph", "events")
CACHES = ("warm", "cold")
FLUSHES = ("read", "write")  # how a cold-cache flush evicts the L2 (see timers.make_flush)
BURSTS = ("on", "off")  # the GEMM burst before each visit (machine.ClockWarmer)
# --compile-mode -> torch.compile's mode. max-autotune leaves out Inductor's own CUDA graphs
# (its cudagraph trees): kernel-bench captures every variant in a CUDA graph of its own, and a
# graph that Inductor records inside that capture conflicts with it.
COMPILE_MODES = {"default": "default", "max-autotune": "max-autotune-no-cudagraphs"}
IMPLS = ("reference", "learner")
DEVICES = ("auto", "cuda", "cpu")
HOST_DELAY_ENV = "KERNEL_BENCH_HOST_DELAY_US"

GRAPH_INVOCATIONS = 30  # calls captured in one CUDA graph (warm cache); a sample is one replay
WARMUP_CALLS = 5  # after the oracle check (JIT, autotuning), before capture
DEFAULT_ITERATIONS = {"graph-warm": GRAPH_INVOCATIONS, "graph-cold": 10, "events": 10, "cpu": 1}
MARGIN_PCT = 2.0  # the verdicts' practical margin (learning.report.stats)
MAX_SAMPLES = 300  # --max-noise never takes a case's variants past this many samples


class BenchInputError(ValueError):
    """A request the benchmark cannot run; its message is the one line shown to the user."""


@dataclass(frozen=True)
class BenchConfig:
    """One ``kernel-bench`` invocation. ``learning.bench.run(config)`` carries it out."""

    op: str | None  # an op or a group; None with a suite
    output: Path
    shapes: tuple[tuple, ...] | None = None  # None: the spec's default (or CPU) shapes
    cases: tuple[str, ...] | None = None  # "op/MxN/dtype": only these of the selected cases
    dtype: str | None = None  # None: every dtype the op supports
    compile: bool = False  # add Inductor's version of the first PyTorch baseline
    compile_mode: str = "default"  # how Inductor builds it (a key of COMPILE_MODES)
    cache: str = "warm"  # "cold": flush the L2 before every timed call
    flush: str = "read"  # cold cache: "read" leaves clean lines, "write" dirty ones
    clock_burst: str = "off"  # "on": a GEMM burst before each visit (GPUs whose clocks ramp)
    timing: str = "graph"  # "graph" (CUDA graph replay) or "events" (dispatch-sensitive)
    samples: int = 9  # per variant and case; a multiple of visits
    visits: int = 3  # times each case is visited, in a seeded random order
    iterations: int | None = None  # calls averaged in one sample; None: the mode's default
    seed: int = 0  # inputs and every shuffle
    impl: str = "reference"  # "learner": the learner's kernel beside the reference
    device: str = "auto"
    reference_package: str = "reference"  # tests substitute a throwaway package
    learner_package: str = "exercises"
    host_delay_us: float = 0.0  # debug: busy-wait inside every timed callable (host side)
    quiet: bool = False  # no progress lines, no table
    force: bool = False  # replace an existing report at ``output`` (refused without it)
    worker_timeout_s: float = 600.0  # the learner's call in its own process must return by then
    margin: float = MARGIN_PCT  # percent: the verdicts' practical margin, either way
    max_noise: float | None = None  # percent: sample a case until its noise is below this
    min_samples: int | None = None  # with max_noise: at least this many (None: samples)
    max_seconds: float = 10.0  # with max_noise: the most a case spends in added visits
    keep_throttled: bool = False  # keep rounds that ran throttled in the verdicts
    suite: str | None = None  # instead of op: the cases of a shape suite (learning.bench.suite)
    suite_seed: int | None = None  # the suite's seed (None: 0 with a suite)

    def settings(self, device: str, ops_run: list[str], dtypes: list[str]) -> dict:
        """The report's ``settings``: every field, resolved, plus the figures the method fixed."""
        values = asdict(self)
        for local in ("quiet", "force", "worker_timeout_s"):  # how to run, not what was measured
            values.pop(local)
        timing = "cpu-interpreter" if device == "cpu" else self.timing
        return {
            **values,
            "output": str(self.output),
            "shapes": [list(s) for s in self.shapes] if self.shapes else None,
            "cases": list(self.cases) if self.cases else None,
            "ops": ops_run,
            "dtypes": dtypes,
            "device": device,
            "timing": timing,
            "requested_timing": self.timing,
            "iterations": self.resolved_iterations(device),
            "rounds_per_visit": self.samples // self.visits,
            "graph_invocations": GRAPH_INVOCATIONS if timing == "graph" else None,
            "warmup_calls": WARMUP_CALLS if device == "cuda" else 1,
            "margin": self.margin / 100,
            "max_noise": self.max_noise,
            "min_samples": self.samples if self.min_samples is None else self.min_samples,
            "max_seconds": self.max_seconds if self.max_noise is not None else None,
            "max_samples": MAX_SAMPLES if self.max_noise is not None else None,
            "suite_seed": self.resolved_suite_seed(),
        }

    def resolved_suite_seed(self) -> int | None:
        if self.suite is None:
            return None
        return 0 if self.suite_seed is None else self.suite_seed

    def resolved_iterations(self, device: str) -> int:
        if self.iterations is not None:
            return self.iterations
        if device == "cpu":
            return DEFAULT_ITERATIONS["cpu"]
        if self.timing == "events":
            return DEFAULT_ITERATIONS["events"]
        return DEFAULT_ITERATIONS[f"graph-{self.cache}"]


def host_delay_from_environment() -> float:
    """``KERNEL_BENCH_HOST_DELAY_US`` (debug): the host delay the command line applies."""
    raw = os.environ.get(HOST_DELAY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise BenchInputError(
            f"{HOST_DELAY_ENV} must be a number of microseconds, got {raw!r}"
        ) from None
    if value < 0:
        raise BenchInputError(f"{HOST_DELAY_ENV} must be >= 0, got {raw}")
    return value


def resolve_device(requested: str) -> str:
    if requested not in DEVICES:
        raise BenchInputError(f"unknown device {requested!r}; choose one of {', '.join(DEVICES)}")
    available = runtime.default_device()  # "cuda" when compiled, "cpu" under the interpreter
    if requested == "auto":
        return available
    if requested == "cuda" and available != "cuda":
        raise BenchInputError("--device cuda: no CUDA GPU here (kernels run in the interpreter)")
    if requested == "cpu" and available != "cpu":
        raise BenchInputError(
            "--device cpu on a GPU machine needs the interpreter chosen at start: "
            "run TRITON_INTERPRET=1 kernel-bench ... --device cpu"
        )
    return requested


def check_output(path: Path, force: bool = False) -> None:
    """The output's directory must exist and be writable, and the path must not be a folder.

    A report is evidence: an existing file is never replaced unless ``force`` says so (a CPU
    run writing over a recorded GPU report would otherwise lose it without a word).
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise BenchInputError(
            f"--output {path} is a directory; give a file name such as {path}/run.json"
        )
    if not parent.is_dir():
        raise BenchInputError(f"--output {path}: directory {parent} does not exist")
    try:  # the report is written as a temporary file in this directory, then renamed
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as error:
        raise BenchInputError(
            f"--output {path}: cannot write in {parent} ({error.strerror or error})"
        ) from None
    if path.exists() and not path.is_file():
        raise BenchInputError(f"--output {path} exists and is not a regular file")
    if path.exists() and not force:
        raise BenchInputError(
            f"--output {path} already exists; a report is evidence, so it is never replaced "
            "unless you pass --force (or choose a new file name)"
        )


def precheck(config: BenchConfig) -> None:
    """Every refusal that needs no op definition (and so no torch): the op and dtype names,
    the numbers, the output file. ``kernel-bench`` asks it before it imports the engine, so a
    mistyped command line is refused in a fraction of a second; the run asks it again."""
    check_selection(config)
    check_numbers(config)
    check_output(config.output, force=config.force)
    if importlib.util.find_spec("scipy") is None:  # asked now, not after the whole run
        raise BenchInputError(
            "scipy is not installed: the verdicts' intervals need its Student's t quantiles "
            "(pip install scipy, or carry its wheel to a machine that cannot install)"
        )


def check_selection(config: BenchConfig) -> None:
    """The op (or group) and dtype names, or the suite's name and seed: one of the two ways
    to choose cases, never both."""
    if config.suite is None:
        if config.suite_seed is not None:
            raise BenchInputError("--suite-seed needs --suite (it seeds the suite's cases)")
        if config.op is None:
            raise BenchInputError("choose the cases: --op NAME, or --suite NAME")
        try:
            ops.check_names(config.op, config.dtype)
        except ValueError as error:
            raise BenchInputError(str(error)) from None
        return
    given = [name for name, value in (("--op", config.op), ("--shape", config.shapes),
                                      ("--dtype", config.dtype)) if value is not None]  # fmt: skip
    if given:
        raise BenchInputError(
            f"--suite chooses the ops, shapes and dtypes itself: drop {given[0]} (--case "
            "narrows a suite to some of its cases)"
        )
    try:
        shape_suite.check(config.suite, config.resolved_suite_seed())
    except ValueError as error:
        raise BenchInputError(str(error)) from None


def check_numbers(config: BenchConfig) -> None:
    for name in ("samples", "visits"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BenchInputError(f"--{name} must be a positive integer, got {value!r}")
    if config.samples % config.visits:
        raise BenchInputError(
            f"--samples {config.samples} must be a multiple of --visits {config.visits} "
            "(every visit takes the same number of rounds)"
        )
    if config.iterations is not None and (
        isinstance(config.iterations, bool)
        or not isinstance(config.iterations, int)
        or config.iterations < 1
    ):
        raise BenchInputError(f"--iterations must be a positive integer, got {config.iterations!r}")
    if isinstance(config.seed, bool) or not isinstance(config.seed, int):
        raise BenchInputError(f"--seed must be an integer, got {config.seed!r}")
    _check_sampling(config)
    timeout = config.worker_timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise BenchInputError(f"worker_timeout_s must be a positive number, got {timeout!r}")
    if config.host_delay_us < 0:
        raise BenchInputError(f"host_delay_us must be >= 0, got {config.host_delay_us}")
    for name, value, choices in (
        ("timing", config.timing, TIMINGS),
        ("cache", config.cache, CACHES),
        ("flush", config.flush, FLUSHES),
        ("clock-burst", config.clock_burst, BURSTS),
        ("compile-mode", config.compile_mode, tuple(COMPILE_MODES)),
        ("impl", config.impl, IMPLS),
    ):
        if value not in choices:
            raise BenchInputError(f"--{name} must be one of {', '.join(choices)}, got {value!r}")
    if config.compile_mode != "default" and not config.compile:
        raise BenchInputError(
            f"--compile-mode {config.compile_mode} needs --compile (it chooses how the compile "
            "baseline is built)"
        )
    for name in (config.reference_package, config.learner_package):
        if not name.isidentifier():
            raise BenchInputError(f"an implementation is a package name, got {name!r}")


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value > 0


def check_margin(percent: object) -> None:
    """A verdict's practical margin is a percentage above 0 and below 100: kernel-bench's and
    ``kernel-bench compare``'s (a margin of 0 would call any difference, however small and
    however noisy, a change)."""
    if not _positive(percent) or percent >= 100:
        raise BenchInputError(f"--margin must be a percentage above 0 and below 100, got "
                              f"{percent!r}")  # fmt: skip


def _check_sampling(config: BenchConfig) -> None:
    """--margin, and --max-noise with its --min-samples and --max-seconds."""
    check_margin(config.margin)
    if not _positive(config.max_seconds):
        raise BenchInputError(
            f"--max-seconds must be a positive number, got {config.max_seconds!r}"
        )
    if config.max_noise is None:
        if config.min_samples is not None:
            raise BenchInputError("--min-samples needs --max-noise (a fixed run takes --samples)")
        return
    if not _positive(config.max_noise):
        raise BenchInputError(
            f"--max-noise must be a positive percentage, got {config.max_noise!r}"
        )
    minimum = config.min_samples
    if minimum is not None and (
        isinstance(minimum, bool) or not isinstance(minimum, int) or not 2 <= minimum <= MAX_SAMPLES
    ):
        raise BenchInputError(f"--min-samples must be an integer from 2 to {MAX_SAMPLES}, got "
                              f"{minimum!r}")  # fmt: skip
    if config.samples > MAX_SAMPLES:
        raise BenchInputError(f"--samples {config.samples} with --max-noise: at most {MAX_SAMPLES}")


def _shapes_by_rank(specs: list, shapes: tuple) -> dict[str, list]:
    """A group's ``--shape``s, each given to the ops of its rank (2-D shapes to the row ops,
    3-D to the GEMMs); an op left with none is an error that says which shape it takes."""
    given = {len(shape) for shape in shapes}
    routed = {spec.name: [s for s in shapes if len(s) == len(spec.shape_names)] for spec in specs}
    missing = [spec for spec in specs if not routed[spec.name]]
    if missing:
        wants = "; ".join(f"{spec.name} takes {len(spec.shape_names)} "
                          f"({'x'.join(spec.shape_names)})" for spec in missing)  # fmt: skip
        ranks = " and ".join(str(n) for n in sorted(given))
        raise BenchInputError(
            f"--shape gave {ranks} dimensions, but {wants}: add a --shape with that many "
            "dimensions, or choose the ops with --op"
        )
    return routed


def select(config: BenchConfig, device: str) -> list[tuple[ops.OpSpec, tuple, str]]:
    """Cases to run: ``(spec, shape, dtype name)`` for every op x shape x dtype requested, or
    the suite's cases."""
    check_selection(config)
    if config.suite is not None:
        cases = shape_suite.cases(config.suite, config.resolved_suite_seed(), device)
        return _chosen(config, cases, device)
    try:
        specs = ops.resolve(config.op)
    except ValueError as error:
        raise BenchInputError(str(error)) from None
    cases = []
    routed = _shapes_by_rank(specs, config.shapes) if config.shapes and len(specs) > 1 else None
    for spec in specs:
        if config.dtype is None:
            dtypes = list(spec.dtypes)
        else:
            try:
                dtype = ops.dtype_from_name(config.dtype)
            except ValueError as error:
                raise BenchInputError(str(error)) from None
            if dtype not in spec.dtypes:
                supported = ", ".join(ops.dtype_name(d) for d in spec.dtypes)
                raise BenchInputError(
                    f"{spec.name} does not support {config.dtype}; it takes {supported}"
                )
            dtypes = [dtype]
        if config.shapes:
            shapes = []
            for shape in routed[spec.name] if routed else config.shapes:
                try:
                    shapes.append(spec.validate_shape(shape))
                except ValueError as error:
                    raise BenchInputError(str(error)) from None
        else:
            shapes = list(spec.cpu_shapes if device == "cpu" else spec.default_shapes)
        cases += [(spec, shape, ops.dtype_name(dtype)) for shape in shapes for dtype in dtypes]
    return _chosen(config, cases, device)


def _chosen(config: BenchConfig, cases: list, device: str) -> list:
    """The selection narrowed by ``--case``, its memory checked on the CPU."""
    cases = _only(cases, config.cases) if config.cases else cases
    if device == "cpu":  # on a GPU an allocation that fails skips its case (timers.out_of_memory)
        _check_memory(cases)
    return cases


def memory_available() -> int | None:
    """The bytes a new allocation can have now: Linux's ``MemAvailable``, elsewhere the
    machine's physical memory; None when neither can be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None


def _check_memory(cases: list) -> None:
    """Refuse a CPU case that cannot fit in memory before anything is allocated: its tensors at
    their dtype (the op's logical bytes) and the float64 oracle's copies of them. An estimate
    from below for most ops (an oracle's intermediates come on top); a case under it that still
    fails to allocate is refused when it does (``cli.main``)."""
    available = memory_available()
    if available is None:
        return
    for spec, shape, dtype in cases:
        moved = spec.logical_bytes(shape, ops.dtype_from_name(dtype))
        need = moved * (1 + 8 // ops.dtype_from_name(dtype).itemsize)
        if need > available:
            raise BenchInputError(
                f"{case_key(spec.name, shape, dtype)}: its tensors and the float64 oracle's "
                f"copies need about {need / 2**30:,.1f} GiB, and this machine has "
                f"{available / 2**30:,.1f} GiB available; choose a smaller --shape"
            )


def selection_arguments(settings: dict) -> list[str]:
    """The kernel-bench words that choose a report's cases again: ``--op`` with its
    ``--shape``s and ``--dtype``, or ``--suite`` with its seed."""
    if settings.get("suite") is not None:
        return ["--suite", settings["suite"], "--suite-seed", str(settings.get("suite_seed") or 0)]
    words = ["--op", settings["op"]]
    for shape in settings.get("shapes") or ():
        words += ["--shape", *map(str, shape)]
    if settings.get("dtype"):
        words += ["--dtype", settings["dtype"]]
    return words


def case_key(op: str, shape, dtype: str) -> str:
    """A case as ``--case`` names it: ``softmax/1024x1024/float16``."""
    return f"{op}/{'x'.join(str(d) for d in shape)}/{dtype}"


def _only(cases: list, wanted: tuple[str, ...]) -> list:
    """The selected cases that ``--case`` names, in their planned order; a named case that the
    other options do not select is an error, so a typo cannot shrink a run unseen."""
    keys = {case_key(spec.name, shape, dtype): (spec, shape, dtype) for spec, shape, dtype in cases}
    unknown = [key for key in wanted if key not in keys]
    if unknown:
        raise BenchInputError(
            f"--case {unknown[0]}: not among the cases this run selects (op/MxN/dtype, e.g. "
            f"{next(iter(keys), 'softmax/1024x1024/float16')})"
        )
    chosen = set(wanted)
    return [case for key, case in keys.items() if key in chosen]
