"""What a kernel that reads a tensor once and writes it once can reach (GPU only, ~30 s).

    python3 lab/stream-ceiling/stream_ceiling.py --output results/h200/stream-ceiling.json

The softmax forward moves exactly what a copy moves: it reads ``M x N`` values and writes
``M x N``. Its target (4.10 TB/s logical at 16384 x 4096 fp16) was set from ``add``, which
reads two tensors for each one it writes and reaches ~4.35. Is one write per read slower for
the memory itself? This script times, interleaved under CUDA-graph replay, kernels with
different read:write mixes and no arithmetic worth the name, next to the softmax:

* ``torch copy_``: PyTorch's vectorized copy (1 read : 1 write);
* ``row copy (softmax plan)``: a Triton kernel that loads each row as the softmax forward
  does (the same row plan: grid, tile, warps) and stores it unchanged (1 : 1);
* ``flat copy (add blocks)``: a Triton copy cut like ``add`` (16 KiB blocks, 8 warps; 1 : 1);
* ``reference softmax`` and ``torch.softmax`` (1 : 1, with the row's reductions);
* ``reference add`` (2 : 1) and ``reference row sum`` (1 : 0, a few bytes written).

``--plans`` adds, at 16384 x 4096 only, the row copy and the softmax under each of a grid of
row plans (rows a program x warps): does the softmax follow its copy from plan to plan?
``--ahead`` adds there a persistent softmax that issues the next row's load before it reduces
the current row: is it the loads in flight that hold the softmax under the copy ceiling?

Each row is the logical TB/s (bytes the op must move / median time). Shapes: the target's
16384 x 4096 and twice and half as many rows, to tell a cost per byte from a fixed cost per
launch (a ramp-up and a tail that a 66 us kernel pays relatively more than a 130 us one).
Every output is compared with PyTorch's before anything is timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from reference.kernels import add as add_module  # noqa: E402
from reference.kernels import reductions, softmax  # noqa: E402
from reference.kernels.row_plan import RowPlan, choose_row_plan  # noqa: E402

SHAPES = ((8192, 4096), (16384, 4096), (32768, 4096))
PLAN_SHAPE = (16384, 4096)
PLAN_GRID = [(rows, warps) for rows in (1, 2, 4) for warps in (4, 8, 16)]


@triton.jit(do_not_specialize=["n_rows"])
def _copy_rows_kernel(x_ptr, y_ptr, n_rows, N: tl.constexpr, BLOCK: tl.constexpr,
                      ROWS: tl.constexpr):  # fmt: skip
    # the softmax forward's loads and stores (its row plan), without the arithmetic between
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < N)[None, :]
    offsets = rows.to(tl.int64)[:, None] * N + cols[None, :]
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def _copy_flat_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # add's full blocks (the shapes here are whole multiples of BLOCK): no mask at all
    offsets = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets))


@triton.jit(do_not_specialize=["n_rows"])
def _softmax_ahead_kernel(x_ptr, y_ptr, n_rows, N: tl.constexpr, BLOCK: tl.constexpr):
    # Persistent: program p walks rows p, p + P, p + 2P, ... and issues the next row's load
    # before it reduces the current one, so one load is in flight while it reduces. The last
    # load of each program rereads the last row (clamped): a cache hit, never used.
    first = tl.program_id(axis=0)
    step = tl.num_programs(axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    offset = first.to(tl.int64) * N  # the current row's first element (int64: M*N > 2**31)
    stride = step.to(tl.int64) * N
    last = (n_rows - 1).to(tl.int64) * N
    x_next = tl.load(x_ptr + offset + cols, mask=mask, other=float("-inf"))
    for _ in range(first, n_rows, step):
        x = x_next.to(tl.float32)
        x_next = tl.load(x_ptr + tl.minimum(offset + stride, last) + cols, mask=mask,
                         other=float("-inf"))  # fmt: skip
        numerator = tl.exp(x - tl.max(x, axis=0))
        y = numerator / tl.sum(numerator, axis=0)
        tl.store(y_ptr + offset + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
        offset += stride


def softmax_ahead(x: torch.Tensor, y: torch.Tensor, programs: int, warps: int):
    """``--ahead``: the softmax of contiguous ``x`` into ``y``, one row ahead, ``programs``
    persistent programs of ``warps`` warps."""
    n_rows, n_cols = x.shape
    grid = (min(programs, n_rows),)

    def run():
        _softmax_ahead_kernel[grid](x, y, n_rows, N=n_cols,
                                    BLOCK=triton.next_power_of_2(n_cols), num_warps=warps)
        return y

    return run


def resident_programs(x: torch.Tensor, y: torch.Tensor, warps: int) -> int:
    """How many one-row-ahead programs of ``warps`` warps an SM holds at once, from the
    registers its binary uses (compiled here by a launch over one row): 64 warps and 65,536
    registers an SM, registers allocated 8 a thread at a time."""
    compiled = _softmax_ahead_kernel[(1,)](x, y, 1, N=x.shape[1],
                                           BLOCK=triton.next_power_of_2(x.shape[1]),
                                           num_warps=warps)  # fmt: skip
    threads = 32 * warps
    registers = -(-compiled.n_regs // 8) * 8
    return min(2048 // threads, 65536 // (threads * registers))


def ahead_candidates(x: torch.Tensor) -> dict[str, tuple[object, int, object]]:
    """``--ahead``: the one-row-ahead softmax with as many programs as the SMs hold at once
    (8 and 4 warps), and with 1024 programs of 8 warps (16 rows each; more than fit at once)."""
    size = x.numel() * x.element_size()
    y, expected = torch.empty_like(x), torch.softmax(x, -1)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    grids = [(sms * resident_programs(x, y, warps), warps) for warps in (8, 4)] + [(1024, 8)]
    return {
        f"softmax ahead P{programs} w{warps}": (
            softmax_ahead(x, y, programs, warps), 2 * size, expected
        )
        for programs, warps in grids
    }


def row_copy_with(x: torch.Tensor, y: torch.Tensor, plan: RowPlan):
    n_rows, n_cols = x.shape

    def row_copy():
        _copy_rows_kernel[plan.grid(n_rows)](x, y, n_rows, N=n_cols, BLOCK=plan.block_cols,
                                             ROWS=plan.rows_per_program,
                                             num_warps=plan.num_warps)  # fmt: skip
        return y

    return row_copy


def plan_candidates(x: torch.Tensor) -> dict[str, tuple[object, int, object]]:
    """``--plans``: the row copy and the softmax under each plan of ``PLAN_GRID``."""
    size = x.numel() * x.element_size()
    y, expected = torch.empty_like(x), torch.softmax(x, -1)
    table = {}
    for rows, warps in PLAN_GRID:
        plan = RowPlan(block_cols=x.shape[1], rows_per_program=rows, num_warps=warps,
                       chunked=False)  # fmt: skip
        table[f"row copy r{rows} w{warps}"] = (row_copy_with(x, y, plan), 2 * size, x)
        table[f"softmax r{rows} w{warps}"] = (
            lambda plan=plan: softmax.softmax_fwd(x, plan), 2 * size, expected
        )
    return table


def candidates(x: torch.Tensor, other: torch.Tensor) -> dict[str, tuple[object, int, object]]:
    """label -> (call, logical bytes, expected output)."""
    n_rows, n_cols = x.shape
    size = x.numel() * x.element_size()
    y = torch.empty_like(x)
    plan = choose_row_plan(n_rows, n_cols, x.element_size(), passes=2)
    block, warps = add_module.choose_block(x.numel(), x.element_size())
    if x.numel() % block:
        raise SystemExit(f"stream_ceiling.py: {tuple(x.shape)} is not a whole number of blocks")

    def flat_copy():
        _copy_flat_kernel[(x.numel() // block,)](x, y, BLOCK=block, num_warps=warps)
        return y

    return {
        "torch copy_": (lambda: y.copy_(x), 2 * size, x),
        "row copy (softmax plan)": (row_copy_with(x, y, plan), 2 * size, x),
        "flat copy (add blocks)": (flat_copy, 2 * size, x),
        "reference softmax": (lambda: softmax.softmax_fwd(x), 2 * size, torch.softmax(x, -1)),
        "torch.softmax": (lambda: torch.softmax(x, -1), 2 * size, torch.softmax(x, -1)),
        "reference add": (lambda: add_module.add(x, other), 3 * size, x + other),
        "reference row sum": (lambda: reductions.row_sum(x), size, x.float().sum(-1).to(x.dtype)),
    }


def main(argv=None) -> int:
    parser = OneLineParser(prog="stream_ceiling", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per shape (default 7)")  # fmt: skip
    parser.add_argument("--plans", action="store_true",
                        help="add the row copy and the softmax under a grid of row plans")
    parser.add_argument("--ahead", action="store_true",
                        help="add, at 16384 x 4096, a softmax that loads one row ahead")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("stream_ceiling.py")
    timing.warm_gpu()
    rows = []
    for shape in SHAPES:
        generator = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(shape, device="cuda", dtype=torch.float16, generator=generator)
        other = torch.randn(shape, device="cuda", dtype=torch.float16, generator=generator)
        table = candidates(x, other)
        if args.plans and shape == PLAN_SHAPE:
            table |= plan_candidates(x)
        if args.ahead and shape == PLAN_SHAPE:
            table |= ahead_candidates(x)
        for label, (call, _, expected) in table.items():
            got = call()
            torch.cuda.synchronize()
            torch.testing.assert_close(got.float(), expected.float(), atol=2e-2, rtol=1e-2,
                                       msg=lambda m, label=label: f"{label}: {m}")  # fmt: skip
        medians = timing.interleaved_graph_ms(
            {label: call for label, (call, _, _) in table.items()}, rounds=args.rounds
        )
        for label, (_, logical, _) in table.items():
            ms = medians[label]
            rows.append({"shape": f"{shape[0]}x{shape[1]}", "dtype": "float16",
                         "candidate": label, "ms": ms,
                         "tb_per_s": timing.terabytes_per_second(logical, ms)})  # fmt: skip
    print(f"{'shape':>11s}  {'candidate':26s} {'us':>8s} {'TB/s':>6s}")
    order = {f"{m}x{n}": i for i, (m, n) in enumerate(SHAPES)}
    rows.sort(key=lambda row: (order[row["shape"]], -row["tb_per_s"]))  # fastest first
    for row in rows:
        print(f"{row['shape']:>11s}  {row['candidate']:26s} {row['ms'] * 1e3:8.1f} "
              f"{row['tb_per_s']:6.2f}")  # fmt: skip
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
