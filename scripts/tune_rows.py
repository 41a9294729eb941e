"""Time candidate plans and kernel variants for the weak row-kernel cases (GPU only, ~2 min).

    python3 scripts/tune_rows.py --output results/h200/tune-rows.json
    python3 scripts/tune_rows.py --sections rmsnorm,softmax --no-compile

Each section times, for its shapes, the reference kernel as the row plan launches it, the
alternatives worth comparing (other plans through the launchers' ``plan=`` / ``block=``
arguments, and kernel variants defined below), PyTorch eager and ``torch.compile`` (a fresh
``dynamic=False`` compile per shape). Every candidate is checked against the float64 oracle
before it is timed; a failing one is reported, never timed. Times are CUDA-graph replay
medians (warm L2 for inputs that fit); the RMSNorm section also times the reference, its best
candidate and ``torch.compile`` with L2 flushed before each call ("cold").

Sections and what they decide:

* ``add``: the block size for small tensors (1024x1024, 1823x781, 65536x128).
* ``rmsnorm``: every default shape, fp16 and bf16: plans, the weight load before or after the
  reduction, the eviction hint, a persistent grid; against eager and torch.compile.
* ``softmax``: the forward at 16384x4096 and 4096x32768 (keep the row in its storage dtype and
  recompute exp; a persistent grid), and the backward at 4096x32768 (whole row or chunks).
* ``sum``: 4096x32768 chunk sizes and warps.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from learning import ops  # noqa: E402
from learning.correctness import compare  # noqa: E402
from reference.kernels import add as add_module  # noqa: E402
from reference.kernels import reductions, rmsnorm, softmax  # noqa: E402
from reference.kernels.row_plan import RowPlan, choose_row_plan  # noqa: E402

SECTIONS = ("add", "rmsnorm", "softmax", "sum")
LOG2E = tl.constexpr(1.4426950408889634)  # a global a kernel reads must be constexpr


# --------------------------------------------------------------------------- kernel variants


@triton.jit(do_not_specialize=["n_rows"])
def _rmsnorm_fwd_variant(
    x_ptr, residual_ptr, weight_ptr, y_ptr,
    n_rows, x_row_stride, residual_row_stride, eps,
    N: tl.constexpr, BLOCK: tl.constexpr, ROWS: tl.constexpr,
    WEIGHT_FIRST: tl.constexpr,  # load the weight before the rows (else after the reduction)
    EVICT_FIRST: tl.constexpr,  # evict_first on x and residual (else no hint)
    STAGES: tl.constexpr,  # persistent loop over row blocks, pipelined this deep
):  # fmt: skip
    """The whole-row RMSNorm forward (no rstd), as a persistent grid-stride loop."""
    cols = tl.arange(0, BLOCK)
    col_mask = cols < N
    if WEIGHT_FIRST:
        w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    n_blocks = tl.cdiv(n_rows, ROWS)
    for block in tl.range(tl.program_id(0), n_blocks, tl.num_programs(0), num_stages=STAGES):
        rows = block * ROWS + tl.arange(0, ROWS)
        rows64 = rows.to(tl.int64)[:, None]
        mask = (rows < n_rows)[:, None] & col_mask[None, :]
        if EVICT_FIRST:
            x = tl.load(x_ptr + rows64 * x_row_stride + cols[None, :], mask=mask, other=0.0,
                        eviction_policy="evict_first")
            r = tl.load(residual_ptr + rows64 * residual_row_stride + cols[None, :], mask=mask,
                        other=0.0, eviction_policy="evict_first")
        else:
            x = tl.load(x_ptr + rows64 * x_row_stride + cols[None, :], mask=mask, other=0.0)
            r = tl.load(residual_ptr + rows64 * residual_row_stride + cols[None, :], mask=mask,
                        other=0.0)
        h = x.to(tl.float32) + r.to(tl.float32)
        rstd = tl.rsqrt(tl.sum(h * h, axis=1) / N + eps)
        if not WEIGHT_FIRST:
            w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = h * rstd[:, None] * w[None, :]
        tl.store(y_ptr + rows64 * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n_rows"])
def _softmax_fwd_variant(
    x_ptr, y_ptr, n_rows, x_row_stride, y_row_stride,
    N: tl.constexpr, BLOCK: tl.constexpr, ROWS: tl.constexpr,
    RECOMPUTE: tl.constexpr,  # keep x in its storage dtype; compute exp twice, keep no fp32 tile
    STAGES: tl.constexpr,  # persistent loop over row blocks, pipelined this deep
    EVICT_FIRST: tl.constexpr = False,  # load x with the evict_first hint
    EXP2: tl.constexpr = False,  # exp as exp2 of a pre-scaled argument (fp32 tile only)
):  # fmt: skip
    """The whole-row softmax forward, persistent; RECOMPUTE halves the registers a row needs."""
    cols = tl.arange(0, BLOCK)
    col_mask = (cols < N)[None, :]
    n_blocks = tl.cdiv(n_rows, ROWS)
    for block in tl.range(tl.program_id(0), n_blocks, tl.num_programs(0), num_stages=STAGES):
        rows = block * ROWS + tl.arange(0, ROWS)
        read_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
        x_ptrs = x_ptr + read_rows[:, None] * x_row_stride + cols[None, :]
        if EVICT_FIRST:
            x = tl.load(x_ptrs, mask=col_mask, other=float("-inf"), eviction_policy="evict_first")
        else:
            x = tl.load(x_ptrs, mask=col_mask, other=float("-inf"))
        if RECOMPUTE:
            # max in the storage dtype (exact); two differently written exp2s, so the compiler
            # cannot merge them into one fp32 tile that stays live across the sum
            row_max = tl.max(x, axis=1).to(tl.float32)[:, None]
            total = tl.sum(tl.exp2((x.to(tl.float32) - row_max) * LOG2E), axis=1)
            y = tl.exp2(x.to(tl.float32) * LOG2E - row_max * LOG2E) * (1.0 / total)[:, None]
        else:
            xf = x.to(tl.float32)
            if EXP2:
                numerator = tl.exp2((xf - tl.max(xf, axis=1)[:, None]) * LOG2E)
            else:
                numerator = tl.exp(xf - tl.max(xf, axis=1)[:, None])
            y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
        tl.store(y_ptr + rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :],
                 y.to(y_ptr.dtype.element_ty), mask=(rows < n_rows)[:, None] & col_mask)


@functools.lru_cache(maxsize=4)
def _sm_count() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count


def _persistent_grid(n_rows: int, rows: int, programs_per_sm: int | None) -> tuple[int]:
    """One program per row block, or ``programs_per_sm`` per SM looping over the blocks."""
    blocks = -(-n_rows // rows)
    return (blocks if programs_per_sm is None else min(blocks, _sm_count() * programs_per_sm),)


def rmsnorm_variant(x, residual, weight, eps, *, plan: RowPlan, weight_first=True,
                    evict_first=True, stages=1, programs_per_sm=None):  # fmt: skip
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    _rmsnorm_fwd_variant[_persistent_grid(n_rows, plan.rows_per_program, programs_per_sm)](
        x, residual, weight, y, n_rows, x.stride(0), residual.stride(0), float(eps),
        N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program, WEIGHT_FIRST=weight_first,
        EVICT_FIRST=evict_first, STAGES=stages, num_warps=plan.num_warps,
    )  # fmt: skip
    return y


def rmsnorm_plan(x, residual, weight, eps, *, plan: RowPlan):
    return rmsnorm.rmsnorm_fwd(x, residual, weight, eps, plan=plan)[0]


def softmax_variant(x, *, plan: RowPlan, recompute=True, stages=1, programs_per_sm=None,
                    evict_first=False, exp2=False):  # fmt: skip
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    _softmax_fwd_variant[_persistent_grid(n_rows, plan.rows_per_program, programs_per_sm)](
        x, y, n_rows, x.stride(0), y.stride(0), N=n_cols, BLOCK=plan.block_cols,
        ROWS=plan.rows_per_program, RECOMPUTE=recompute, STAGES=stages,
        EVICT_FIRST=evict_first, EXP2=exp2, num_warps=plan.num_warps,
    )  # fmt: skip
    return y


# --------------------------------------------------------------------------- eager / compiled


def softmax_backward_eager(y, dy):
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def softmax_backward_composition(y, dy):
    yf, dyf = y.float(), dy.float()
    return (yf * (dyf - (yf * dyf).sum(dim=-1, keepdim=True))).to(y.dtype)


def softmax_backward_oracle(y, dy):
    y64, dy64 = y.double(), dy.double()
    return y64 * (dy64 - (y64 * dy64).sum(dim=-1, keepdim=True))


# --------------------------------------------------------------------------- measuring


class Section:
    """Collects one section's rows and prints them as they come."""

    def __init__(self, name: str, args):
        self.name, self.args, self.rows = name, args, []

    def case(self, label, shape, dtype, logical_bytes, expected, tolerance, candidates,
             cold: tuple[str, ...] = ()):  # fmt: skip
        """Check and time each ``(name, call)`` of ``candidates``; ``expected`` is the oracle."""
        results = []
        for name, call in candidates:
            row = {"section": self.name, "case": label, "shape": "x".join(map(str, shape)),
                   "dtype": ops.dtype_name(dtype), "candidate": name}  # fmt: skip
            try:
                verdict = compare(call(), expected, tolerance, dtype=dtype)
                torch.cuda.synchronize()
                if not verdict.passed:
                    row["error"] = f"oracle: {verdict.reason}"[:300]
                else:
                    row["graph_ms"] = timing.graph_ms(call)
                    row["graph_tbps"] = timing.terabytes_per_second(logical_bytes, row["graph_ms"])
            except Exception as error:  # out of resources, a compile failure: report, go on
                row["error"] = repr(error)[:300]
            results.append(row)
        timed = [r for r in results if "graph_ms" in r]
        best = min(timed, key=lambda r: r["graph_ms"]) if timed else None
        reference = next((r for r in timed if r["candidate"].startswith("reference")), None)
        if best is not None and cold and not self.args.no_cold:
            wanted = set(cold) | {best["candidate"]}
            for row, (name, call) in zip(results, candidates, strict=True):
                if name in wanted and "graph_ms" in row:
                    row["cold_ms"] = timing.cold_ms(call)
                    row["cold_tbps"] = timing.terabytes_per_second(logical_bytes, row["cold_ms"])
        for row in results:
            row["best"] = row is best
            if reference and "graph_ms" in row:
                row["vs_reference"] = reference["graph_ms"] / row["graph_ms"]
            self.print_row(row)
        self.rows += results
        print(flush=True)

    @staticmethod
    def print_row(row):
        mark = "*" if row["best"] else " "
        if "error" in row:
            print(f" {row['case']:24s} {row['shape']:>11s} {row['dtype']:8s}   "
                  f"{row['candidate']:44s} ERROR {row['error'][:80]}")  # fmt: skip
            return
        print(
            f"{mark}{row['case']:24s} {row['shape']:>11s} {row['dtype']:8s}   "
            f"{row['candidate']:44s} {timing.fmt(row['graph_ms'])} ms "
            f"{timing.fmt(row['graph_tbps'], '5.2f')} TB/s  "
            f"x{timing.fmt(row.get('vs_reference'), '.2f')}"
            + (f"  cold {timing.fmt(row['cold_ms'])} ms {timing.fmt(row['cold_tbps'], '5.2f')} TB/s"
               if "cold_ms" in row else "")
        )  # fmt: skip


def compiled(args, fn):
    return [] if args.no_compile else [("torch.compile", timing.fresh_compile(fn))]


def plan_label(plan: RowPlan) -> str:
    rows, cols = plan.rows_per_program, plan.block_cols
    kind = f"chunk {cols}" if plan.chunked else f"{rows}x{cols}"
    return f"{kind} w{plan.num_warps}" + (f" s{plan.num_stages}" if plan.num_stages > 1 else "")


def plan_neighbours(plan: RowPlan) -> list[RowPlan]:
    """The chosen plan and its neighbours: half/double the rows and the warps."""
    plans = [plan]
    for warps in (plan.num_warps // 2, plan.num_warps * 2):
        if 4 <= warps <= 32:
            plans.append(replace(plan, num_warps=warps))
    if not plan.chunked:
        for rows in (plan.rows_per_program // 2, plan.rows_per_program * 2):
            if rows >= 1:
                plans.append(replace(plan, rows_per_program=rows))
    return list(dict.fromkeys(plans))


# --------------------------------------------------------------------------- sections


def section_add(args) -> Section:
    section, spec = Section("add", args), ops.get("add")
    for shape in ((1024, 1024), (1823, 781), (65536, 128)):
        for dtype in (torch.float16, torch.float32):
            inputs = spec.inputs(shape, dtype, args.seed, "cuda")
            x, y = inputs["x"], inputs["y"]
            chosen_block, chosen_warps = add_module.choose_block(x.numel(), x.element_size())
            candidates = [(f"reference (block {chosen_block}, w{chosen_warps})",
                           functools.partial(add_module.add, x, y))]  # fmt: skip
            for block_bytes in (2048, 4096, 8192, 16384):
                for warps in (4, 8):
                    block = block_bytes // x.element_size()
                    candidates.append((f"block {block_bytes // 1024} KiB w{warps}",
                                       functools.partial(add_module.add_fwd, x, y, block=block,
                                                         num_warps=warps)))  # fmt: skip
            candidates.append(("eager torch.add", functools.partial(torch.add, x, y)))
            candidates += compiled(args, lambda a, b: a + b)
            candidates = [(n, (c if n != "torch.compile" else functools.partial(c, x, y)))
                          for n, c in candidates]  # fmt: skip
            section.case("add", shape, dtype, spec.logical_bytes(shape, dtype),
                         spec.expected(inputs)[0], spec.tolerances[dtype], candidates)  # fmt: skip
    return section


def section_rmsnorm(args) -> Section:
    section, spec = Section("rmsnorm", args), ops.get("rmsnorm")
    for shape in spec.default_shapes:
        for dtype in (torch.float16, torch.bfloat16):
            inputs = spec.inputs(shape, dtype, args.seed, "cuda")
            x, r, w, eps = inputs["x"], inputs["residual"], inputs["weight"], inputs["eps"]
            chosen = choose_row_plan(*shape, x.element_size(), passes=2)
            reference = functools.partial(rmsnorm.rmsnorm, x, r, w, eps)
            candidates = [(f"reference {plan_label(chosen)}", reference)]
            for plan in plan_neighbours(chosen)[1:]:
                call = functools.partial(rmsnorm_plan, x, r, w, eps, plan=plan)
                candidates.append((f"plan {plan_label(plan)}", call))
            if not chosen.chunked:
                variants = [
                    ("weight after reduction", dict(weight_first=False)),
                    ("weight first", dict()),
                    ("weight first, no evict hint", dict(evict_first=False)),
                    ("persistent 4/SM", dict(programs_per_sm=4)),
                    ("persistent 4/SM, 2 stages", dict(programs_per_sm=4, stages=2)),
                    ("persistent 8/SM, 2 stages", dict(programs_per_sm=8, stages=2)),
                ]
                for name, knobs in variants:
                    call = functools.partial(rmsnorm_variant, x, r, w, eps, plan=chosen, **knobs)
                    candidates.append((f"variant {name}", call))
            eager = functools.partial(ops.rmsnorm_composition, x, r, w, eps)
            candidates.append(("eager composition", eager))
            if not args.no_compile:
                fn = timing.fresh_compile(ops.rmsnorm_composition)
                candidates.append(("torch.compile", functools.partial(fn, x, r, w, eps)))
            section.case("rmsnorm fwd", shape, dtype, spec.logical_bytes(shape, dtype),
                         spec.expected(inputs)[0], spec.tolerances[dtype], candidates,
                         cold=(candidates[0][0], "torch.compile"))  # fmt: skip
    return section


def section_softmax(args) -> Section:
    section, spec = Section("softmax", args), ops.get("softmax")
    dtype = torch.float16
    for shape in ((16384, 4096), (4096, 32768)):
        inputs = spec.inputs(shape, dtype, args.seed, "cuda")
        x = inputs["x"]
        chosen = choose_row_plan(*shape, 2, passes=2)
        candidates = [(f"reference {plan_label(chosen)}", functools.partial(softmax.softmax, x))]
        for plan in plan_neighbours(chosen)[1:]:
            candidates.append((f"plan {plan_label(plan)}",
                               functools.partial(softmax.softmax_fwd, x, plan=plan)))  # fmt: skip
        for warps in sorted({chosen.num_warps // 2, chosen.num_warps, 16, 32}):
            if 4 <= warps <= 32:
                plan = replace(chosen, num_warps=warps)
                for name, knobs in (
                    ("recompute", dict()),
                    ("recompute persistent 2/SM", dict(programs_per_sm=2)),
                    ("recompute persistent 2/SM 2 stages", dict(programs_per_sm=2, stages=2)),
                    ("fp32 tile persistent 2/SM 2 stages",
                     dict(recompute=False, programs_per_sm=2, stages=2)),
                ):  # fmt: skip
                    call = functools.partial(softmax_variant, x, plan=plan, **knobs)
                    candidates.append((f"variant {name} w{warps}", call))
        if shape == (16384, 4096):  # the 4.10 TB/s target: the one-row-per-program kernel's knobs
            for warps in (4, 8):
                plan = replace(chosen, num_warps=warps)
                for name, knobs in (
                    ("fp32 tile", dict(recompute=False)),
                    ("fp32 tile, evict_first", dict(recompute=False, evict_first=True)),
                    ("fp32 tile, exp2", dict(recompute=False, exp2=True)),
                    ("fp32 tile, exp2, evict_first",
                     dict(recompute=False, exp2=True, evict_first=True)),
                    ("fp32 tile persistent 8/SM 2 stages",
                     dict(recompute=False, programs_per_sm=8, stages=2)),
                ):  # fmt: skip
                    call = functools.partial(softmax_variant, x, plan=plan, **knobs)
                    candidates.append((f"variant {name} w{warps}", call))
        candidates.append(("eager torch.softmax", functools.partial(torch.softmax, x, dim=-1)))
        candidates += [(n, functools.partial(c, x))
                       for n, c in compiled(args, lambda t: torch.softmax(t, dim=-1))]  # fmt: skip
        section.case("softmax fwd", shape, dtype, spec.logical_bytes(shape, dtype),
                     spec.expected(inputs)[0], spec.tolerances[dtype], candidates)  # fmt: skip

    train = ops.get("softmax_train")
    shape = (4096, 32768)
    inputs = train.inputs(shape, dtype, args.seed, "cuda")
    y = softmax.softmax_fwd(inputs["x"].detach())
    dy = inputs["grad_output"]
    chosen = choose_row_plan(*shape, 2, passes=2, live_rows=2)
    candidates = [(f"reference {plan_label(chosen)}", lambda: softmax.softmax_bwd(y, dy))]
    plans = [RowPlan(32768, 1, w, chunked=False) for w in (8, 16, 32)]
    plans += [RowPlan(b, 1, w, chunked=True) for b in (4096, 8192, 16384) for w in (16, 32)]
    for plan in dict.fromkeys(p for p in plans if p != chosen):
        candidates.append((f"plan {plan_label(plan)}",
                           functools.partial(softmax.softmax_bwd, y, dy, plan=plan)))  # fmt: skip
    candidates.append(("eager _softmax_backward_data", lambda: softmax_backward_eager(y, dy)))
    candidates += [(n, functools.partial(c, y, dy))
                   for n, c in compiled(args, softmax_backward_composition)]  # fmt: skip
    backward_bytes = 3 * shape[0] * shape[1] * 2  # read y and dy, write dx
    section.case("softmax bwd", shape, dtype, backward_bytes, softmax_backward_oracle(y, dy),
                 train.tolerances[dtype], candidates)  # fmt: skip
    return section


def section_sum(args) -> Section:
    section, spec = Section("sum", args), ops.get("sum")
    dtype = torch.float16
    for shape in ((4096, 32768), (16384, 4096)):
        inputs = spec.inputs(shape, dtype, args.seed, "cuda")
        x = inputs["x"]
        chosen = choose_row_plan(*shape, 2, passes=1)
        candidates = [(f"reference {plan_label(chosen)}", functools.partial(reductions.row_sum, x))]
        plans = [RowPlan(b, 1, w, chunked=True) for b in (4096, 8192, 16384) for w in (8, 16, 32)]
        plans += [RowPlan(b, 1, w, chunked=True, num_stages=2) for b in (8192,) for w in (16, 32)]
        for plan in dict.fromkeys(p for p in plans if p != chosen and p.block_cols < shape[1]):
            candidates.append((f"plan {plan_label(plan)}",
                               functools.partial(reductions.row_sum, x, plan=plan)))  # fmt: skip
        candidates.append(("eager x.sum", functools.partial(torch.sum, x, dim=-1)))
        candidates += [(n, functools.partial(c, x))
                       for n, c in compiled(args, lambda t: t.sum(dim=-1))]  # fmt: skip
        section.case("sum", shape, dtype, spec.logical_bytes(shape, dtype),
                     spec.expected(inputs)[0], spec.tolerances[dtype], candidates)  # fmt: skip
    return section


# --------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON here")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)}")  # fmt: skip
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-cold", action="store_true", help="skip the L2-flushed timings")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.sections = [s for s in args.sections.split(",") if s]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("tune_rows.py")
    started = time.perf_counter()
    warm_ms = timing.warm_gpu()
    print(f"warmed the GPU for {warm_ms:.0f} ms; graph-replay medians, * = fastest checked\n")
    builders = {"add": section_add, "rmsnorm": section_rmsnorm, "softmax": section_softmax,
                "sum": section_sum}  # fmt: skip
    rows, seconds = [], {}
    for name in args.sections:
        section_start = time.perf_counter()
        rows += builders[name](args).rows
        seconds[name] = round(time.perf_counter() - section_start, 1)
        print(f"[{name}: {seconds[name]} s]\n", flush=True)
    failures = [r for r in rows if "error" in r]
    elapsed = time.perf_counter() - started
    print(f"{len(rows)} candidates, {len(failures)} not timed, {elapsed:.0f} s")
    timing.write_json(args.output, {
        "script": "tune_rows.py", "environment": timing.environment(), "args": vars(args),
        "section_seconds": seconds, "rows": rows,
    }, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
