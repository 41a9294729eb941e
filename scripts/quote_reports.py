"""Keep the figures the lessons quote from recorded reports generated from those reports.

A lesson marks quoted evidence with HTML comments, which render invisibly in markdown, Jupyter
and on GitHub; this script fills in what lies between a marker and its end from the JSON file
the marker names, so a re-recorded report never leaves a hand-copied figure behind::

    python scripts/quote_reports.py --check    # exit 1 and list every stale region
    python scripts/quote_reports.py --write    # regenerate them (and jupytext-sync the .ipynb)

Two forms, each naming a JSON file relative to the repository root. The file is a kernel-bench
report (schema version 2: ``cases`` → ``variants``) or a ``scripts/validate_kernels.py`` record
(a script record whose ``data.cases`` carry ``reference_ms``, ``baseline_ms`` and so on).

**A table**: an opening line and a closing line, each alone on its line (indent them together
inside a list item); the lines between are generated::

    <!-- quote: results/h200/all.json op=softmax shape=16384x4096,65536x128 dtype=float16 -->
    <!-- /quote -->

Selectors (all optional): ``op=``, ``shape=``, ``dtype=`` (comma-separated alternatives, ``*``
for any; cases keep the report's order), or instead ``cases=OP/SHAPE/DTYPE,...`` (in that
order); for a report, ``variants=a,b`` (in that order; default every variant). A report's table
has one row per variant: median µs, min–max µs, GB/s (TFLOP/s for a compute-bound case,
``learning.report.compute_bound``) and the ratio against the case's eager variant, the one the
report uses (``ratio_vs_eager``). A validation
record's table has one row per case: the Triton kernel's and the baseline's ms and TB/s and
the speedup. A one-line note under the table names the file and how it was timed.

**A figure in prose**, on one line::

    the softmax takes <!-- q: FILE OP SHAPE DTYPE VARIANT FIELD [.Nf] -->66.88<!-- /q --> µs

Text must come before it on its line: at the start of a line (or of a list item) markdown reads
a comment as an HTML block, which would end the paragraph.

``OP``, ``SHAPE`` and ``DTYPE`` may also be ``*`` or comma-separated alternatives: if more
than one case matches, the figure is the range ``low–high`` over them. ``VARIANT`` is a variant
name; in a validation record ``triton`` (or ``reference``) is the kernel and ``baseline`` (or
the baseline's name, e.g. ``torch``) the baseline. ``FIELD`` is one of

====================  ======================================================  ===========
``median_us``         median in µs (also ``min_us``, ``max_us``)               2 decimals
``range_us``          ``min–max`` in µs                                        2 decimals
``median_ms``         median in ms                                             4 decimals
``gbps``, ``tbps``    logical GB/s, TB/s                                       1, 2
``tflops``            TFLOP/s                                                  1 decimal
``ratio``             against eager (a record: the speedup over its baseline)  2 decimals
``speedup:OTHER``     OTHER's median over VARIANT's (× faster than OTHER)      2 decimals
``max_abs_error``     the oracle check's error (a record also has
                      ``tolerance_used``)                                      3 digits
====================  ======================================================  ===========

``.Nf`` overrides the decimals. A numeric field followed by a target makes a verdict instead:
``FIELD>=T`` (or ``<=T``) renders ``met`` or ``**missed**`` (comparing the value as the field
would show it, so a shown 1.50 meets 1.5), and ``FIELD@T`` renders how far it is from T,
``2.1 % below`` or ``0.4 % above``; e.g. ``speedup:compile>=1.5``, ``gbps@4100``. A verdict
or a distance needs exactly one case.

``--check`` exits 0 when every region is up to date, 1 listing each stale one (file:line,
expected against found), 2 with one line on a bad marker (an unknown file, case, variant or
field; a marker without its end). ``--write`` regenerates the regions of every lesson; for a
paired lesson (a jupytext header with ``ipynb`` in its formats) it writes the ``.ipynb`` through
jupytext's API (``combine_inputs_with_outputs``, what ``jupytext --sync`` does), so the pair
never disagrees. Nothing is written unless every marker of every file is good, and each file is
replaced atomically (a temporary file, then a rename), the notebook before its source.

**A figure outside a marker.** A lesson can also state a figure from a results file in its
own words, and ``--check`` reads those too. Every block of a lesson (a paragraph, a list, a
table, a fenced ``text`` excerpt; a table or an excerpt also takes the files named anywhere in
its section, between two headings) that names a file under ``results/`` (a path such as
``results/h200/all.json``, or a bare name such as ``all-cold.json`` that exists in
``results/h200``, ``results/notes`` or ``results``) has its figures checked against those
files. A figure is a decimal number followed by a unit a report records (µs, ms, s, GB/s,
TB/s, TFLOP/s, MHz); in a ``text`` excerpt of a log, every decimal number. It must be *held*
by one of the files: equal to one of the numbers the file holds (a JSON file's values, its
``samples_ms`` left out; the numbers written in a ``.log`` or ``.md``) rounded to the
decimals shown, as it is or scaled by 1000 either way (ms and µs, GB/s and TB/s, ns and µs).
A figure inside a marker or a code span is not read here. A figure that no file can hold, one
the lesson computes (a sum, a bound) or one from an earlier version of a file, is followed,
after its unit, by ``<!-- unchecked: WHY -->``, which tells the reader of the source what it
is. ``--check`` lists every figure no named file holds (exit 1); ``--write`` lists them too
after regenerating the markers, since only a person can rewrite a sentence around a figure
that moved. Ratios and percentages are not read: they are mostly computed from two figures,
and a ``ratio`` or ``speedup:`` marker quotes the ones a report gives.

**A figure of earlier code.** A quoted case whose code has changed since it was measured
(``learning.report.binding``: a file its figures depend on changed, the freshness ``python -m
learning.report stale`` reports) is still what that code measured, but the page must say so:
``--check`` fails for a file that quotes such a case until a sentence of it says, in words,
that its figures are of earlier code, followed by ``<!-- earlier-code -->``.

After a report is re-recorded: ``python scripts/quote_reports.py --write``, then read
``git diff lessons/``. A figure or a verdict that moved may need the words around it to move
too (the markers keep the numbers honest, not the prose).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from report_results import _fmt, _shape  # noqa: E402

from learning.report import compute_bound  # noqa: E402

BLOCK_OPEN = re.compile(r"^(?P<indent>[ \t]*)<!--\s*quote:\s*(?P<args>.*?)\s*-->\s*$")
BLOCK_CLOSE = re.compile(r"^[ \t]*<!--\s*/quote\s*-->\s*$")
BLOCK_ANY = re.compile(r"<!--\s*/?quote\b")
INLINE = re.compile(r"<!--\s*q:\s*(?P<args>.*?)\s*-->(?P<body>.*?)<!--\s*/q\s*-->")
LINE_START = re.compile(r"[ \t>]*(?:[*+-]|\d+[.)])?[ \t]*")  # nothing but a bullet before
INLINE_ANY = re.compile(r"<!--\s*(?:q:|/q\s*-->)")
FIELD = re.compile(
    r"^(?P<base>[a-z_]+)(?::(?P<other>[\w.-]+))?(?:(?P<op>>=|<=|@)(?P<target>\d+(?:\.\d+)?))?$"
)
PRECISION = re.compile(r"^\.(\d)f$")
DASH = "–"  # an en dash between the ends of a range

# field -> decimals it is shown with (None: three significant digits)
DECIMALS = {"median_us": 2, "min_us": 2, "max_us": 2, "range_us": 2, "median_ms": 4,
            "gbps": 1, "tbps": 2, "tflops": 1, "ratio": 2, "speedup": 2,
            "max_abs_error": None, "tolerance_used": None}  # fmt: skip


class MarkerError(Exception):
    """A marker that cannot be rendered: its one-line description."""


@dataclass
class Stale:
    where: str
    what: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}: expected {self.expected!r}, found {self.found!r}"


@dataclass
class Loose:
    """A figure outside a marker that none of the results files its block names holds."""

    where: str
    figure: str
    names: list[str]

    def __str__(self) -> str:
        named = ", ".join(self.names[:3]) + (
            f" and {len(self.names) - 3} more" if len(self.names) > 3 else ""
        )
        return f"{self.where}: {self.figure} is held by none of the files cited there ({named})"


@dataclass
class Result:
    path: Path
    old: str
    new: str
    stale: list[Stale] = field(default_factory=list)
    unquoted: list[Loose] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)


# --- reading the evidence -------------------------------------------------------------------


def _newest_cases(path: Path, cases: list[dict]) -> list[dict]:
    """A sweep's base report names the sweep: each case as its newest recording, the base's
    own or a later part's (``learning.report.sweeps``), in the base's order."""
    from learning.report import sweeps

    if path.stem not in sweeps.SWEEPS or not sweeps.part_files(path.parent, path.stem)[1:]:
        return cases
    newest = sweeps.load_sweep(path.parent, path.stem).cases()
    return [newest[sweeps.case_key(case)][0] for case in cases]


class Source:
    """One JSON file a marker names: a kernel-bench report or a validation record. A sweep's
    base report stands for the sweep: its cases are their newest recordings."""

    def __init__(self, name: str, root: Path, quoted: list | None = None):
        path = root / name
        if not path.is_file():
            raise MarkerError(f"unknown file {name}")
        self.path, self.quoted = path, quoted if quoted is not None else []
        try:
            document = json.loads(path.read_text())
        except ValueError as error:
            raise MarkerError(f"{name} is not JSON: {error}") from None
        self.name = name
        if (
            isinstance(document, dict)
            and document.get("schema_version") == 2
            and isinstance(document.get("cases"), list)
        ):
            self.kind, self.document, self.cases = "report", document, document["cases"]
            self.cases = _newest_cases(path, self.cases)
        elif (
            isinstance(document, dict)
            and document.get("record") == "script-output"  # learning.report.records.is_record
            and isinstance(document.get("data"), dict)
            and isinstance(document["data"].get("cases"), list)
        ):
            self.kind, self.document, self.cases = "record", document, document["data"]["cases"]
        else:
            raise MarkerError(
                f"{name} is neither a kernel-bench report nor a validate_kernels record"
            )

    @staticmethod
    def shape(case: dict) -> str:
        return case["shape"] if isinstance(case["shape"], str) else _shape(case)

    def label(self, case: dict) -> str:
        return f"{case['op']} {self.shape(case)} {case['dtype']}"

    def select(self, ops: str = "*", shapes: str = "*", dtypes: str = "*") -> list[dict]:
        def accepts(pattern: str, value: str) -> bool:
            return pattern == "*" or value in pattern.split(",")

        chosen = [
            case
            for case in self.cases
            if accepts(ops, case["op"])
            and accepts(shapes, self.shape(case))
            and accepts(dtypes, case["dtype"])
        ]
        if not chosen:
            raise MarkerError(f"{self.name} has no case {ops} {shapes} {dtypes}")
        self.quoted += [(self, case) for case in chosen]
        return chosen

    def variant(self, case: dict, name: str) -> dict:
        if self.kind == "report":
            for variant in case["variants"]:
                if variant["name"] == name:
                    return variant
            names = ", ".join(v["name"] for v in case["variants"])
            raise MarkerError(f"{self.name}: {self.label(case)} has no variant {name} ({names})")
        if name in ("triton", "reference"):
            return {"prefix": "reference", "case": case}
        if name in ("baseline", case.get("baseline")):
            return {"prefix": "baseline", "case": case}
        raise MarkerError(
            f"{self.name}: {self.label(case)} has no variant {name} "
            f"(triton, baseline or {case.get('baseline')})"
        )

    def value(self, case: dict, variant: dict, name: str) -> float | None:
        """The figure ``name`` (a key of DECIMALS but range_us and speedup) of one variant."""
        if self.kind == "report":
            correctness = variant.get("correctness") or {}
            raw = {
                "median_ms": variant.get("median_ms"),
                "min_ms": variant.get("min_ms"),
                "max_ms": variant.get("max_ms"),
                "gbps": variant.get("logical_gbps"),
                "tflops": variant.get("tflops"),
                "ratio": variant.get("ratio_vs_eager"),
                "max_abs_error": correctness.get("max_abs_error"),
                "tolerance_used": correctness.get("tolerance_used"),
            }
        else:
            prefix, kernel = variant["prefix"], variant["prefix"] == "reference"
            tbps = case.get(f"{prefix}_tbps")
            raw = {
                "median_ms": case.get(f"{prefix}_ms"),
                "gbps": None if tbps is None else tbps * 1e3,
                "ratio": case.get("speedup") if kernel else 1.0,
                "max_abs_error": case.get("max_abs_error") if kernel else None,
                "tolerance_used": case.get("tolerance_used") if kernel else None,
            }
        scaled = {
            "median_us": ("median_ms", 1e3),
            "min_us": ("min_ms", 1e3),
            "max_us": ("max_ms", 1e3),
            "tbps": ("gbps", 1e-3),
        }
        if name in scaled:
            key, factor = scaled[name]
            number = raw.get(key)
            return None if number is None else number * factor
        if name not in raw:
            raise MarkerError(f"{self.name} has no field {name} for {self.kind}s")
        return raw[name]


class Sources(dict):
    def __init__(self, root: Path):
        super().__init__()
        self.root = root
        self.quoted: list[tuple[Source, dict]] = []  # every (file, case) a marker quoted
        self._stale: dict[int, set[str]] = {}

    def __missing__(self, name: str) -> Source:
        self[name] = Source(name, self.root, self.quoted)
        return self[name]

    def measured_on_earlier_code(self, source: Source, case: dict) -> bool:
        """Whether ``case`` of a kernel-bench report no longer describes the course's code:
        a file its figures depend on has changed since it was measured
        (``learning.report.binding``; a sweep's case, by the file that recorded it)."""
        from learning.report import binding, sweeps

        if source.kind != "report" or "fingerprint" not in source.document:
            return False  # bound to no code (a recorded report without one fails validation)
        report = source.document
        if source.path.stem in sweeps.SWEEPS and sweeps.part_files(source.path.parent,
                                                                   source.path.stem)[1:]:
            found = sweeps.load_sweep(source.path.parent, source.path.stem).case(
                case["op"], case["shape"], case["dtype"])  # fmt: skip
            report = found[2] if found else report
        if id(report) not in self._stale:
            self._stale[id(report)] = {s.op for s in binding.stale_ops(report, self.root)}
        return case["op"] in self._stale[id(report)]


# --- rendering ------------------------------------------------------------------------------


def _number(value: float, decimals: int | None) -> str:
    if decimals is None:
        return format(value, ".3g")
    text = format(value, f".{decimals}f")
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"


def render_inline(args: str, sources: Sources) -> str:
    """The text an inline marker's arguments stand for."""
    tokens = args.split()
    if len(tokens) not in (6, 7):
        raise MarkerError(
            f"an inline quote needs FILE OP SHAPE DTYPE VARIANT FIELD [.Nf], got {args!r}"
        )
    name, ops, shapes, dtypes, variant_name, spec = tokens[:6]
    decimals_override = None
    if len(tokens) == 7:
        precision = PRECISION.match(tokens[6])
        if not precision:
            raise MarkerError(f"bad precision {tokens[6]!r} (use .0f to .9f)")
        decimals_override = int(precision.group(1))
    parsed = FIELD.match(spec)
    base = parsed and parsed.group("base")
    if not parsed or base not in DECIMALS or (base == "speedup") != bool(parsed.group("other")):
        raise MarkerError(f"unknown field {spec!r} (known: {', '.join(DECIMALS)}, speedup:OTHER)")
    source = sources[name]
    cases = source.select(ops, shapes, dtypes)
    op, target = parsed.group("op"), parsed.group("target")
    decimals = DECIMALS[base] if decimals_override is None else decimals_override

    def one(case: dict, what: str) -> float:
        variant = source.variant(case, variant_name)
        if what == "speedup":
            other = source.variant(case, parsed.group("other"))
            mine, theirs = (source.value(case, v, "median_ms") for v in (variant, other))
            number = None if not mine or theirs is None else theirs / mine
        else:
            number = source.value(case, variant, what)
        if number is None or not math.isfinite(number):
            status = (variant if source.kind == "report" else case).get("status", "not recorded")
            raise MarkerError(
                f"{name}: {source.label(case)} {variant_name} has no {what} ({status})"
            )
        return number

    if base == "range_us":
        if len(cases) != 1:
            raise MarkerError(f"range_us needs one case; {args!r} matches {len(cases)}")
        low, high = one(cases[0], "min_us"), one(cases[0], "max_us")
        return f"{_number(low, decimals)}{DASH}{_number(high, decimals)}"
    values = [one(case, base) for case in cases]
    if op is not None:
        if len(values) != 1:
            raise MarkerError(f"a target needs one case; {args!r} matches {len(values)}")
        value, goal = values[0], float(target)
        if op == "@":
            percent = (value / goal - 1.0) * 100.0
            return f"{abs(percent):.1f} % {'above' if percent >= 0 else 'below'}"
        shown = float(_number(value, DECIMALS[base])) if DECIMALS[base] is not None else value
        met = shown >= goal if op == ">=" else shown <= goal
        return "met" if met else "**missed**"
    low, high = min(values), max(values)
    if _number(low, decimals) == _number(high, decimals):
        return _number(low, decimals)
    return f"{_number(low, decimals)}{DASH}{_number(high, decimals)}"


def _parse_block_args(args: str) -> tuple[str, dict[str, str]]:
    tokens = args.split()
    if not tokens:
        raise MarkerError("a quote block needs a file")
    options = {}
    for token in tokens[1:]:
        key, sep, value = token.partition("=")
        if not sep or key not in ("op", "shape", "dtype", "cases", "variants") or not value:
            raise MarkerError(
                f"bad quote option {token!r} (op=, shape=, dtype=, cases=, variants=)"
            )
        if key in options:
            raise MarkerError(f"quote option {key}= given twice")
        options[key] = value
    if "cases" in options and {"op", "shape", "dtype"} & options.keys():
        raise MarkerError("give cases= or op=/shape=/dtype=, not both")
    return tokens[0], options


def _block_cases(source: Source, options: dict[str, str]) -> list[dict]:
    if "cases" not in options:
        return source.select(
            options.get("op", "*"), options.get("shape", "*"), options.get("dtype", "*")
        )
    chosen = []
    for item in options["cases"].split(","):
        parts = item.split("/")
        if len(parts) != 3 or "*" in parts:
            raise MarkerError(f"cases= takes OP/SHAPE/DTYPE items, got {item!r}")
        chosen += source.select(*parts)
    return chosen


def _report_table(source: Source, cases: list[dict], variants: str | None) -> list[str]:
    rows, units = [], set()
    for case in cases:
        names = variants.split(",") if variants else [v["name"] for v in case["variants"]]
        for index, name in enumerate(names):
            v = source.variant(case, name)
            if compute_bound(case):  # TFLOP/s, as kernel-bench's table
                rate, unit = v.get("tflops"), "TFLOP/s"
            else:
                rate, unit = v.get("logical_gbps"), "GB/s"
            units.add(unit)
            if v["status"] == "timed" and v["median_ms"] is not None:
                median = _fmt(v["median_ms"] * 1e3, ".2f")
                spread = f"{_fmt(v['min_ms'] * 1e3, '.2f')}{DASH}{_fmt(v['max_ms'] * 1e3, '.2f')}"
            else:
                reason = f": {v['reason']}" if v.get("reason") else ""
                median, spread = f"{v['status']}{reason}"[:60].replace("|", "/"), "-"
            ratio = v.get("ratio_vs_eager")
            rows.append((source.label(case) if index == 0 else "", name, median, spread, rate,
                         unit, "-" if ratio is None else f"{ratio:.2f}×"))  # fmt: skip
    mixed = len(units) > 1
    header = "rate" if mixed else units.pop()
    lines = [f"| case | variant | median µs | min{DASH}max µs | {header} | vs eager |",
             "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for label, name, median, spread, rate, unit, ratio in rows:
        spec = ".1f"
        shown = _fmt(rate, spec) + (f" {unit}" if mixed and rate is not None else "")
        lines.append(f"| {label} | {name} | {median} | {spread} | {shown} | {ratio} |")
    settings, environment = source.document["settings"], source.document["environment"]
    eager = ", ".join(f"`{name}`" for name in dict.fromkeys(c["eager_variant"] for c in cases))
    note = (
        f"*From `{source.name}`: {environment.get('gpu_name') or 'the CPU interpreter'}, "
        f"{settings['timing']} timing, {settings['cache']} cache, median of "
        f"{settings['samples']} samples over {settings['visits']} visits; vs eager is the eager "
        f"variant's median ({eager}) over the variant's.*"
    )
    return [*lines, "", note]


def _record_table(source: Source, cases: list[dict]) -> list[str]:
    lines = ["| case | status | Triton ms | Triton TB/s | baseline | baseline ms "
             "| baseline TB/s | speedup |",
             "|---|---|---:|---:|---|---:|---:|---:|"]  # fmt: skip
    for case in cases:
        lines.append(
            f"| {source.label(case)} | {case.get('status', '-')} | "
            f"{_fmt(case.get('reference_ms'), '.4f')} | {_fmt(case.get('reference_tbps'), '.2f')} "
            f"| {case.get('baseline') or '-'} | {_fmt(case.get('baseline_ms'), '.4f')} | "
            f"{_fmt(case.get('baseline_tbps'), '.2f')} | {_fmt(case.get('speedup'), '.2f')} |"
        )
    document, data = source.document, source.document["data"]
    gpu = (data.get("environment") or {}).get("gpu") or "the CPU interpreter"
    note = (
        f"*From `{source.name}` (`{document.get('script')}`, recorded "
        f"{document.get('recorded_at')}, {gpu}): {data.get('note') or 'no note'}; speedup is "
        f"the baseline's ms over the Triton kernel's.*"
    )
    return [*lines, "", note]


def render_block(args: str, indent: str, sources: Sources) -> list[str]:
    """The lines between a quote block's opening and closing markers."""
    name, options = _parse_block_args(args)
    source = sources[name]
    cases = _block_cases(source, options)
    if source.kind == "report":
        body = _report_table(source, cases, options.get("variants"))
    elif "variants" in options:
        raise MarkerError(f"variants= applies to kernel-bench reports, not to {name}")
    else:
        body = _record_table(source, cases)
    return ["", *(f"{indent}{line}" if line else "" for line in body), ""]


# --- figures outside the markers -----------------------------------------------------------

CITED = re.compile(r"(?<![\w/.-])(results/(?:[\w-]+/)*[\w.*-]+\.(?:json|log|md|txt))\b")
BARE_NAME = re.compile(r"(?<![\w/.*-])([\w][\w.-]*\.(?:json|log))\b")
RESULT_FOLDERS = ("results/h200", "results/notes", "results")
FIGURE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?![\w.])")
UNIT = re.compile(r"\s?(?:µs|ms|s|GB/s|TB/s|TFLOP/s|MHz)(?![\w/])")
UNCHECKED = re.compile(r"\s*<!--\s*unchecked:\s*\S.*?-->")
# After a sentence that says the file's quoted figures were measured on earlier code.
EARLIER = "<!-- earlier-code -->"
CODE_SPAN = re.compile(r"(`+).*?\1")
SCALES = (1.0, 1e3, 1e-3)


@dataclass
class Block:
    start: int  # 1-based line number of its first line
    lines: list[str]
    kind: str  # "prose", "table" or "excerpt"
    section: int = 0  # how many headings come before it


def _blocks(text: str) -> list[Block]:
    """A lesson's paragraphs, lists, tables and fenced text excerpts; code, generated quote
    regions and the front matter left out."""
    blocks, current, fence, in_quote, section = [], None, None, False, 0
    lines = text.split("\n")
    index = 0
    if text.startswith("---\n"):
        index = next((i for i in range(1, len(lines)) if lines[i] == "---"), 0) + 1
    for number, line in enumerate(lines[index:], index + 1):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
                current = None
            elif current is not None:
                current.lines.append(line)
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            info = stripped[3:].strip()
            current = Block(number + 1, [], "excerpt", section) if info == "text" else None
            if current is not None:
                blocks.append(current)
            continue
        if BLOCK_OPEN.match(line):
            in_quote, current = True, None
            continue
        if in_quote:
            in_quote = not BLOCK_CLOSE.match(line)
            continue
        if not stripped or stripped == "+++":
            current = None
            continue
        if stripped.startswith("#"):
            section, current = section + 1, None
            continue
        kind = "table" if stripped.startswith("|") else "prose"
        if current is None or current.kind != kind:
            current = Block(number, [], kind, section)
            blocks.append(current)
        current.lines.append(line)
    return blocks


class Held:
    """The figures the files under results/ hold, read once each."""

    _made: dict[Path, Held] = {}

    @classmethod
    def of(cls, root: Path) -> Held:
        if root not in cls._made:
            cls._made[root] = cls(root)
        return cls._made[root]

    def __init__(self, root: Path):
        self.root = root
        self.names = {}  # bare file name -> its path from the root
        for folder in reversed(RESULT_FOLDERS):
            directory = root / folder
            if directory.is_dir():
                for path in directory.iterdir():
                    if path.is_file():
                        self.names[path.name] = f"{folder}/{path.name}"
        self.cache: dict[str, tuple[set[str], list[float]]] = {}

    def cited(self, text: str) -> list[str]:
        """The existing results files a block names (a pattern with * names every match)."""
        found = CITED.findall(text) + [
            self.names[name] for name in BARE_NAME.findall(text) if name in self.names
        ]
        paths = []
        for name in dict.fromkeys(found):
            matches = sorted(self.root.glob(name)) if "*" in name else [self.root / name]
            paths += [_shown(m, self.root) for m in matches if m.is_file()]
        return list(dict.fromkeys(paths))

    def _read(self, name: str) -> tuple[set[str], list[float]]:
        if name not in self.cache:
            text = (self.root / name).read_text(encoding="utf-8", errors="replace")
            numbers: list[float] = []
            if name.endswith(".json"):
                try:
                    _numbers(json.loads(text), numbers)
                except ValueError:
                    pass
            written = {match.replace(",", "") for match in re.findall(r"\d[\d,]*\.\d+", text)}
            numbers += [float(number) for number in written]  # a log's 186.41 holds 186.4
            numbers += [float(n.replace(",", "")) for n in re.findall(r"\d{1,3}(?:,\d{3})+", text)]
            self.cache[name] = (written, numbers)
        return self.cache[name]

    def holds(self, figure: str, names: list[str]) -> bool:
        plain = figure.replace(",", "")
        decimals = len(plain.split(".")[1])
        for name in names:
            written, numbers = self._read(name)
            if plain in written:
                return True
            if any(
                format(number * scale, f".{decimals}f") == plain
                for number in numbers
                for scale in SCALES
            ):
                return True
        return False


def _numbers(document, out: list[float]) -> None:
    if isinstance(document, dict):
        for key, value in document.items():
            if key != "samples_ms":  # a sample is not a figure a lesson quotes
                _numbers(value, out)
    elif isinstance(document, list):
        for value in document:
            _numbers(value, out)
    elif isinstance(document, (int, float)) and not isinstance(document, bool):
        if math.isfinite(document):
            out.append(float(document))


def _unmarked(line: str) -> str:
    """A line with its inline markers' figures and its code spans blanked out (same length)."""
    line = INLINE.sub(lambda m: " " * len(m.group(0)), line)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def unquoted(text: str, shown: str, held: Held) -> list[Loose]:
    """Every figure a block attributes to a results file that no file it names holds."""
    blocks = _blocks(text)
    cited = [held.cited("\n".join(block.lines)) for block in blocks]
    found = []
    for index, block in enumerate(blocks):
        names = list(cited[index])
        if block.kind != "prose":  # a table or an excerpt: the section's text names the file
            for other, neighbour in enumerate(blocks):
                if neighbour.section == block.section and neighbour.kind == "prose":
                    names += [name for name in cited[other] if name not in names]
        if not names:
            continue
        for offset, line in enumerate(block.lines):
            visible = _unmarked(line)
            for match in FIGURE.finditer(visible):
                after = visible[match.end() :]
                unit = UNIT.match(after)
                if block.kind != "excerpt" and not unit:
                    continue
                rest = line[match.end() + (unit.end() if unit else 0) :]
                if UNCHECKED.match(rest):
                    continue
                figure = match.group(0)
                if not held.holds(figure, names):
                    shown_unit = unit.group(0).strip() if unit else ""
                    found.append(Loose(f"{shown}:{block.start + offset}",
                                       f"{figure} {shown_unit}".strip(), names))  # fmt: skip
    return found


# --- lessons --------------------------------------------------------------------------------


def process(path: Path, sources: Sources, shown: str) -> Result:
    """Render every marker of one file; MarkerError (with file:line) on a bad one."""
    old = path.read_text(encoding="utf-8")
    lines, out, stale = old.split("\n"), [], []
    sources.quoted.clear()
    index = 0
    while index < len(lines):
        line, where = lines[index], f"{shown}:{index + 1}"
        try:
            opening = BLOCK_OPEN.match(line)
            if opening:
                end = index + 1
                while end < len(lines) and not BLOCK_CLOSE.match(lines[end]):
                    if BLOCK_ANY.search(lines[end]):
                        raise MarkerError("quote block opened again before its <!-- /quote -->")
                    end += 1
                if end == len(lines):
                    raise MarkerError("quote block without its <!-- /quote --> line")
                expected = render_block(opening.group("args"), opening.group("indent"), sources)
                found = lines[index + 1 : end]
                if found != expected:
                    differ = next(
                        (i for i, (e, f) in enumerate(zip(expected, found, strict=False))
                         if e != f), min(len(expected), len(found)))  # fmt: skip
                    stale.append(Stale(
                        where, f"quote {opening.group('args')} (line {index + 2 + differ})",
                        expected[differ] if differ < len(expected) else "<nothing>",
                        found[differ] if differ < len(found) else "<nothing>"))  # fmt: skip
                out += [line, *expected, lines[end]]
                index = end + 1
                continue
            if BLOCK_ANY.search(line):
                raise MarkerError("a quote marker must be alone on its line, and opened first")
            matches = list(INLINE.finditer(line))
            if len(INLINE_ANY.findall(line)) != 2 * len(matches):
                raise MarkerError("an inline <!-- q: ... --> needs its <!-- /q --> on its line")
            pieces, last = [], 0
            for match in matches:
                if LINE_START.fullmatch(line[: match.start()]):
                    raise MarkerError(
                        "an inline <!-- q: ... --> must follow text on its line (at the start "
                        "of a line, markdown reads it as an HTML block and breaks the paragraph)"
                    )
                expected = render_inline(match.group("args"), sources)
                if match.group("body") != expected:
                    stale.append(Stale(where, match.group("args"), expected, match.group("body")))
                pieces += [line[last : match.start("body")], expected]
                last = match.end("body")
            out.append("".join(pieces) + line[last:])
        except MarkerError as error:
            raise MarkerError(f"{where}: {error}") from None
        index += 1
    return Result(path, old, "\n".join(out), stale, unquoted(old, shown, Held.of(sources.root)),
                  _earlier(old, shown, sources))  # fmt: skip


def _earlier(text: str, shown: str, sources: Sources) -> list[str]:
    """One line when the file quotes cases measured on code that has changed since and does
    not say so (its words, marked by :data:`EARLIER`)."""
    if EARLIER in text:
        return []
    cases = sorted({f"{source.name} {source.label(case)}" for source, case in sources.quoted
                    if sources.measured_on_earlier_code(source, case)})  # fmt: skip
    if not cases:
        return []
    shown_cases = "; ".join(cases[:2]) + (f"; and {len(cases) - 2} more" if len(cases) > 2 else "")
    return [f"{shown}: quotes {len(cases)} case(s) measured on code that has changed since "
            f"({shown_cases}): say so in the lesson's words, with {EARLIER} after that "
            "sentence, or quote a report of the current code"]  # fmt: skip


def _paired(text: str) -> bool:
    if not text.startswith("---\njupytext:"):
        return False
    header = text.split("\n---\n", 1)[0]
    formats = re.search(r"^\s*formats:\s*(\S+)", header, re.MULTILINE)
    return bool(formats and "ipynb" in formats.group(1).split(","))


def _notebook_text(source_text: str, notebook: Path) -> str:
    """The .ipynb that ``jupytext --sync`` would write for the markdown ``source_text``."""
    import jupytext
    from jupytext.combine import combine_inputs_with_outputs

    inputs = jupytext.reads(source_text, fmt="md:myst")
    if notebook.is_file():
        inputs = combine_inputs_with_outputs(inputs, jupytext.read(notebook), fmt="md:myst")
    text = jupytext.writes(inputs, fmt="ipynb")
    return text if text.endswith("\n") else text + "\n"


def _write_atomic(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 if any region is stale")
    mode.add_argument("--write", action="store_true", help="regenerate every stale region")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="where marker file names start (default: the repo)"
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="markdown files (default: ROOT/lessons/*.md)"
    )
    args = parser.parse_args(argv)
    files = args.files or sorted((args.root / "lessons").glob("*.md"))
    sources = Sources(args.root)
    try:
        for path in files:
            if not path.is_file():
                raise MarkerError(f"{path}: no such file")
        results = [process(path, sources, _shown(path, args.root)) for path in files]
        writes = []  # (path, text), every notebook before its source
        if args.write:
            for result in results:
                if result.new == result.old:
                    continue
                if _paired(result.new):
                    notebook = result.path.with_suffix(".ipynb")
                    writes.append((notebook, _notebook_text(result.new, notebook)))
                writes.append((result.path, result.new))
    except (MarkerError, OSError, UnicodeDecodeError) as error:
        print(f"quote_reports: {error}", file=sys.stderr)
        return 2
    stale = [item for result in results for item in result.stale]
    loose = [item for result in results for item in result.unquoted]
    earlier = [item for result in results for item in result.earlier]
    if args.check:
        for item in stale + loose + earlier:
            print(item)
        if stale:
            print(f"{len(stale)} stale quote(s): run `python scripts/quote_reports.py --write`")
        if loose:
            print(f"{len(loose)} figure(s) outside a marker that no file they cite holds: "
                  "quote them through a marker, correct them, or say why not "
                  "(<!-- unchecked: WHY -->)")  # fmt: skip
        if earlier:
            print(f"{len(earlier)} file(s) quote figures of earlier code without saying so")
        if stale or loose or earlier:
            return 1
        print(f"quote_reports: every quote in {len(files)} file(s) is up to date")
        return 0
    for path, text in writes:
        _write_atomic(path, text)
        print(f"wrote {_shown(path, args.root)}")
    print(f"quote_reports: {len(stale)} stale quote(s) regenerated")
    for item in loose + earlier:
        print(item)
    if loose or earlier:
        print(f"quote_reports: {len(loose)} figure(s) outside a marker need rewriting by hand "
              "(--check fails until they are)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
