"""The cooperative GEMM's epilogue, stored while the next tile's first MMA runs: each kernel
alone, from a rested GPU to its power limit (GPU only; ~2 min).

    python3 scripts/gemm_epilogue_overlap.py --output results/h200/gemm-epilogue-overlap.json

The landed cooperative kernel (``reference/kernels/cooperative.py``) ends every tile the same
way: both consumer groups wait for their last MMA, round their halves and store them, two
16 KiB pieces each through shared memory and TMA, while the tensor cores idle (the producer
has filled the ring for the next tile meanwhile), and the second piece waits for the first to
leave shared memory. ``overlap`` is the kernel with its consumer rewritten (``OVERLAP``): a
group stores its left piece at once, keeps the right one in registers (rounded: 32 a thread),
issues the next tile's first wgmma, and stores the kept piece while that MMA runs; the last
tile's goes out after the loop. ``overlap G4`` adds super-rows of 4 tile rows to that (the
landed order has ``cooperative.GROUP_M``).

The first version kept the whole half (64 registers a thread beside the next accumulator's
128), and ``ptxas`` then serialized every wgmma (its note C7514: "non wgmma instructions
reading accumulator registers ... between start and end of the pipeline stage"): it ran 8-12%
slower at every shape (``results/h200/gemm-epilogue-overlap-serialized.log``). The test
compiles the rewrite and fails on that note.

Every variant is checked against the float64 oracle at the timed shapes, and the rewritten
kernel also in the four operand orientations at two more shapes (``EXTRA_SHAPES``: one with a
single K step and more tiles than SMs, where a program's second tile starts with its last
step). The timing is ``gemm_regimes.py``'s: per shape, in ``--rounds`` rounds of a shuffled
order, each variant idles ``--rest-s`` seconds, then replays 30-call graphs back to back for
``--seconds`` under NVML sampling; the table has each time window's rate, clock and power.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import _variants  # noqa: E402
import gemm_regimes  # noqa: E402
from _records import OneLineParser, positive_int, positive_seconds  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import cooperative  # noqa: E402

CONSUMER_START = "@gluon.jit\ndef _consumer("
CONSUMER_END = "\n\n\n@gluon.jit\ndef _matmul_cooperative_kernel"
EXTRA_SHAPES = ((3000, 2000, 1000), (2000, 2056, 64))  # the second: 8 x 17 tiles, one K step

OVERLAP = '''@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_buf, ready, empty, M, N, K, HALF: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp group: rows HALF * BLOCK_M / 2 onwards of every tile of this program; the right
    # piece of each tile's half is stored while the next tile's first MMA runs
    HALF_M: gl.constexpr = BLOCK_M // 2
    PIECE_N: gl.constexpr = BLOCK_N // 2
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    first = gl.program_id(0)
    pieces = gl.permute(gl.reshape(gl.zeros((HALF_M, BLOCK_N), c_desc.dtype, acc_layout),
                                   [HALF_M, 2, PIECE_N]), [0, 2, 1])
    left, kept = gl.split(pieces)  # kept: the last tile's right piece, rounded
    kept_row = 0
    kept_col = 0
    fill = 0
    for tile in range(first, tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = gl.zeros((HALF_M, BLOCK_N), gl.float32, acc_layout)
        for k_step in range(k_steps):
            slot = fill % STAGES
            mbarrier.wait(ready.index(slot), (fill // STAGES) & 1)
            a = a_bufs.index(2 * slot + HALF)
            if A_COLUMN_MAJOR:
                a = a.permute((1, 0))  # a transposed view of the tile: no copy
            b = b_bufs.index(slot)
            if B_COLUMN_MAJOR:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            if k_step == 0 and tile != first:
                tma.store_wait(0)  # the left piece has left c_buf
                c_buf.store(kept)
                fence_async_shared()
                tma.async_copy_shared_to_global(c_desc, [kept_row, kept_col], c_buf)
            # at most this MMA in flight: the one before it is done, so its buffer is free
            acc, a, b = warpgroup_mma_wait(1, deps=(acc, a, b))
            mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES), pred=k_step > 0)
            fill += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES))
        pieces = gl.permute(gl.reshape(acc.to(c_desc.dtype), [HALF_M, 2, PIECE_N]), [0, 2, 1])
        left, kept = gl.split(pieces)
        tma.store_wait(0)  # the previous piece has left c_buf
        c_buf.store(left)
        fence_async_shared()  # the shared-memory writes, before the TMA unit reads them
        tma.async_copy_shared_to_global(c_desc, [row + HALF * HALF_M, col], c_buf)
        kept_row = row + HALF * HALF_M
        kept_col = col + PIECE_N
    tma.store_wait(0)
    c_buf.store(kept)  # every program has at least one tile
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [kept_row, kept_col], c_buf)
    tma.store_wait(0)'''


def overlapped(directory: Path):
    """``cooperative`` with its consumer replaced by ``OVERLAP``, as a module of its own."""
    source = Path(cooperative.__file__).read_text()
    if source.count(CONSUMER_START) != 1 or source.count(CONSUMER_END) != 1:
        raise SystemExit("cooperative.py's consumer has moved; update the probe's rewrite")
    landed = source[source.index(CONSUMER_START):source.index(CONSUMER_END)]
    return _variants.rewritten(cooperative, [(landed, OVERLAP, 1)], directory,
                               "cooperative_overlap")  # fmt: skip


def with_group(module, group_m: int | None):
    """``module.matmul``, with super-rows of ``group_m`` tile rows if given."""

    def call(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if group_m is None:
            return module.matmul(a, b)
        landed = module.GROUP_M
        module.GROUP_M = group_m
        try:
            return module.matmul(a, b)
        finally:
            module.GROUP_M = landed

    return call


def check_orientations(spec, fn, name: str) -> None:
    """``fn`` against the float64 oracle at ``EXTRA_SHAPES`` in all four orientations."""
    for shape in EXTRA_SHAPES:
        for dtype in (torch.float16, torch.bfloat16):
            inputs = spec.inputs(shape, dtype, 11, device="cuda")
            a, b = inputs["a"], inputs["b"]
            for a_t in (False, True):
                for b_t in (False, True):
                    left = a.t().contiguous().t() if a_t else a
                    right = b.t().contiguous().t() if b_t else b
                    oriented = {"a": left, "b": right}
                    failure = timing.oracle_check(spec, spec.call(fn, oriented), oriented, dtype)
                    if failure:
                        raise SystemExit(f"{name} at {shape} {ops.dtype_name(dtype)} "
                                         f"a_t={a_t} b_t={b_t}: {failure}")  # fmt: skip
    print(f"{name}: oracle passed at {len(EXTRA_SHAPES)} shapes x 2 dtypes x 4 orientations")


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_epilogue_overlap", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=2,
                        help="rounds of a shuffled order of the variants (default 2)")
    parser.add_argument("--seconds", type=positive_seconds, default=1.5,
                        help="back-to-back replay time per variant and round (default 1.5)")
    parser.add_argument("--rest-s", type=positive_seconds, default=3.0,
                        help="idle seconds before each variant's replays (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_epilogue_overlap.py")
    ops.numerics_policy()
    spec = ops.get("matmul")
    with tempfile.TemporaryDirectory() as directory:
        overlap = overlapped(Path(directory))
        variants = {"cooperative": cooperative.matmul, "overlap": with_group(overlap, None),
                    "overlap G4": with_group(overlap, 4), "torch.mm": spec.baselines["torch"]}
        try:
            if not cooperative.ready(*spec.inputs((256, 256, 256), torch.float16, 0,
                                                  device="cuda").values()):  # fmt: skip
                raise SystemExit("the cooperative kernel needs a Hopper GPU (sm_90)")
            check_orientations(spec, variants["overlap"], "overlap")
            rows = gemm_regimes.measure(spec, variants, gemm_regimes.SHAPES, args.rounds,
                                        args.seconds, args.rest_s, random.Random(args.seed))
        except SystemExit as stop:
            raise SystemExit(f"gemm_epilogue_overlap.py: {stop}") from None
    gemm_regimes.print_rows(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows,
                                    "args": {"rounds": args.rounds, "seconds": args.seconds,
                                             "rest_s": args.rest_s, "seed": args.seed}},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
