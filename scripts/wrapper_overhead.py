"""Host time per call of softmax wrappers: what a launch costs the CPU (GPU only, ~20 s).

    python3 scripts/wrapper_overhead.py --output results/h200/wrapper-overhead.json

At 1024x1024 fp16 the kernel itself takes ~2.5 us; the host work around it (argument checks,
the plan, Triton's launcher binding its arguments) can take as long. This script calls each
wrapper many times in a row with no graph, syncs, and divides the host clock by the count
(the GPU queue absorbs the kernels; if the GPU were the bottleneck, every row would show the
kernel time instead, so the kernel-only graph time is printed too). The host clock of the
H200 machine drifts by up to 2x over minutes, so the wrappers of a shape are sampled in
shuffled turns (``--rounds``, 7 by default), in ``--runs`` independent runs with their own
orders (3 by default); each row is the median over the runs of each run's median, and the
ratio to ``torch.softmax`` is taken within each run (the drift cancels there) and printed run
by run, with its median in the record. (A single run can read either side of 1.0: one read
0.89x where three runs right after read 1.18-1.20x.) Rows a dozen apart in a round still meet
different drift: in one record ``softmax_fwd``, which does all that ``softmax`` does and more,
read 9% less. So the target's comparison is also made on its own, in ``--pairs`` pairs of
samples taken back to back (the order drawn for each pair), and scored by the median of the
pairs' ratios (``paired_ratio_to_torch_softmax`` in the reference softmax's row, with its
quartiles, the pairs in which it took less time, and a sign test); and, as the pairing's A/A
test, ``torch.softmax`` against itself under another name, the same way (``aa_paired_*`` in
its row): how far apart the same call reads by this method. Candidates:
``torch.softmax``; the reference ``softmax`` (a repeat call finds the launch it made for
that input signature and replays it: ``reference.kernels.launch.Replays``; a first call runs
the checks and the plan and launches through ``Launcher``, which calls the binary's C launch
function directly once Triton has compiled it); the same kernel through a ``torch.library``
custom op; ``torch.compile`` of ``torch.softmax``. The rows after them take a launch apart: the
wrapper's work before the launch (checks, plan, output allocation) and the allocation alone,
two ways; the wrapper as it was with Triton's path ``kernel[grid](...)``; that path alone with
everything precomputed; then the layers under it, each called directly: the compiled binary's
runner, Triton's Python launcher, and the launcher's C function (argument parsing, a driver
check of every pointer, the driver's launch), and that function given the pointers as
integers (no driver check). Three more take the reference wrapper's repeat-call path apart:
``softmax_fwd`` with its plan passed in (no replay: every check and the launcher's key on
every call), the lookup of the replay alone (``Replays.find``), and the allocation plus the
replay without the lookup; then ``Replays.run_like`` (its C repeat, called from a Python
frame) and ``Replays.repeat`` (what a repeat call of ``softmax`` runs: the guard or the
lookup, the allocation and the launch, whole in C) and the packed launch function, alone
(``reference.kernels.launch``: the launch's constant arguments packed once,
two addresses a call, the driver's ``cuLaunchKernel``). Two more launch the same binary
through the C++ launcher that Inductor uses for its own Triton kernels (a private PyTorch API,
measured, not used): alone, and with the wrapper's checks, plan and allocation in front of
it. The last
column is the part of each call spent inside the CUDA launch API itself
(``cudaLaunchKernel``, ``cuLaunchKernel`` and their ``Ex`` forms), timed by the profiler over
300 further calls. (An earlier launcher that cached the compiled binary but still
called its runner measured no faster than Triton's path, 14.8 against 14.1 us,
``wrapper-overhead-launcher.log``: the runner builds launch metadata for hooks on every call.)

Target: the reference wrapper costs no more host time per call than ``torch.softmax`` while
still validating its inputs.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.report.stats import sign_test_p  # noqa: E402
from reference.kernels import launch, softmax  # noqa: E402

SHAPES = ((1024, 1024), (16, 4096))


def custom_op():
    """The reference softmax registered as a ``torch.library`` custom op (opaque to compile)."""

    @torch.library.custom_op("row_tuning::softmax", mutates_args=())
    def library_softmax(x: torch.Tensor) -> torch.Tensor:
        return softmax.softmax_fwd(x)

    @library_softmax.register_fake
    def _(x):
        return torch.empty_like(x)

    return library_softmax


def parts(x: torch.Tensor) -> list[tuple[str, object]]:
    """The reference wrapper taken apart: its setup, and Triton's launch path on its own."""
    from reference.kernels.row_plan import check_rows, choose_row_plan

    n_rows, n_cols = x.shape
    plan = choose_row_plan(n_rows, n_cols, x.element_size(), passes=2)
    y = torch.empty_like(x)
    kernel = softmax._softmax_fwd_kernel
    grid = plan.grid(n_rows)
    args = (x, y, n_rows, x.stride(0), y.stride(0))
    constexprs = {"N": n_cols, "BLOCK": plan.block_cols, "ROWS": plan.rows_per_program}
    options = {"num_warps": plan.num_warps, "num_stages": plan.num_stages}

    def setup():
        rows, cols = check_rows(x, "softmax")
        choose_row_plan(rows, cols, x.element_size(), passes=2)
        torch.empty((rows, cols), dtype=x.dtype, device=x.device)

    def setup_and_triton_path():  # the reference wrapper before it used launch.Launcher
        rows_, cols = check_rows(x, "softmax")
        plan_ = choose_row_plan(rows_, cols, x.element_size(), passes=2)
        out = torch.empty((rows_, cols), dtype=x.dtype, device=x.device)
        kernel[plan_.grid(rows_)](x, out, rows_, x.stride(0), out.stride(0),
                                  N=cols, BLOCK=plan_.block_cols, ROWS=plan_.rows_per_program,
                                  num_warps=plan_.num_warps, num_stages=plan_.num_stages)
        return out

    compiled = kernel[grid](*args, **constexprs, **options)  # Triton returns the binary
    grid_xyz = (*grid, 1, 1)[:3]
    stream = torch.cuda.current_stream().cuda_stream
    all_args = (*args, *constexprs.values())  # the launcher takes every parameter, in order
    md, fn = compiled.packed_metadata, compiled.function
    pointer_args = (x.data_ptr(), y.data_ptr(), *all_args[2:])  # no driver check of each
    softmax.softmax_fwd(x)  # files the wrapper's replay for x's signature
    replay = softmax._fwd_replays.find(x)

    def replay_only():
        out = torch.empty_like(x)
        replay(x, out)
        return out

    def packed_launch():  # the module's launch function alone: the packed launch, 2 addresses
        replay.direct(replay.packed, torch._C._cuda_getCurrentRawStream(replay.device),
                      x_address, y_address)  # fmt: skip

    x_address, y_address = x.data_ptr(), y.data_ptr()
    rows = [
        ("setup only (no launch)", setup),
        ("torch.empty((M, N), dtype, device)",
         lambda: torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)),
        ("torch.empty_like(x)", lambda: torch.empty_like(x)),
        ("setup + kernel[grid] (wrapper before)", setup_and_triton_path),
        ("kernel[grid] (Triton's path)", lambda: kernel[grid](*args, **constexprs, **options)),
        ("compiled[grid] (the binary's runner)", lambda: compiled[grid_xyz](*all_args)),
        ("CompiledKernel.run (Python launcher)",
         lambda: compiled.run(*grid_xyz, stream, fn, md, None, None, None, *all_args)),
        ("the launcher's C function",
         lambda: compiled.run.launch(*grid_xyz, stream, fn, 0, 0, None, None, md, None, None,
                                     None, *all_args)),
        ("the C function, integer pointers",
         lambda: compiled.run.launch(*grid_xyz, stream, fn, 0, 0, None, None, md, None, None,
                                     None, *pointer_args)),
        ("softmax_fwd, plan given (no replay)", lambda: softmax.softmax_fwd(x, plan)),
        ("Replays.find(x)", lambda: softmax._fwd_replays.find(x)),
        ("empty_like + Replay (no find)", replay_only),
        ("Replays.run_like(x) (C repeat + a frame)", lambda: softmax._fwd_replays.run_like(x)),
        ("Replays.repeat(x) (whole in C)", lambda: softmax._fwd_replays.repeat(x)),
    ]
    if replay.direct is not None:
        rows.append(("the packed launch function alone", packed_launch))
    else:
        print(f"no packed launch: {getattr(launch.direct_launch, 'reason', 'not packable')}")
    static = static_launcher(compiled, x.device)
    if static is None:
        return rows

    def static_launch():
        static.run(*grid_xyz, torch.cuda.current_stream().cuda_stream, *args)

    def setup_and_static_launch():
        rows_, cols = check_rows(x, "softmax")
        plan_ = choose_row_plan(rows_, cols, x.element_size(), passes=2)
        out = torch.empty((rows_, cols), dtype=x.dtype, device=x.device)
        static.run(*plan_.grid(rows_), 1, 1, torch.cuda.current_stream().cuda_stream,
                   x, out, rows_, x.stride(0), out.stride(0))  # fmt: skip
        return out

    return rows + [
        ("static launch (torch's C++ launcher)", static_launch),
        ("setup + static launch", setup_and_static_launch),
    ]


def static_launcher(compiled, device: torch.device):
    """The compiled softmax binary behind the C++ launcher Inductor uses for its own Triton
    kernels (``torch._C._StaticCudaLauncher``), or None where this torch has none.

    A private PyTorch API: measured here to learn what Triton's Python launch path costs, not
    used by the course's kernels.
    """
    import tempfile

    if not hasattr(compiled, "_cubin_path"):  # Inductor sets it on the binaries it compiles
        compiled._cubin_path = None  # None: written out from the binary's bytes below
    for name in ("static_cuda_launcher", "static_triton_launcher"):
        try:
            module = __import__(f"torch._inductor.runtime.{name}", fromlist=["_"])
            launcher = module.StaticallyLaunchedCudaKernel(compiled)
            with tempfile.TemporaryDirectory() as folder:
                launcher.reload_cubin_from_raw(f"{folder}/{launcher.name}.cubin")
                launcher.load_kernel(device.index or 0)
            return launcher
        except (ImportError, AttributeError, NotImplementedError, RuntimeError) as error:
            print(f"static launcher via {name}: {type(error).__name__}: {error}", flush=True)
    return None


LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


def launch_api_us(call, calls: int = 300) -> tuple[float | None, list[str]]:
    """Host microseconds per ``call()`` spent inside the CUDA launch API itself, as the
    profiler's CUPTI callbacks time it, and the API names seen; None if none was recorded.

    It splits a wrapper's host time into the driver's launch and everything around it.
    """
    from torch.profiler import ProfilerActivity, profile

    for _ in range(20):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    launches = [e for e in profiler.key_averages() if e.key in LAUNCH_APIS]
    if not launches:
        return None, []
    total_us = sum(e.cpu_time_total for e in launches)
    return total_us / calls, sorted(e.key for e in launches)


def paired_summary(ratios: list[float]) -> dict:
    """The record's fields for the paired ratios of the reference softmax to torch.softmax."""
    quartiles = statistics.quantiles(ratios, n=4)
    faster = sum(ratio < 1 for ratio in ratios)
    return {"paired_ratios": ratios, "paired_ratio_to_torch_softmax": statistics.median(ratios),
            "paired_ratio_quartiles": [quartiles[0], quartiles[2]], "paired_faster": faster,
            "paired_p": sign_test_p(faster, len(ratios))}  # fmt: skip


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON here")
    parser.add_argument("--calls", type=positive_int, default=2000,
                        help="calls per host-clock sample")  # fmt: skip
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="host-clock samples per wrapper, taken in shuffled turns")  # fmt: skip
    parser.add_argument("--runs", type=positive_int, default=3,
                        help="independent interleaved runs (seeds 0..runs-1); each row reads "
                             "the median of the runs, and each run's ratio to torch.softmax "
                             "is printed")  # fmt: skip
    parser.add_argument("--pairs", type=positive_int, default=41,
                        help="pairs of back-to-back samples, torch.softmax and the reference "
                             "softmax, for the paired ratio the target is scored by")  # fmt: skip
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("wrapper_overhead.py")
    started = time.perf_counter()
    timing.warm_gpu()
    library_softmax = custom_op()
    rows = []
    print(f"{'shape':>10s}  {'wrapper':42s} {'host us/call':>12s} {'graph us':>9s} "
          f"{'launch API us':>13s}  {'x torch.softmax, by run':24s} API")  # fmt: skip
    for shape in SHAPES:
        x = ops.get("softmax").inputs(shape, torch.float16, 0, "cuda")["x"]
        candidates = [
            ("torch.softmax", functools.partial(torch.softmax, x, dim=-1)),
            ("reference softmax", functools.partial(softmax.softmax, x)),
            ("reference softmax_fwd", functools.partial(softmax.softmax_fwd, x)),
            ("torch.library custom op", functools.partial(library_softmax, x)),
            *parts(x),
        ]
        if not args.no_compile:
            compiled = timing.fresh_compile(lambda t: torch.softmax(t, dim=-1))
            candidates.append(("torch.compile(torch.softmax)", functools.partial(compiled, x)))
        runs = [timing.interleaved_host_us(dict(candidates), args.calls, rounds=args.rounds,
                                           seed=seed) for seed in range(args.runs)]  # fmt: skip
        named = dict(candidates)
        pairs = timing.paired_host_ratios(named["torch.softmax"], named["reference softmax"],
                                          args.calls, pairs=args.pairs, seed=0)  # fmt: skip
        # the A/A test of the pairing: torch.softmax against itself, under another name
        same = functools.partial(torch.softmax, x, dim=-1)
        aa_pairs = timing.paired_host_ratios(named["torch.softmax"], same, args.calls,
                                             pairs=args.pairs, seed=1)  # fmt: skip
        for name, call in candidates:
            host_runs = [run[name] for run in runs]
            ratios = [run[name] / run["torch.softmax"] for run in runs]  # drift cancels in a run
            graph_us = timing.graph_ms(call) * 1e3
            api_us, apis = launch_api_us(call)
            rows.append({"shape": f"{shape[0]}x{shape[1]}", "wrapper": name,
                         "host_us_per_call": statistics.median(host_runs),
                         "host_us_per_call_runs": host_runs,
                         "ratio_to_torch_softmax_runs": ratios,
                         "ratio_to_torch_softmax": statistics.median(ratios),
                         "graph_us": graph_us,
                         "launch_api_us_per_call": api_us, "launch_apis": apis})  # fmt: skip
            if name == "reference softmax":
                rows[-1].update(paired_summary(pairs))
            elif name == "torch.softmax":  # its A/A pairs: how far the same call reads apart
                rows[-1].update({f"aa_{key}": value
                                 for key, value in paired_summary(aa_pairs).items()})  # fmt: skip
            by_run = " ".join(f"{ratio:.2f}" for ratio in ratios)
            print(f"{rows[-1]['shape']:>10s}  {name:42s} {rows[-1]['host_us_per_call']:12.2f} "
                  f"{graph_us:9.2f} {timing.fmt(api_us, '.2f'):>13s}  {by_run:24s} "
                  f"{','.join(apis)}")  # fmt: skip
        for label, ratios in (("reference softmax / torch.softmax", pairs),
                              ("A/A: torch.softmax / torch.softmax", aa_pairs)):
            paired = paired_summary(ratios)
            low, high = paired["paired_ratio_quartiles"]
            print(f"{rows[-1]['shape']:>10s}  {label}, {len(ratios)} pairs of back-to-back "
                  f"samples: median {paired['paired_ratio_to_torch_softmax']:.3f}x (quartiles "
                  f"{low:.3f}-{high:.3f}), less time in {paired['paired_faster']} of "
                  f"{len(ratios)}, sign test p = {paired['paired_p']:.2g}")  # fmt: skip
        print()
    print(f"{time.perf_counter() - started:.0f} s")
    timing.write_json(args.output, {"script": "wrapper_overhead.py",
                                    "environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
