"""Run the CUDA C++ softmax program a few times and set the runs side by side.

One run of ``cuda/build/softmax`` gives one median a kernel. Whether a difference between two
kernels means anything depends on how much that median moves from one run to the next, so this
script runs the program ``--runs`` times (default 3) on each shape and prints, for every kernel,
the run medians next to each other and their spread.

    python3 scripts/cuda_runs.py                          # build if needed, run 3 x 2 shapes
    python3 scripts/cuda_runs.py --runs 3 --output-dir DIR --log DIR/cuda-softmax-runs.log
    python3 scripts/cuda_runs.py --from-json A.json B.json C.json    # no GPU needed

The functions ``load_report`` and ``format_table`` are what the lesson calls on recorded JSON.
Exit status: 0 fine; 1 a run failed (a kernel failed its check, or the program crashed);
2 bad arguments or a malformed report.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CUDA_DIR = REPO_ROOT / "cuda"
DEFAULT_BINARY = CUDA_DIR / "build" / "softmax"
DEFAULT_SHAPES = ("4096x4096", "1823x781")  # the square one, then an irregular one
REPORT_FORMAT = "cuda-softmax/1"
RUN_TIMEOUT_S = 300


class ReportError(ValueError):
    """A report that cannot be read: the message is one line naming the file and the fault."""


# --------------------------------------------------------------------------- reading reports


def _require(condition: bool, path: Path, problem: str) -> None:
    if not condition:
        raise ReportError(f"{path}: {problem}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def load_report(path: str | Path) -> dict:
    """Read one JSON written by ``softmax --output`` and check the fields the table needs."""
    path = Path(path)
    try:
        report = json.loads(path.read_text())
    except OSError as error:
        raise ReportError(f"{path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
    _require(isinstance(report, dict), path, "expected a JSON object at the top")
    _require(
        report.get("format") == REPORT_FORMAT,
        path,
        f"format is {report.get('format')!r}; expected {REPORT_FORMAT!r}",
    )
    _require(isinstance(report.get("gpu_name"), str), path, "gpu_name is missing")
    _require(isinstance(report.get("sm_count"), int), path, "sm_count is missing")
    shape = report.get("shape")
    _require(
        isinstance(shape, dict)
        and all(isinstance(shape.get(key), int) and shape[key] > 0 for key in ("rows", "cols")),
        path,
        "shape must be {rows: int, cols: int}",
    )
    kernels = report.get("kernels")
    _require(isinstance(kernels, list) and kernels, path, "kernels must be a non-empty list")
    for index, kernel in enumerate(kernels):
        where = f"kernels[{index}]"
        _require(isinstance(kernel, dict), path, f"{where} is not an object")
        _require(isinstance(kernel.get("name"), str), path, f"{where} has no name")
        where = f"kernel {kernel['name']!r}"
        _require(isinstance(kernel.get("passed"), bool), path, f"{where}: passed must be a bool")
        rows_timed = kernel.get("rows_timed")
        _require(
            isinstance(rows_timed, int) and 0 < rows_timed <= shape["rows"],
            path,
            f"{where}: rows_timed must be a whole number from 1 to the shape's rows",
        )
        samples = kernel.get("samples_ms")
        _require(
            isinstance(samples, list) and all(_is_number(s) and s > 0 for s in samples),
            path,
            f"{where}: samples_ms must be a list of positive numbers",
        )
        if kernel["passed"]:
            _require(bool(samples), path, f"{where} passed its check but has no samples")
            _require(
                _is_number(kernel.get("median_ms")), path, f"{where}: median_ms is not a number"
            )
    return report


# --------------------------------------------------------------------------- the table


def _shape_text(report: dict) -> str:
    return f"{report['shape']['rows']} x {report['shape']['cols']}"


def _spread_percent(medians: Sequence[float]) -> float:
    """(largest - smallest) / smallest run median, in percent: how far runs disagree."""
    return 100.0 * (max(medians) - min(medians)) / min(medians)


def _group(reports: Sequence[dict]) -> dict[tuple[str, int, int], list[dict]]:
    groups: dict[tuple[str, int, int], list[dict]] = {}
    for report in reports:
        key = (report["gpu_name"], report["shape"]["rows"], report["shape"]["cols"])
        groups.setdefault(key, []).append(report)
    return groups


def format_table(reports: Sequence[dict]) -> str:
    """Per shape and GPU: each kernel's median a launch in every run, the spread, GB/s.

    The last column divides the serial kernel's time a row by this kernel's time a row: how much
    running the rows in parallel bought. The serial time a row comes from its ``rows_timed``
    rows only, so this is a scaled estimate, and the table says so.
    """
    lines: list[str] = []
    for (gpu_name, rows, cols), group in _group(reports).items():
        first = group[0]
        lines.append(
            f"softmax float32 {_shape_text(first)} on {gpu_name} ({first['sm_count']} SMs): "
            f"{len(group)} run(s); median ms a launch in each run"
        )
        header = f"{'kernel':<15}{'rows timed':>11}"
        header += "".join(f"{f'run {i + 1}':>10}" for i in range(len(group)))
        header += f"{'spread':>9}{'GB/s':>9}{'x serial/row':>14}"
        lines.append(header)
        serial_ms_per_row = _serial_ms_per_row(group)
        names = [kernel["name"] for kernel in first["kernels"]]
        for name in names:
            runs = [_kernel(report, name) for report in group]
            rows_timed = next((k["rows_timed"] for k in runs if k is not None), 0)
            medians = [k["median_ms"] for k in runs if k is not None and k["passed"]]
            cells = "".join(f"{_cell(kernel):>10}" for kernel in runs)
            line = f"{name:<15}{rows_timed:>11}{cells}"
            if medians:
                median_of_runs = statistics.median(medians)
                gbps = 2 * rows_timed * cols * 4 / (median_of_runs * 1e-3) / 1e9
                line += f"{_spread_percent(medians):>8.1f}%{gbps:>9.1f}"
                if serial_ms_per_row is not None:
                    speedup = serial_ms_per_row / (median_of_runs / rows_timed)
                    line += f"{speedup:>13.0f}x" if speedup >= 10 else f"{speedup:>13.1f}x"
            lines.append(line)
        lines.append(
            "spread = (largest - smallest run median) / smallest; GB/s = 2 * rows * cols * 4 bytes"
            " / median of the runs"
        )
        serial = _kernel(first, "serial")
        if serial is not None and serial["rows_timed"] < rows:
            lines.append(
                f"serial ran on {serial['rows_timed']} of {rows} rows (one thread is slow); "
                "'x serial/row' scales its time a row linearly: an estimate, not a measurement"
            )
        lines.append("")
    return "\n".join(lines)


def _cell(kernel: dict | None) -> str:
    if kernel is None:
        return "absent"  # this run's report has no kernel of that name
    return f"{kernel['median_ms']:.4f}" if kernel["passed"] else "failed"


def _kernel(report: dict, name: str) -> dict | None:
    return next((k for k in report["kernels"] if k["name"] == name), None)


def _serial_ms_per_row(group: Sequence[dict]) -> float | None:
    per_row = [
        k["median_ms"] / k["rows_timed"]
        for k in (_kernel(report, "serial") for report in group)
        if k is not None and k["passed"]
    ]
    return statistics.median(per_row) if per_row else None


# --------------------------------------------------------------------------- running


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"shape {text!r} is not ROWSxCOLS, e.g. 4096x4096"
        ) from None
    if rows < 1 or cols < 1:
        raise argparse.ArgumentTypeError(f"shape {text!r} needs positive sizes")
    return rows, cols


def build() -> Path:
    """``make -C cuda``: a no-op when build/softmax is newer than its sources."""
    subprocess.run(["make", "-C", str(CUDA_DIR)], check=True)
    return DEFAULT_BINARY


def run_program(binary: Path, shape: tuple[int, int], output: Path) -> tuple[int, str]:
    """Run the program once on ``shape``; returns its exit status and its stdout + stderr."""
    command = [
        str(binary),
        "--rows",
        str(shape[0]),
        "--cols",
        str(shape[1]),
        "--output",
        str(output),
    ]
    completed = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    return completed.returncode, f"$ {' '.join(command)}\n{completed.stdout}{completed.stderr}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--from-json",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="tabulate recorded reports; runs nothing",
    )
    parser.add_argument("--binary", type=Path, help="the program to run (default: make -C cuda)")
    parser.add_argument("--runs", type=int, default=3, help="runs a shape (default 3)")
    parser.add_argument(
        "--shape",
        type=parse_shape,
        action="append",
        metavar="ROWSxCOLS",
        help=f"repeatable; default {' and '.join(DEFAULT_SHAPES)}",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=REPO_ROOT / "results" / "local" / "cuda",
        help="where the run JSONs go (default results/local/cuda)",
    )
    parser.add_argument("--log", type=Path, help="also write everything printed to this file")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    log: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        log.append(text)

    try:
        if args.from_json:
            reports = [load_report(path) for path in args.from_json]
            say(format_table(reports))
        else:
            status = _run_all(args, say)
            if status != 0:
                return status
    except ReportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if args.log is not None and log:
            args.log.parent.mkdir(parents=True, exist_ok=True)
            args.log.write_text("\n".join(log) + "\n")
    return 0


def _run_all(args: argparse.Namespace, say) -> int:
    binary = args.binary.resolve() if args.binary is not None else build()
    if not binary.is_file():
        raise ReportError(f"{binary}: no such program (build it with: make -C cuda)")
    shapes = args.shape or [parse_shape(text) for text in DEFAULT_SHAPES]
    args.output_dir.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    say(f"cuda_runs: {binary}, {args.runs} run(s) of each shape, started {started}")
    reports: list[dict] = []
    for rows, cols in shapes:
        for run in range(1, args.runs + 1):
            output = args.output_dir / f"cuda-softmax-{rows}x{cols}-run{run}.json"
            returncode, text = run_program(binary, (rows, cols), output)
            say(text.rstrip("\n"))
            if returncode != 0:
                say(f"run {run} of {rows}x{cols} exited with status {returncode}; stopping")
                return 1
            reports.append(load_report(output))
    say("")
    say(format_table(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
