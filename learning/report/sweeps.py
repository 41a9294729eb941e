"""The recorded sweeps: what each one runs, where each card's copy lives, and what is stale.

A *sweep* is a recording the targets and the lessons read (``all``, ``all-cold``, ...). Each
GPU model keeps its own set in a folder named after it (``results/h200/``, ``results/h100/``:
:func:`card_folder`), since one card's figures say nothing of another's. A sweep is its base
report, ``<sweep>.json``, and any later *parts*, ``<sweep>.part-<time>.json``: a part is a
run of only the cases that had gone stale, with the same settings, and its cases take the
place of the base's (:class:`Sweep`). Every file stays a report of one run, valid through its
snapshots; the sweep is the newest recording of each case. A part of a sweep that holds the
streaming ceiling's case (:data:`CEILING_CASE`) records that case again, so every figure
judged against the ceiling has one measured in the same run.

Which cases are stale is :mod:`learning.report.binding`'s answer. :func:`plan` turns it into
the commands that re-record exactly those, sized to fit one GPU call each
(:data:`CALL_BUDGET_S`): ``python -m learning.report stale`` prints them, and
``python -m learning.report rerecord OUTDIR`` runs them on the GPU it finds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from learning.bench import suite as shape_suite
from learning.report.binding import Staleness, stale_ops
from learning.report.fingerprint import REPO_ROOT

RESULTS = "results"


@dataclass(frozen=True)
class SweepSpec:
    """How a sweep is recorded: kernel-bench's arguments (``bench``), or a script's."""

    name: str
    arguments: tuple[str, ...]
    script: str | None = None  # a companion script instead of kernel-bench (a script record)

    def command(self, output: str, cases: Iterable[str] = ()) -> list[str]:
        """The command line that records it (only ``cases`` of it, when given) into ``output``."""
        if self.script:
            return ["python3", self.script, *self.arguments, "--output", output]
        only = [word for case in cases for word in ("--case", case)]
        return ["python3", "-m", "learning.bench", *self.arguments, *only, "--output", output]

    def untimed(self) -> tuple[float, int]:
        """Seconds a case and cases a recording, for a sweep no card has timed yet: a shape
        suite's own estimate (``learning.bench.suite.estimate_s``, at the sweep's sampling),
        else :data:`UNKNOWN_CASE_S` for 40 cases."""
        if self.script or "--suite" not in self.arguments:
            return UNKNOWN_CASE_S, 40
        from learning.bench.cli import parse

        config = parse([*self.arguments, "--output", "unused.json"])
        cases = shape_suite.cases(config.suite, config.resolved_suite_seed())
        calls = config.samples * config.resolved_iterations("cuda")
        cold = config.cache == "cold"
        total = sum(shape_suite.estimate_s(*case, calls, cold) for case in cases)
        return total / len(cases), len(cases)


_RECORDED = ("--samples", "15", "--visits", "5")  # the sampling of the large sweeps
SUITE_SEED = 0  # the seed the recorded shape-suite sweeps draw their cases from
# the shape suite (learning.bench.suite): one sweep a part, warm and cold, compiled per case
SUITE_SWEEPS: tuple[SweepSpec, ...] = tuple(
    SweepSpec(
        f"shapes-{part}{tail}",
        ("--suite", part, "--suite-seed", str(SUITE_SEED), "--compile", *cache, *_RECORDED),
    )
    for part in shape_suite.PARTS
    for tail, cache in (("", ()), ("-cold", ("--cache", "cold")))
)
SWEEPS: Mapping[str, SweepSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            # every default shape and dtype, torch.compile per case (dynamic=False)
            SweepSpec("all", ("--op", "all", "--compile", *_RECORDED)),
            SweepSpec("all-cold", ("--op", "all", "--compile", "--cache", "cold", *_RECORDED)),
            SweepSpec("training", ("--op", "training", "--dtype", "float16", "--compile")),
            SweepSpec("gemm-bf16", ("--op", "matmul", "--dtype", "bfloat16", "--compile",
                                    "--compile-mode", "max-autotune", *_RECORDED)),  # fmt: skip
            SweepSpec("gemm-train", ("--op", "matmul_train", "--shape", "16384", "1024", "1024",
                                     "--dtype", "float16")),  # fmt: skip
            # fused attention: every SDPA backend and FlexAttention (compiled per case) are
            # its baselines; each call takes a millisecond or more, so 10 calls a sample
            SweepSpec("attention", ("--op", "attention_forward", "--dtype", "bfloat16",
                                    "--iterations", "10")),  # fmt: skip
            SweepSpec("attention-cold", ("--op", "attention_forward", "--dtype", "bfloat16",
                                         "--cache", "cold")),  # fmt: skip
            SweepSpec("attention-training", ("--op", "attention_training", "--dtype", "bfloat16",
                                             "--iterations", "10")),  # fmt: skip
            SweepSpec("validate-kernels", ("--no-timing",), script="scripts/validate_kernels.py"),
            *SUITE_SWEEPS,
        )
    }
)
# Sweeps defined but not yet recorded on any card: ``stale`` prints the commands that record
# them, and the recorded-evidence tests hold every other sweep fresh on some card. A name
# leaves this list with its first recording (a test fails while a recorded sweep stays here).
NOT_YET_RECORDED: frozenset[str] = frozenset(
    {"attention", "attention-cold", "attention-training"}
    | {spec.name for spec in SUITE_SWEEPS}
)
# The streaming ceiling: the fastest variant of this case, in the same run (scripts/_targets.py
# holds every target as a share of it).
CEILING_CASE = ("add", (16384, 4096), "float16")
CALL_BUDGET_S = 480.0  # one GPU call's share of kernel-bench time (the tool allows 600 s)
START_S = 25.0  # a kernel-bench process's start: imports, the card's first compile
UNKNOWN_CASE_S = 8.0  # a case no recording of the sweep has timed yet


def card_folder(gpu_name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``h100``, ``NVIDIA H200`` -> ``h200``: the GPU model,
    without the vendor, the memory size and the package."""
    words = [w for w in re.split(r"[\s_-]+", gpu_name.lower()) if w]
    noise = re.compile(r"^(nvidia|geforce|tesla|\d+gb|hbm\d*e?|pcie|sxm\d*|nvl|mig.*)$")
    kept = [w for w in words if not noise.match(w)]
    return "-".join(kept) or "gpu"


def case_key(case: dict) -> str:
    """A recorded case as kernel-bench's ``--case`` names it."""
    return f"{case['op']}/{'x'.join(map(str, case['shape']))}/{case['dtype']}"


CEILING_KEY = f"{CEILING_CASE[0]}/{'x'.join(map(str, CEILING_CASE[1]))}/{CEILING_CASE[2]}"


@dataclass
class Sweep:
    """One sweep of one card: its base report and parts, and the newest recording of each
    case. ``files`` are (path, report) from oldest to newest."""

    name: str
    files: list[tuple[Path, dict]] = field(default_factory=list)

    @property
    def base(self) -> dict | None:
        return self.files[0][1] if self.files else None

    def cases(self) -> dict[str, tuple[dict, Path, dict]]:
        """``case key -> (case, file, report)``, the newest file's recording of each case."""
        newest: dict[str, tuple[dict, Path, dict]] = {}
        for path, report in self.files:
            for case in report.get("cases", ()):
                newest[case_key(case)] = (case, path, report)
        return newest

    def case(self, op: str, shape, dtype: str) -> tuple[dict, Path, dict] | None:
        return self.cases().get(f"{op}/{'x'.join(map(str, shape))}/{dtype}")


def part_files(folder: Path, name: str) -> list[Path]:
    base = folder / f"{name}.json"
    parts = sorted(folder.glob(f"{name}.part-*.json"))
    return ([base] if base.is_file() else []) + parts


def load_sweep(folder: Path, name: str) -> Sweep:
    """The sweep ``name`` of a card's folder: its base and parts in recording order."""
    files = [(path, json.loads(path.read_text())) for path in part_files(folder, name)]
    files.sort(key=lambda item: (item[0].name != f"{name}.json", _started(item[1])))
    return Sweep(name, files)


def _started(report: dict) -> str:
    return report.get("started_at") or report.get("recorded_at") or ""


NOT_CARDS = ("local", "notes", "snapshots")  # results/ folders that are not a card's evidence


def evidence_folders(root: Path = REPO_ROOT) -> list[Path]:
    """Every ``results/<card>/``: the folders of recorded GPU evidence, one a GPU model."""
    results = root / RESULTS
    if not results.is_dir():
        return []
    return sorted(f for f in results.iterdir() if f.is_dir() and f.name not in NOT_CARDS)


def card_folders(root: Path = REPO_ROOT) -> list[Path]:
    """Every ``results/<card>/`` that holds some sweep."""
    return [
        folder for folder in evidence_folders(root)
        if any(part_files(folder, name) for name in SWEEPS)
    ]  # fmt: skip


# --------------------------------------------------------------------------- stale


@dataclass(frozen=True)
class StaleCase:
    key: str
    file: Path
    why: Staleness | None  # None: the sweep's settings select it, but no file records it


@dataclass
class SweepState:
    """What a card's sweep needs: its stale and missing cases, and the command for them."""

    name: str
    folder: Path
    stale: list[StaleCase]
    recorded: int  # cases the sweep holds
    whole: bool  # re-record all of it (no base yet, or a script record)
    seconds: float  # estimated kernel-bench time

    @property
    def fresh(self) -> bool:
        return not self.stale and not self.whole

    def cases(self) -> list[str]:
        """The ``--case`` list of the re-recording (the ceiling's case added where the sweep
        has it, so the part measures its own ceiling); empty when it is re-recorded whole."""
        if self.whole:
            return []
        keys = [case.key for case in self.stale]
        if self.has_ceiling and CEILING_KEY not in keys:
            keys.append(CEILING_KEY)
        return keys

    has_ceiling: bool = False

    def command(self, outdir: str) -> list[str]:
        return SWEEPS[self.name].command(f"{outdir}/{self.name}.json", self.cases())


def _timing(sweep: Sweep, others: Iterable[Sweep]) -> tuple[float, int]:
    """Seconds a case and cases a recording, from this card's recordings of the sweep or,
    failing that, another card's (a script record counts as one case of its elapsed time),
    or failing both, the sweep's own estimate (:meth:`SweepSpec.untimed`)."""
    for candidate in (sweep, *others):
        timed = []
        for _, report in candidate.files:
            if report.get("cases") and report.get("duration_s"):
                timed.append((report["duration_s"], len(report["cases"])))
            elif (report.get("data") or {}).get("elapsed_s"):
                timed.append((report["data"]["elapsed_s"], 1))
        if timed:
            return sum(d for d, _ in timed) / sum(n for _, n in timed), timed[0][1]
    return SWEEPS[sweep.name].untimed()


def _record_stale(report: dict, root: Path) -> Staleness | None:
    """A script record binds every file it fingerprints but the interface modules."""
    from learning.report.binding import is_interface
    from learning.report.fingerprint import file_hashes

    changed = []
    normalized = report["fingerprint"].get("normalized") or {}
    for path, digest in report["fingerprint"]["files"].items():
        if is_interface(path) or path.startswith("/"):
            continue
        live = root / path
        if not live.is_file():
            changed.append(f"{path}: gone from the code")
            continue
        raw, now = file_hashes(live, path)
        if (now != normalized[path]) if path in normalized else (raw != digest):
            changed.append(f"{path}: changed since the run")
    return Staleness("(record)", tuple(changed)) if changed else None


def sweep_state(
    folder: Path, name: str, root: Path = REPO_ROOT, selected: Iterable[str] | None = None
) -> SweepState:
    """The stale and missing cases of one card's sweep. ``selected``: the case keys the sweep's
    settings select today (None: do not look for missing cases)."""
    sweep = load_sweep(folder, name)
    others = [load_sweep(other, name) for other in card_folders(root) if other != folder]
    per_case, count = _timing(sweep, others)
    if not sweep.files or SWEEPS[name].script:
        why = _record_stale(sweep.files[-1][1], root) if sweep.files else None
        whole = not sweep.files or why is not None
        seconds = START_S + per_case * count if whole else 0.0
        return SweepState(name, folder, [], len(sweep.files) and 1, whole, seconds)
    stale: list[StaleCase] = []
    recorded = sweep.cases()
    cache: dict[int, dict[str, Staleness]] = {}
    for key, (case, path, report) in recorded.items():
        if id(report) not in cache:
            cache[id(report)] = {s.op: s for s in stale_ops(report, root)}
        why = cache[id(report)].get(case["op"])
        if why is not None:
            stale.append(StaleCase(key, path, why))
    if selected is not None:
        stale += [StaleCase(key, folder / f"{name}.json", None)
                  for key in selected if key not in recorded]  # fmt: skip
    has_ceiling = CEILING_KEY in recorded
    whole = bool(recorded) and len(stale) == len(recorded)
    count = len(stale) + (has_ceiling and not whole and bool(stale))
    seconds = START_S + per_case * count if stale else 0.0
    return SweepState(name, folder, stale, len(recorded), whole, seconds, has_ceiling)


def plan(states: list[SweepState], budget_s: float = CALL_BUDGET_S) -> list[list[SweepState]]:
    """The sweeps to re-record, grouped into GPU calls of at most ``budget_s`` each (a sweep
    larger than the budget is a call of its own; its cases cannot be split across reports
    that must each measure the ceiling)."""
    calls: list[list[SweepState]] = []
    spent: list[float] = []
    for state in sorted((s for s in states if not s.fresh), key=lambda s: -s.seconds):
        for index, total in enumerate(spent):
            if total + state.seconds <= budget_s:
                calls[index].append(state)
                spent[index] += state.seconds
                break
        else:
            calls.append([state])
            spent.append(state.seconds)
    return calls
