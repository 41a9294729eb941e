"""Why the softmax's repeat call costs more than its parts: whole paths timed side by side.

    python3 lab/host-cost/host_cost_probe.py --output results/h200/host-cost-probe.json

``wrapper_overhead.py`` takes a launch apart layer by layer, and on the H200 host its layers
do not add up: the lookup, ``torch.empty_like`` and the packed launch function read 1.09,
1.92 and 3.91 us alone and 8.31 us together (``Replays.run_like``), where their sum is 6.92
and ``torch.softmax``, allocation and launch in C++, reads 7.64 (``wrapper-overhead.log``).
This probe times whole repeat-call paths against each other, interleaved the same way
(``_gpu_timing.interleaved_host_us``), in several seeded runs, so that what a change saves is
read as the difference of two complete paths and not from a row of parts:

* ``torch.softmax``; the reference ``softmax`` as it is (its repeat call whole in C:
  ``Replays.repeat``, which tries the last signature's guard first); the C repeat without
  the guard (the signature looked up on every call); the repeat call as it was before the C
  repeat (``Replays.run_like`` in Python, the packed launch function); the same with Triton's
  C launch function instead; and as it was before ``run_like`` (``Replays.find``,
  ``torch.empty_like``, ``Replay.__call__`` through Triton's C function, rebuilt here);
* the floor for a Python wrapper: ``torch.empty_like`` and the packed launch, no lookup; the
  same with a launch function that keeps the GIL (``torch.empty_like`` releases it too, so a
  call releases it twice where ``torch.softmax`` releases it once); the packed launch with a
  preallocated output (no allocation);
* the parts alone: the packed launch (with and without the GIL released), the allocation,
  the lookup.

It prints the process's thread count (a thread waiting for the GIL makes each release a
handover) and, for each run, every path's median host time a call and its ratio to
``torch.softmax`` in that run.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import launch, softmax  # noqa: E402

SHAPES = ((1024, 1024), (16, 4096))


def gil_kept_launch():
    """The packed launch function compiled without releasing the GIL around the launch."""
    from triton.runtime.build import compile_module_from_src

    source = launch._C_SOURCE.replace("Py_BEGIN_ALLOW_THREADS", "").replace(
        "Py_END_ALLOW_THREADS", ""
    )
    source = source.replace("workshop_launch", "workshop_launch_gil")
    return compile_module_from_src(source, "workshop_launch_gil").launch


def paths(x: torch.Tensor) -> dict[str, object]:
    softmax.softmax(x)  # files the replay for x's signature
    replay = softmax._fwd_replays.find(x)
    if replay is None or replay.direct is None:
        raise SystemExit(f"host_cost_probe.py: no packed replay for {tuple(x.shape)}")
    direct, packed, device = replay.direct, replay.packed, replay.device
    stream_of = torch._C._cuda_getCurrentRawStream
    kept = gil_kept_launch()
    out = torch.empty_like(x)
    x_address, out_address = x.data_ptr(), out.data_ptr()

    tritons = copy.copy(replay)  # the same replay, launched through Triton's C function
    tritons.direct = tritons.packed = None
    tritons_replays = launch.Replays()
    tritons_replays.file(tritons, x)
    python_replays = launch.Replays()  # not like=True: no C repeat, run_like's Python alone
    python_replays.file(replay, x)
    unguarded = launch.Replays(like=True)  # the C repeat with no guard: the lookup every call
    guard, launch._guard = launch._guard, lambda tensor: None
    try:
        unguarded.file(replay, x)
    finally:
        launch._guard = guard

    def before_c_repeat():  # the public softmax before Replays.repeat: run_like in Python
        if isinstance(x, torch.Tensor) and x.requires_grad and torch.is_grad_enabled():
            raise AssertionError("x requires grad")
        return python_replays.run_like(x)

    def before_run_like():  # softmax_fwd's repeat call before run_like
        found = softmax._fwd_replays.find(x)
        y = torch.empty_like(x)
        found.launch(stream_of(device), *found.middle, x.data_ptr(), y.data_ptr(), *found.tail)
        return y

    def floor():
        y = torch.empty_like(x)
        direct(packed, stream_of(device), x.data_ptr(), y.data_ptr())
        return y

    def floor_gil_kept():
        y = torch.empty_like(x)
        kept(packed, stream_of(device), x.data_ptr(), y.data_ptr())
        return y

    def no_allocation():
        softmax._fwd_replays.find(x)
        direct(packed, stream_of(device), x.data_ptr(), out_address)
        return out

    return {
        "torch.softmax": functools.partial(torch.softmax, x, dim=-1),
        "reference softmax (C repeat, guard)": functools.partial(softmax.softmax, x),
        "C repeat, lookup alone (no guard)": functools.partial(unguarded.repeat, x),
        "before C repeat: run_like in Python, packed": before_c_repeat,
        "run_like in Python, Triton's C function": functools.partial(tritons_replays.run_like, x),
        "before run_like: find, Replay, Triton's C": before_run_like,
        "empty_like + packed launch (floor)": floor,
        "empty_like + packed, GIL kept": floor_gil_kept,
        "find + packed launch, no allocation": no_allocation,
        "packed launch alone": lambda: direct(packed, stream_of(device), x_address, out_address),
        "packed launch alone, GIL kept": lambda: kept(packed, stream_of(device), x_address,
                                                      out_address),  # fmt: skip
        "torch.empty_like(x) alone": functools.partial(torch.empty_like, x),
        "Replays.find(x) alone": functools.partial(softmax._fwd_replays.find, x),
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=3, help="seeded runs (default 3)")
    parser.add_argument("--rounds", type=positive_int, default=9, help="rounds a run (default 9)")
    parser.add_argument("--calls", type=positive_int, default=2000, help="calls a sample")
    parser.add_argument("--output", help="write the record (JSON) here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("host_cost_probe.py")
    started = time.perf_counter()
    timing.warm_gpu()
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
    print(f"threads in this process: {threads}")
    rows = []
    for shape in SHAPES:
        x = ops.get("softmax").inputs(shape, torch.float16, 0, "cuda")["x"]
        candidates = paths(x)
        runs = [timing.interleaved_host_us(candidates, args.calls, rounds=args.rounds, seed=seed)
                for seed in range(args.runs)]  # fmt: skip
        label = f"{shape[0]}x{shape[1]}"
        print(f"{label:>10s}  {'path':44s} " + " ".join(f"{'run ' + str(r):>14s}"
                                                      for r in range(args.runs)))  # fmt: skip
        for name in candidates:
            us = [run[name] for run in runs]
            ratios = [run[name] / run["torch.softmax"] for run in runs]
            rows.append({"shape": label, "path": name, "host_us_per_call": us,
                         "ratio_to_torch_softmax": ratios})  # fmt: skip
            cells = " ".join(f"{u:7.2f} {r:5.2f}x" for u, r in zip(us, ratios, strict=True))
            print(f"{label:>10s}  {name:44s} {cells}")
        print()
    print(f"{time.perf_counter() - started:.0f} s")
    timing.write_json(args.output, {"script": "host_cost_probe.py", "threads": threads,
                                    "environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
