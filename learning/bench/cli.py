"""``kernel-bench``: parse the command line into a :class:`BenchConfig`; nothing else.

The work is :func:`learning.bench.run`. Exit status: 0 done, 2 bad input (one line on stderr,
no file written), 130 interrupted (a ``complete: false`` report of what was finished).
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from pathlib import Path

from learning import ops
from learning.bench import suite as shape_suite
from learning.bench.config import (
    BURSTS,
    CACHES,
    COMPILE_MODES,
    DEVICES,
    FLUSHES,
    HOST_DELAY_ENV,
    IMPLS,
    MARGIN_PCT,
    TIMINGS,
    BenchConfig,
    BenchInputError,
    host_delay_from_environment,
    precheck,
)

EPILOG = f"""examples:
  kernel-bench --op all --dtype float16 --output results/local/all.json
  kernel-bench --op softmax --shape 1024 1024 --dtype float32 --compile \\
      --output results/local/softmax-compiled.json
  kernel-bench --op matmul --dtype float16 --compile --compile-mode max-autotune \\
      --output results/local/matmul-autotuned.json
  kernel-bench --op softmax --timing events --output results/local/softmax-events.json
  kernel-bench --op softmax --device cpu --output results/local/softmax-cpu.json
  kernel-bench --op all --shape 1024 1024 --shape 2048 2048 2048 --output results/local/one.json
  kernel-bench --op softmax --max-noise 0.5 --max-seconds 5 --output results/local/quiet.json
  kernel-bench --suite rows-1 --suite-seed 0 --compile --output results/local/rows-1.json
  kernel-bench compare results/h200/all.json results/local/all.json

--timing events times ordinary Python calls: a short kernel reads as its launch overhead.
Debug: {HOST_DELAY_ENV}=20 adds a 20 us host-side stall inside every timed call (it must not
move a graph-timed figure, warm or cold)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints the usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _dimension(text: str) -> int:
    """``"1024"`` -> 1024; anything but a positive integer is refused while parsing, before
    an op definition (and torch) is imported. How many dimensions an op takes is its
    definition's to say (``OpSpec.validate_shape``)."""
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit() and int(stripped) > 0):
        raise argparse.ArgumentTypeError(f"invalid dimension {text!r}: a positive integer")
    return int(stripped)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kernel-bench",
        description="Check every variant against the float64 oracle, then time it honestly.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chosen = p.add_mutually_exclusive_group(required=True)
    chosen.add_argument(
        "--op",
        help=f"an op or a group of ops: {', '.join([*ops.GROUPS, *ops.NAMES])} (all: the forward "
        "ops; training: the training steps)",
    )
    chosen.add_argument(
        "--suite",
        help=f"instead of --op: the cases of a shape suite drawn from the registry, "
        f"{', '.join(shape_suite.SUITES)} (a family, or one part of it that fits one GPU "
        "call); its ops, shapes and dtypes are its own, so no --shape or --dtype",
    )
    p.add_argument(
        "--suite-seed",
        type=int,
        metavar="S",
        help="with --suite: the seed its cases are drawn from (default 0); recorded, so the "
        "report's list can be drawn again",
    )
    p.add_argument(
        "--shape",
        nargs="+",
        action="append",
        type=_dimension,
        metavar="D",
        help="one shape (repeat --shape for more); default: the op's shapes",
    )
    p.add_argument("--dtype", help="float16, bfloat16 or float32; default: every dtype of the op")
    p.add_argument(
        "--case",
        action="append",
        metavar="OP/MxN/DTYPE",
        help="run only this one of the selected cases (repeat for more), e.g. "
        "softmax/1024x1024/float16: how `python -m learning.report stale` re-records the "
        "stale cases of a sweep",
    )
    p.add_argument(
        "--compile", action="store_true", help="add torch.compile of the PyTorch baseline"
    )
    p.add_argument(
        "--compile-mode",
        choices=tuple(COMPILE_MODES),
        default="default",
        help="with --compile (an error without it): Inductor's default mode, or max-autotune "
        "(GEMM autotuning; compiled as max-autotune-no-cudagraphs, since kernel-bench captures "
        "its own CUDA graphs)",
    )
    p.add_argument(
        "--cache", choices=CACHES, default="warm", help="cold: flush the L2 before each call"
    )
    p.add_argument(
        "--flush",
        choices=FLUSHES,
        default="read",
        help="cold cache: read a buffer of twice the L2 (default; evicts with clean lines) or "
        "write one (leaves the L2 full of dirty lines the timed call must write back)",
    )
    p.add_argument(
        "--clock-burst",
        choices=BURSTS,
        default="off",
        help="on: a 200 ms GEMM burst before each visit, for a GPU whose idle clocks ramp up "
        "slowly (default off: on the H200 a burst slows the kernels timed after it)",
    )
    p.add_argument(
        "--timing",
        choices=TIMINGS,
        default="graph",
        help="graph: CUDA-graph replay (default); events: Python calls, dispatch-sensitive",
    )
    p.add_argument("--samples", type=int, default=9, help="samples per variant (default 9)")
    p.add_argument("--visits", type=int, default=3, help="visits per case (default 3)")
    p.add_argument(
        "--iterations",
        type=int,
        help="calls per sample (default: 30 per graph warm, 10 cold or events, 1 on CPU)",
    )
    p.add_argument("--seed", type=int, default=0, help="inputs and every shuffle (default 0)")
    p.add_argument(
        "--margin",
        type=float,
        default=MARGIN_PCT,
        metavar="PCT",
        help="the practical margin of each verdict against eager and the other baselines: "
        f"same when the paired ratio's 95%% interval lies within +-PCT (default {MARGIN_PCT:g})",
    )
    p.add_argument(
        "--max-noise",
        type=float,
        metavar="PCT",
        help="keep visiting each case until every variant's relative standard deviation is "
        "below PCT (default: a fixed --samples); each case records whether it converged",
    )
    p.add_argument(
        "--min-samples",
        type=int,
        help="with --max-noise: at least this many samples per variant (default: --samples)",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=10.0,
        help="with --max-noise: the most time one case spends in added visits (default 10)",
    )
    p.add_argument(
        "--keep-throttled",
        action="store_true",
        help="keep rounds that ran throttled (NVML: power cap, slowdown, or a clock below "
        "0.85 x the run's) in the verdicts; by default they are left out and counted",
    )
    p.add_argument(
        "--impl",
        choices=IMPLS,
        default="reference",
        help="learner: time the learner's kernel from exercises/ beside the reference",
    )
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument(
        "--output",
        required=True,
        type=Path,
        help="the JSON report to write; an existing file is refused unless --force",
    )
    p.add_argument("--force", action="store_true", help="replace an existing report at --output")
    return p


def parse(argv: list[str] | None = None) -> BenchConfig:
    """The command line as a :class:`BenchConfig` (argparse exits 2 on a malformed line)."""
    args = parser().parse_args(argv)
    shapes = tuple(tuple(shape) for shape in args.shape) if args.shape else None
    return BenchConfig(
        op=args.op,
        output=args.output,
        shapes=shapes,
        cases=tuple(args.case) if args.case else None,
        dtype=args.dtype,
        compile=args.compile,
        compile_mode=args.compile_mode,
        cache=args.cache,
        flush=args.flush,
        clock_burst=args.clock_burst,
        timing=args.timing,
        samples=args.samples,
        visits=args.visits,
        iterations=args.iterations,
        seed=args.seed,
        impl=args.impl,
        device=args.device,
        host_delay_us=host_delay_from_environment(),
        force=args.force,
        margin=args.margin,
        max_noise=args.max_noise,
        min_samples=args.min_samples,
        max_seconds=args.max_seconds,
        keep_throttled=args.keep_throttled,
        suite=args.suite,
        suite_seed=args.suite_seed,
    )


def _interrupt_as_usual() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _out_of_memory(error: BaseException) -> str | None:
    """What an allocation that failed said, in one line (None for any other error): on the CPU
    torch raises a RuntimeError from its allocator, Python a MemoryError."""
    text = " ".join(str(error).split())
    words = text.lower()
    if isinstance(error, MemoryError) or "can't allocate memory" in words or (
        "out of memory" in words
    ):
        said = re.sub(r"^\[enforce fail at [^]]*\]\s*(\S+ == \S+\.\s*)?", "", text)
        return said or type(error).__name__  # less torch's source location and assertion
    return None


def main(argv: list[str] | None = None) -> int:
    try:
        config = parse(argv)
        precheck(config)  # before torch: a refused command line costs no import
        from learning.bench.engine import run
        from learning.bench.output import format_table

        _interrupt_as_usual()  # from here a Ctrl-C is the run's: it keeps what was finished
        report = run(config)
    except SystemExit as exit_:  # argparse: --help (0) or a malformed line (2, one line)
        return exit_.code
    except BenchInputError as error:
        print(f"kernel-bench: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "kernel-bench: interrupted before anything was measured; no report written",
            file=sys.stderr,
        )
        return 130
    except (MemoryError, RuntimeError) as error:  # a shape this machine cannot hold
        said = _out_of_memory(error)
        if said is None:
            raise
        print(f"kernel-bench: error: out of memory: {said}; no report written; choose a "
              "smaller --shape", file=sys.stderr)  # fmt: skip
        return 2
    print(format_table(report.data))
    if not report.complete:
        where = report.path
        kept = (
            ""
            if where == config.output
            else f"; the existing report at {config.output} is untouched"
        )
        print(
            f"kernel-bench: interrupted: wrote what was completed to {where} "
            f"(complete: false){kept}",
            file=sys.stderr,
        )
        return 130
    print(f"kernel-bench: wrote {report.path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
