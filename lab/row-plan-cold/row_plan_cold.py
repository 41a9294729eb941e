"""Which RMSNorm forward row plan ties torch.compile with a cold L2, and which launch config did
Inductor pick? (GPU only; ~1 min)

    python3 lab/row-plan-cold/row_plan_cold.py --output results/h200/row-plan-cold.json
    python3 lab/row-plan-cold/row_plan_cold.py --shapes 1024x1024 --dtypes float16 --samples 31

In kernel-bench's cold mode (``--cache cold``: the L2 flushed before every timed call) the
reference RMSNorm forward at 1024 x 1024 loses to torch.compile round after round, by 4-5%
(fp32 7.34 against 7.03 us, fp16 5.81 against 5.65 us), and at 65536 x 128 fp16 by about
1.5%. The plan rule (``reference.kernels.row_plan.choose_row_plan``) was fitted to warm
graph-replay timings (``scripts/row_plan_grid.py``); a kernel that starts from DRAM may want
another tile or another warp count to keep enough loads in flight.

For each shape and dtype this script times, cold and interleaved:

* ``reference``: the reference ``rmsnorm`` as kernel-bench calls it (the op registry's
  ``rmsnorm`` spec, its inputs and its call);
* ``plan RxW``: the same forward (``rmsnorm_fwd``) launched with the plan passed in: every
  whole-row plan of 1, 2, 4 or 8 rows a program (``--rows``) and 2, 4, 8 or 16 warps
  (``--warps``), the row padded to a power of two, one stage, that give a thread at least one
  16-byte vector and at most 64 values of a tile (:func:`candidate_plans`), and the
  reference's own plan, marked ``*``, listed even where it lies outside that grid (16 x 8 at
  128 wide in fp16). That plan timed beside the reference is an A/A pair: they should read
  alike;
* ``compile``: the registry's first PyTorch baseline under ``torch.compile(dynamic=False)``,
  compiled for the case alone, as kernel-bench builds it (``learning.bench.variants``);
* ``eager``: that baseline uncompiled.

Every variant is checked against the registry's float64 oracle before anything is timed; one
that fails (or raises) stops the script with one line. After compile's first call, the launch
config Inductor settled on for each of its Triton kernels (XBLOCK, R0_BLOCK, warps, stages) is
read from the kernel's ``CachingAutotuner`` (:func:`inductor_pick`; a persistent reduction's
R0_BLOCK is the whole row, not a tuned value), with what its autotuner timed when it tuned in
this run (:class:`AutotuneLog`; a config from Inductor's autotune cache was not timed), or
``null`` and the reason when none is found.

Timing is kernel-bench's cold method, its own code (``learning.bench.timers``): per variant a
CUDA graph of 10 x [flush the L2 by reading twice its size, event, call, event], each sample
the mean of the 10 calls read from the in-graph events (or, where those are not available,
kernel-bench's fallback: the flush-only graph sampled in the same rounds and its median
subtracted). Every graph is captured before any is timed; then in each of ``--samples`` rounds
every case gets one untimed replay of each variant and one sample of each, in a seeded
shuffled order. Per variant: the median, min and max (us), compile's median over the
variant's, and the paired ratio (``learning.report.stats.paired``: the median over rounds of
compile's sample over the variant's, above 1 faster) with the rounds lost to compile and a
sign test.

``--rewrites NAME ...`` adds the forward with parts of its code rewritten as Inductor writes
its own kernel (``REWRITES``: 32-bit row offsets, the row stride a constant), or with the row
mask put back (``row-mask``: the forward before ``rmsnorm._mask_rows`` dropped it), each with
every whole-row plan, to ask what, beyond the plan, sets the kernel's time.
``--reference-plan-only`` times the reference's own plan and no other (with its rewrites).

``--cache warm`` times the same variants the way kernel-bench's warm sweep does (a sample is
one replay of a 30-call graph, no flush), so that a plan that wins cold is checked warm by the
same script, in the same interleaved rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import _variants  # noqa: E402
from _arguments import shape_argument  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.config import DEFAULT_ITERATIONS, WARMUP_CALLS  # noqa: E402
from learning.bench.timers import flush_bytes, make_timer  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from learning.report.stats import paired  # noqa: E402
from reference.kernels.row_plan import VECTOR_BYTES, RowPlan, next_power_of_two  # noqa: E402

OP = "rmsnorm"
SHAPES = ("1024x1024", "65536x128")
DTYPES = ("float32", "float16")
ROWS = (1, 2, 4, 8)
WARPS = (2, 4, 8, 16)
MAX_THREAD_VALUES = 64  # values of a program's tile one thread may hold (one input's tile)
BASELINE = "compile"

# The forward's whole-row path as Inductor writes it, one difference at a time (Inductor's
# kernel at 1024 wide: results/h200/inductor-rmsnorm-1024x1024-float32.log): 32-bit row
# offsets (``int32``: only for tensors under 2**31 elements) and the row stride a constant
# (``stride-N``: the probe's inputs are contiguous). Inductor's third difference, no row
# mask, the reference now has wherever every program's rows exist (``rmsnorm._mask_rows``);
# ``row-mask`` puts the mask back on every plan, as the forward was before (always safe).
_ROWS64 = "    rows64 = rows.to(tl.int64)[:, None]\n    x_row = x_ptr + rows64 * x_row_stride\n"
_STRIDES = ("    x_row = x_ptr + rows64 * x_row_stride\n"
            "    r_row = residual_ptr + rows64 * residual_row_stride\n")  # fmt: skip
_MASK_RULE = "MASK_ROWS=_mask_rows(plan, x.dtype, n_rows, n_cols),"
_INT32 = (_ROWS64, _ROWS64.replace("rows.to(tl.int64)[:, None]", "rows[:, None]"), 1)
_STRIDE_N = (_STRIDES, _STRIDES.replace("* x_row_stride", "* N").replace(
    "* residual_row_stride", "* N"), 1)  # fmt: skip
_ROW_MASK = (_MASK_RULE, "MASK_ROWS=True,", 1)
REWRITES = {"int32": [_INT32], "stride-N": [_STRIDE_N], "row-mask": [_ROW_MASK],
            "all": [_INT32, _STRIDE_N]}  # fmt: skip
FLUSH = "(flush)"  # the flush-only graph, sampled only when the timer subtracts it


# --------------------------------------------------------------------------- the plans


def candidate_plans(
    n_cols: int, element_size: int, rows=ROWS, warps=WARPS
) -> tuple[RowPlan, list[RowPlan]]:
    """``(reference, plans)``: the forward's own plan and every plan timed at this width.

    Whole-row plans (``block_cols`` the row padded to a power of two, one stage) of each row
    count x warp count, kept when one input's tile gives every thread at least one 16-byte
    vector and at most ``MAX_THREAD_VALUES`` values; the reference's plan is always listed,
    in the grid or not. Sorted by rows, then warps (a chunked reference plan last).
    """
    from reference.kernels import rmsnorm

    reference = rmsnorm.forward_plan(1, n_cols, element_size)
    vector = max(1, VECTOR_BYTES // element_size)
    block = max(vector, next_power_of_two(n_cols))
    plans = []
    for count in rows:
        for num_warps in warps:
            per_thread = count * block // (32 * num_warps)
            if vector <= per_thread <= MAX_THREAD_VALUES:
                plans.append(RowPlan(block, count, num_warps, chunked=False, num_stages=1))
    if reference not in plans:
        plans.append(reference)
    return reference, sorted(plans, key=lambda p: (p.chunked, p.rows_per_program, p.num_warps))


def plan_label(plan: RowPlan) -> str:
    """``plan 2x8``: rows a program x warps (``plan chunk 8192 w32`` for a chunked plan)."""
    if plan.chunked:
        return f"plan chunk {plan.block_cols} w{plan.num_warps}"
    return f"plan {plan.rows_per_program}x{plan.num_warps}"


def rewritten_forwards(names, directory: Path) -> dict:
    """``{name: module}``: the reference RMSNorm module with each named rewrite applied."""
    from reference.kernels import rmsnorm

    return {name: _variants.rewritten(rmsnorm, REWRITES[name], directory,
                                      f"rmsnorm_{name.replace('-', '_')}")
            for name in names}  # fmt: skip


def case_variants(spec: ops.OpSpec, plans: list[RowPlan],
                  rewritten: dict | None = None) -> dict[str, dict]:  # fmt: skip
    """``{label: {"kind", "fn", "plan"}}``: the reference, every plan, each rewritten module
    with every whole-row plan (``plan 1x2 int32``), compile and eager, each a function with the
    registry's signature (``spec.call`` calls it)."""
    module = spec.implementation("reference")
    variants = {"reference": {"kind": "reference", "fn": spec.kernel_function("reference"),
                              "plan": None}}  # fmt: skip
    for plan in plans:

        def planned(x, residual, weight, eps, plan=plan):
            return module.rmsnorm_fwd(x, residual, weight, eps, plan=plan)[0]

        variants[plan_label(plan)] = {"kind": "plan", "fn": planned, "plan": plan}
    for name, other in (rewritten or {}).items():
        for plan in plans:
            if plan.chunked:
                continue

            def changed(x, residual, weight, eps, plan=plan, other=other):
                return other.rmsnorm_fwd(x, residual, weight, eps, plan=plan)[0]

            variants[f"{plan_label(plan)} {name}"] = {"kind": "rewritten", "fn": changed,
                                                      "plan": plan, "rewrite": name}  # fmt: skip
    name, baseline = next(iter(spec.baselines.items()))
    variants[BASELINE] = {"kind": "compile", "fn": fresh_compiled(baseline, "default"),
                          "plan": None, "baseline": name}  # fmt: skip
    variants["eager"] = {"kind": "eager", "fn": baseline, "plan": None, "baseline": name}
    return variants


# --------------------------------------------------------------------------- Inductor's pick


class AutotuneLog:
    """While open, records what Inductor's autotuner measures, by autotuner id: each candidate
    config and the ms Inductor's own benchmark gave it (warm, ``CachingAutotuner.bench``).

    Read after compiling, an autotuner has already dropped its candidates (``configs`` is set
    to None once they are compiled, and the compiled ones are pruned to the winner), so the
    log wraps ``CachingAutotuner.benchmark_all_configs`` while compile's first call runs. A
    kernel with one config (its only candidate, or the winner from Inductor's autotune cache on
    disk) is never benchmarked and leaves no entry.
    """

    def __init__(self):
        self.timings: dict[int, list[dict]] = {}
        self._patched = None

    def __enter__(self) -> AutotuneLog:
        try:
            from torch._inductor.runtime.triton_heuristics import CachingAutotuner
        except ImportError:
            return self
        original = getattr(CachingAutotuner, "benchmark_all_configs", None)
        if original is None:
            return self
        timings = self.timings

        def recording(tuner, *args, **kwargs):
            measured = original(tuner, *args, **kwargs)
            try:
                timings[id(tuner)] = [_config(launcher.config) | {"ms": float(ms)}
                                      for launcher, ms in measured.items()]  # fmt: skip
            except Exception:  # a torch whose timings look otherwise: nothing recorded
                pass
            return measured

        CachingAutotuner.benchmark_all_configs = recording
        self._patched = (CachingAutotuner, original)
        return self

    def __exit__(self, *exc) -> None:
        if self._patched is not None:
            cls, original = self._patched
            cls.benchmark_all_configs = original
            self._patched = None


def _autotuners_in(objects, found: dict, where: str) -> None:
    for value in objects:
        try:  # any object at all: a dead weak proxy raises ReferenceError on every lookup
            launchers = getattr(value, "launchers", None)
            if not isinstance(launchers, list):
                continue
            _ = value.fn, value.configs  # what every autotuner has
        except Exception:
            continue
        found.setdefault(id(value), (value, where))


def inductor_autotuners() -> dict[int, tuple[object, str]]:
    """Every Inductor ``CachingAutotuner`` alive in this process, by id: ``(object, where)``.

    Looked for in the globals of the modules ``PyCodeCache`` loaded (the compiled graph's
    module holds its kernels there once ``async_compile.wait`` has run), then, in case a
    torch version keeps them elsewhere, among every object the garbage collector tracks.
    """
    found: dict[int, tuple[object, str]] = {}
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:
        PyCodeCache = None
    if PyCodeCache is not None:
        modules = list(getattr(PyCodeCache, "modules", None) or [])
        for table in ("modules_no_attr", "cache"):  # the name of the dict differs by version
            loaded = getattr(PyCodeCache, table, None)
            if isinstance(loaded, dict):
                modules += list(loaded.values())
        for module in modules:
            _autotuners_in(list(vars(module).values()), found, "PyCodeCache")
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:
        CachingAutotuner = None
    if CachingAutotuner is not None:
        # type(), not isinstance(): isinstance asks a weak proxy for __class__, and a dead one
        # raises (and some deprecated torch objects warn)
        tracked = [o for o in gc.get_objects() if issubclass(type(o), CachingAutotuner)]
        _autotuners_in(tracked, found, "gc")
    return found


def launch_config(autotuner, benchmarked: list[dict] | None = None) -> dict:
    """One Inductor kernel's launch config: the config its launcher runs (after autotuning,
    the winner; ``None`` before the first call), and ``benchmarked``, what the autotuner
    measured on the way (:class:`AutotuneLog`; ``None``: it did not benchmark in this run).

    A persistent reduction keeps the whole row in one block: its ``R0_BLOCK`` is no tuned
    config value but the row padded to a power of two (the ``r0_`` size hint), recorded as
    ``persistent_r0_block``.
    """
    launchers = list(getattr(autotuner, "launchers", None) or [])
    fn = getattr(autotuner, "fn", None)
    meta = getattr(autotuner, "inductor_meta", None) or {}
    hints = getattr(autotuner, "size_hints", None)
    heuristic = str(getattr(autotuner, "heuristic_type", None))
    record = {
        "kernel": meta.get("kernel_name") or getattr(fn, "__name__", None),
        "heuristic": heuristic,
        "size_hints": hints,
        "persistent_r0_block": None,
        "launchers": len(launchers),
        "chosen": None,
        "benchmarked": benchmarked,
    }
    if "persistent" in heuristic.lower() and isinstance(hints, dict):
        record["persistent_r0_block"] = hints.get("r0_", hints.get("r"))
    if len(launchers) == 1:
        launcher = launchers[0]
        chosen = getattr(launcher, "config", None)
        if chosen is not None:
            record["chosen"] = _config(chosen)
            for name in ("n_regs", "n_spills", "shared"):
                record["chosen"][name] = getattr(launcher, name, None)
    return record


def _config(config) -> dict:
    """A ``triton.Config`` as JSON: its block sizes (``kwargs``), warps and stages."""
    return {"kwargs": dict(getattr(config, "kwargs", None) or {}),
            "num_warps": getattr(config, "num_warps", None),
            "num_stages": getattr(config, "num_stages", None)}  # fmt: skip


def inductor_pick(before: dict, benchmarked: dict | None = None) -> dict:
    """Inductor's kernels that appeared since ``before`` (:func:`inductor_autotuners`), with
    what ``benchmarked`` (:attr:`AutotuneLog.timings`) holds for each; never raises: what it
    cannot read it records as ``null``, saying why."""
    try:
        now = inductor_autotuners()
        new = [(obj, where) for key, (obj, where) in now.items() if key not in before]
        benchmarked = benchmarked or {}
        kernels = [launch_config(obj, benchmarked.get(id(obj))) | {"found_in": where}
                   for obj, where in new]  # fmt: skip
    except Exception as error:  # a torch whose internals differ: the timing still goes on
        return {"kernels": None, "note": f"reading Inductor's autotuners raised "
                f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"}  # fmt: skip
    if not new:
        return {"kernels": None, "note": "no new Inductor Triton kernel found after compile's "
                "first call (none made, reused from an earlier case, or kept where this torch "
                f"{torch.__version__} does not show it)"}  # fmt: skip
    unsettled = [k["kernel"] for k in kernels if k["chosen"] is None]
    note = f"not settled on one config: {', '.join(map(str, unsettled))}" if unsettled else None
    return {"kernels": kernels, "note": note}


def config_text(pick: dict | None) -> str:
    """``XBLOCK=1 R0_BLOCK=1024 (persistent) w1 s1`` per kernel (``;`` between; ``, best of N
    timed`` when it autotuned in this run), or why there is none."""
    if not pick or not pick.get("kernels"):
        return "Inductor's config not found"
    parts = []
    for kernel in pick["kernels"]:
        chosen = kernel["chosen"]
        if chosen is None:
            parts.append(f"{kernel['kernel']}: unsettled")
            continue
        sizes = " ".join(f"{k}={v}" for k, v in chosen["kwargs"].items())
        if kernel.get("persistent_r0_block") and "R0_BLOCK" not in chosen["kwargs"]:
            sizes += f" R0_BLOCK={kernel['persistent_r0_block']} (persistent)"
        tried = kernel.get("benchmarked")
        sizes = f"{sizes} w{chosen['num_warps']} s{chosen['num_stages']}".strip()
        parts.append(f"{sizes}, best of {len(tried)} timed" if tried else sizes)
    return "; ".join(parts)


# --------------------------------------------------------------------------- sampling


def sample_rounds(cases: dict, rounds: int, seed: int, finish_round) -> dict[str, dict]:
    """``{case: {label: [ms, ...]}}``: ``rounds`` rounds; in each, the cases in a shuffled order
    and per case one untimed replay of every variant, then one sample of each in a shuffled
    order, as a kernel-bench visit of one round does.

    ``cases`` maps a case to ``{label: timed}``, where ``timed`` is what a kernel-bench timer's
    ``prepare`` returns (``replay_untimed()``, and ``sample()`` giving a reader that is valid
    after ``finish_round()``).
    """
    shuffle = random.Random(seed)
    samples = {case: {label: [] for label in timed} for case, timed in cases.items()}
    order = list(cases)
    for _ in range(rounds):
        shuffle.shuffle(order)
        for case in order:
            timed = cases[case]
            for item in timed.values():
                item.replay_untimed()
            finish_round()
            labels = list(timed)
            shuffle.shuffle(labels)
            pending = [(label, timed[label].sample()) for label in labels]
            finish_round()
            for label, read in pending:
                samples[case][label].append(read())
    return samples


def summarize(samples_ms: dict[str, list[float]], baseline: str = BASELINE) -> dict[str, dict]:
    """Per variant, from its samples (ms, in round order): median, min and max in us, the
    baseline's median over the variant's, and the paired comparison with the baseline
    (``paired``: ``paired_ratio`` above 1 means faster; ``slower``: rounds lost to it).

    A flush-only graph's samples (``FLUSH``, kernel-bench's fallback) are subtracted, as
    kernel-bench subtracts them: their median from every other sample.
    """
    samples_ms = dict(samples_ms)
    flush = samples_ms.pop(FLUSH, None)
    if flush:
        median = statistics.median(flush)
        samples_ms = {label: [s - median for s in values] for label, values in samples_ms.items()}
    base = samples_ms[baseline]
    base_median = statistics.median(base)
    rows = {}
    for label, values in samples_ms.items():
        median = statistics.median(values)
        versus = None if label == baseline else paired({"samples_ms": values},
                                                       {"samples_ms": base})  # fmt: skip
        rows[label] = {
            "median_us": median * 1e3, "min_us": min(values) * 1e3, "max_us": max(values) * 1e3,
            "samples_us": [s * 1e3 for s in values],
            "compile_over_median": base_median / median if median > 0 else None,
            "paired_vs_compile": versus,
            "rounds_lost_to_compile": versus["slower"] if versus else None,
        }  # fmt: skip
    return rows


# --------------------------------------------------------------------------- one case


def prepare_case(spec, shape, dtype, seed: int, timer, rows, warps, rewritten=None) -> dict:
    """Inputs, variants checked against the oracle, Inductor's pick and every graph captured:
    ``{"inputs", "variants", "reference_plan", "inductor", "timed"}``."""
    label = f"{OP} {spec.shape_label(shape)} {ops.dtype_name(dtype)}"
    inputs = spec.inputs(shape, dtype, seed, "cuda")
    reference_plan, plans = candidate_plans(shape[1], dtype.itemsize, rows, warps)
    variants = case_variants(spec, plans, rewritten)
    try:  # the autotuners alive before compile's first call (held, so no id is reused)
        before = inductor_autotuners()
    except Exception:  # inductor_pick says what failed
        before = {}
    pick = None
    for name, variant in variants.items():
        log = AutotuneLog()
        try:
            with log if name == BASELINE else contextlib.nullcontext():
                outputs = spec.call(variant["fn"], inputs)  # compile's: compiles and autotunes
            why = timing.oracle_check(spec, outputs, inputs, dtype)
        except Exception as error:  # out of resources, a compile error: stop, in one line
            why = f"raised {type(error).__name__}: {str(error).strip()[:200]}"
        if why:
            one_line = " ".join(why.split())
            raise SystemExit(f"row_plan_cold.py: {label} {name} fails the float64 oracle: "
                             f"{one_line}")  # fmt: skip
        if name == BASELINE:
            torch.cuda.synchronize()
            pick = inductor_pick(before, log.timings)
    timer.new_case()
    timed = {}
    for name, variant in variants.items():
        fn = variant["fn"]
        timed[name] = timer.prepare(lambda fn=fn: spec.call(fn, inputs))
    if timer.subtracts_flush:
        timed[FLUSH] = timer.prepare_flush()
    print(f"prepared {label}: {len(variants)} variants; compile's kernel: {config_text(pick)}",
          flush=True)  # fmt: skip
    return {"label": label, "inputs": inputs, "variants": variants,
            "reference_plan": reference_plan, "inductor": pick, "timed": timed}  # fmt: skip


def case_record(case: dict, shape, dtype, summary: dict[str, dict]) -> dict:
    reference_plan = case["reference_plan"]
    rows = []
    for name, variant in case["variants"].items():
        plan = variant["plan"]
        rows.append({"variant": name, "kind": variant["kind"],
                     "plan": asdict(plan) if plan else None,
                     "reference_plan": plan == reference_plan and variant["kind"] == "plan",
                     "rewrite": variant.get("rewrite"), "baseline": variant.get("baseline"),
                     **summary[name]})  # fmt: skip
    return {"case": case["label"], "shape": list(shape), "dtype": ops.dtype_name(dtype),
            "reference_plan": asdict(reference_plan), "inductor": case["inductor"],
            "variants": rows}  # fmt: skip


def table_lines(records: list[dict], cache: str = "cold") -> list[str]:
    """The closing table: per case, every variant sorted by median; ``*`` the reference's
    plan, whose label the reference's row repeats in brackets."""
    lines = [f"{cache} L2, kernel-bench's timer; plan RxW: rows a program x warps; * the "
             "reference's plan; x compile: compile's median over the variant's; paired: the "
             "median over rounds of the same quotient; lost: rounds slower than "
             "compile"]  # fmt: skip
    for record in records:
        own = plan_label(RowPlan(**record["reference_plan"])).removeprefix("plan ")
        lines += ["", f"{record['case']}  (compile: {config_text(record['inductor'])})",
                  f"  {'variant':22} {'median us':>9} {'min-max us':>15} {'x compile':>9} "
                  f"{'paired':>7} {'lost':>7} {'p':>6}"]  # fmt: skip
        for row in sorted(record["variants"], key=lambda r: r["median_us"]):
            versus = row["paired_vs_compile"]
            name = row["variant"] + (" *" if row["reference_plan"] else "")
            if row["kind"] == "reference":
                name += f" [{own}]"
            spread = f"{row['min_us']:.2f}-{row['max_us']:.2f}"
            lost = f"{versus['slower']}/{versus['rounds']}" if versus else "-"
            lines.append(f"  {name:22} {row['median_us']:9.2f} {spread:>15} "
                         f"{timing.fmt(row['compile_over_median'], '.3f'):>9} "
                         f"{timing.fmt(versus and versus['paired_ratio'], '.3f'):>7} "
                         f"{lost:>7} {timing.fmt(versus and versus['p'], '.4f'):>6}")  # fmt: skip
    return lines


# --------------------------------------------------------------------------- arguments


def power_of_two(text: str) -> int:
    """An argparse type: a power of two >= 1."""
    value = positive_int(text)
    if value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two, got {text!r}")
    return value


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(prog="row_plan_cold", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", type=shape_argument, default=SHAPES,
                        metavar="ROWSxCOLS", help=f"default {' '.join(SHAPES)}")
    parser.add_argument("--dtypes", nargs="+", default=DTYPES,
                        choices=[ops.dtype_name(d) for d in ops.get(OP).dtypes],
                        help=f"default {' '.join(DTYPES)}")
    parser.add_argument("--samples", type=positive_int, default=15,
                        help="interleaved rounds, one sample per variant each (default 15)")
    parser.add_argument("--cache", choices=("cold", "warm"), default="cold",
                        help="flush the L2 before every timed call (cold, the default), "
                             "or not, as kernel-bench's warm sweep times")  # fmt: skip
    parser.add_argument("--rows", nargs="+", type=power_of_two, default=ROWS,
                        help=f"rows a program to try (default {' '.join(map(str, ROWS))})")
    parser.add_argument("--warps", nargs="+", type=power_of_two, default=WARPS,
                        help=f"warps to try (default {' '.join(map(str, WARPS))})")
    parser.add_argument("--rewrites", nargs="+", choices=list(REWRITES), default=[],
                        help="also time the forward with these rewrites, with every whole-row "
                             "plan (Inductor's code, one difference at a time; row-mask: the "
                             "row mask on every plan)")  # fmt: skip
    parser.add_argument("--reference-plan-only", action="store_true",
                        help="time the reference's own plan only, not the grid of --rows x "
                             "--warps")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="inputs and the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the JSON record here")
    args = parser.parse_args(argv)
    if max(args.warps) > 32:
        parser.error(f"argument --warps: at most 32 warps, got {max(args.warps)}")
    args.shapes = list(dict.fromkeys(shape_argument(s) if isinstance(s, str) else s
                                     for s in args.shapes))  # fmt: skip
    args.dtypes = list(dict.fromkeys(args.dtypes))
    too_big = [f"{m}x{n}" for m, n in args.shapes if m * n >= 2**31]
    if too_big and {"int32", "all"} & set(args.rewrites):
        parser.error(f"argument --rewrites: int32 row offsets overflow at {', '.join(too_big)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("row_plan_cold.py")
    started = time.perf_counter()
    ops.numerics_policy()
    timing.warm_gpu()
    spec = ops.get(OP)
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None)
    iterations = DEFAULT_ITERATIONS[f"graph-{args.cache}"]
    timer = make_timer("cuda", "graph", args.cache, iterations, WARMUP_CALLS, l2_bytes,
                       flush="read")  # fmt: skip
    rows, warps = ((), ()) if args.reference_plan_only else (args.rows, args.warps)
    cases = {}
    with tempfile.TemporaryDirectory() as directory:  # Triton reads a kernel's source file
        rewritten = rewritten_forwards(args.rewrites, Path(directory))
        for shape in args.shapes:
            for name in args.dtypes:
                dtype = ops.dtype_from_name(name)
                cases[(shape, dtype)] = prepare_case(spec, shape, dtype, args.seed, timer,
                                                     rows, warps, rewritten)
        timing.warm_gpu()  # the compiles left the GPU idle
        samples = sample_rounds({key: case["timed"] for key, case in cases.items()},
                                args.samples, args.seed, timer.finish_round)  # fmt: skip
    records = [case_record(case, shape, dtype, summarize(samples[(shape, dtype)]))
               for (shape, dtype), case in cases.items()]  # fmt: skip
    print("\n".join(table_lines(records, args.cache)))
    settings = {
        "timer": timer.name, "cache": args.cache, "cold_method": timer.cold_method,
        "fallback_reason": timer.fallback_reason, "calls_per_sample": iterations,
        "warmup_calls": WARMUP_CALLS, "flush": "read" if args.cache == "cold" else None,
        "flush_bytes": flush_bytes(l2_bytes) if args.cache == "cold" else None,
        "l2_bytes": l2_bytes, "samples": args.samples, "seed": args.seed,
        "rows": list(rows), "warps": list(warps), "rewrites": list(args.rewrites),
        "reference_plan_only": args.reference_plan_only,
    }  # fmt: skip
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed:.0f} s; {args.cache} L2, method: {timer.cold_method}")
    payload = {"environment": timing.environment(), "settings": settings,
               "elapsed_s": elapsed, "cases": records}  # fmt: skip
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
