"""Could a GPU have produced these figures? Flags for a person to review, never a failure.

A report can be internally consistent and still impossible: samples edited together with their
median, or a kernel that skipped its work. Every figure below is recomputed by the grader from
the case's op, shape and dtype (``learning.ops``) and the report's median, and compared with a
table of known GPUs (:data:`GPUS`). Nothing the report says about its machine moves a limit:
the L2 size, SM count or peak come from the table, never from ``environment``, and a report
whose L2 or SM count disagrees with the table for the GPU it names is flagged itself.

* **DRAM.** A case of ``B`` logical bytes with an L2 of ``L`` bytes must move at least
  ``B - L`` bytes through DRAM (at most ``L`` of them can stay cached between calls, none after
  a cold flush), so it takes at least ``(B - L) / peak``. Its logical GB/s is at most
  ``peak * B / (B - L)``, times :data:`MARGIN` for timer error. The bound is physics, not a
  guess: the course's own H200 reports reach 0.94 of it (fp32 row sums at 4.5 TB/s cold, 4.6
  TB/s warm, ``results/h200/all-cold.json`` and ``all.json``).
* **Compute.** TFLOP/s from the registry's FLOPs above the GPU's dense tensor-core peak (fp16,
  bf16) or its FP32 peak (fp32: the course switches TF32 off), times :data:`MARGIN`. The H200
  GEMMs reach 0.79 (fp16/bf16) and 0.77 (fp32) of those peaks.
* **Against eager.** A speedup over the case's PyTorch eager baseline above the op's limit:
  :data:`DEFAULT_SPEEDUP_LIMIT` unless the op's definition package says otherwise
  (``EAGER_SPEEDUP_LIMIT`` in ``learning/ops/<op>/check.py``, read through
  ``learning.check.op_data``; RMSNorm's eager baseline is a ten-kernel composition).
* **Against the reference.** A learner kernel more than :data:`OVER_REFERENCE_LIMIT` times
  faster than the course's reference kernel timed in the same case and rounds.

A CPU report (``device: cpu``) is exempt: it times Triton's interpreter, and its figures say
nothing about any GPU. The flags are questions: the instructor answers them by re-timing
(``python -m learning.grade ... --retime``, or the command in the learner's feedback file).
"""

from __future__ import annotations

from dataclasses import dataclass

from learning import ops
from learning.check import op_data

MARGIN = 1.02
DEFAULT_SPEEDUP_LIMIT = 10.0
OVER_REFERENCE_LIMIT = 2.0
MiB = 2**20


@dataclass(frozen=True)
class Gpu:
    """What a GPU can do at most, from its vendor's data sheet (and our measurement)."""

    match: str  # a substring of torch.cuda.get_device_name(), compared case-insensitively
    dram_tbps: float  # vendor peak DRAM bandwidth
    l2_bytes: int
    sm_count: int | None
    fp16_tflops: float  # dense tensor-core peak, fp16/bf16 inputs, fp32 accumulation
    fp32_tflops: float  # FP32 peak without TF32
    streaming_tbps: float | None = None  # what a copy kernel reaches, where we measured it

    def tflops(self, dtype: str) -> float:
        return self.fp32_tflops if dtype == "float32" else self.fp16_tflops


# Most specific names first: "GH200" before "H200", "H100 PCIe" before "H100", "L40S" before
# "L40" before "L4". The H200 row is the course's GPU: its figures are checked against every
# report in results/h200/ (tests/grading/test_plausibility.py).
GPUS: tuple[Gpu, ...] = (
    Gpu("GH200", 4.9, 60 * MiB, 132, 989.4, 66.9),
    Gpu("H200", 4.8, 60 * MiB, 132, 989.4, 66.9, streaming_tbps=4.35),
    Gpu("H100 PCIe", 2.0, 50 * MiB, 114, 756.0, 51.2),
    Gpu("H100 NVL", 3.9, 50 * MiB, 132, 835.0, 60.0),
    Gpu("H100", 3.35, 50 * MiB, 132, 989.4, 66.9),
    Gpu("A100-SXM4-80GB", 2.039, 40 * MiB, 108, 312.0, 19.5),
    Gpu("A100 80GB PCIe", 1.935, 40 * MiB, 108, 312.0, 19.5),
    Gpu("A100", 1.555, 40 * MiB, 108, 312.0, 19.5),
    Gpu("L40S", 0.864, 96 * MiB, 142, 366.0, 91.6),
    Gpu("L40", 0.864, 96 * MiB, 142, 181.0, 90.5),
    Gpu("L4", 0.3, 48 * MiB, 58, 121.0, 30.3),
    Gpu("RTX 4090", 1.008, 72 * MiB, 128, 165.2, 82.6),
    Gpu("V100", 0.9, 6 * MiB, 80, 125.0, 15.7),
    Gpu("T4", 0.32, 4 * MiB, 40, 65.0, 8.1),
)


def gpu_for(gpu_name: str | None) -> Gpu | None:
    """The table's row for this GPU name, or None for a GPU the table does not know."""
    if not gpu_name or not isinstance(gpu_name, str):
        return None
    name = gpu_name.lower()
    return next((gpu for gpu in GPUS if gpu.match.lower() in name), None)


def dram_limit_gbps(gpu: Gpu, logical_bytes: int) -> float | None:
    """The most logical GB/s a case of this size can reach on ``gpu``; None when it fits the
    L2 (no DRAM bound applies)."""
    if logical_bytes <= gpu.l2_bytes:
        return None
    return gpu.dram_tbps * 1000 * logical_bytes / (logical_bytes - gpu.l2_bytes)


def _label(case: dict, variant: dict) -> str:
    shape = "x".join(map(str, case["shape"]))
    return f"{case['op']} {shape} {case['dtype']} {variant['name']}"


def _derived(case: dict) -> tuple[int, int] | None:
    """The registry's logical bytes and FLOPs for the case; None when it names no real case."""
    spec = ops.OPS.get(case["op"])
    if spec is None or case["dtype"] not in ops.DTYPES:
        return None
    try:
        shape = spec.validate_shape(case["shape"])
    except ValueError:
        return None
    dtype = ops.DTYPES[case["dtype"]]
    return spec.logical_bytes(shape, dtype), spec.flops(shape)


def environment_flags(report: dict) -> list[str]:
    """The report's description of its GPU against the table's."""
    if report["settings"]["device"] != "cuda":
        return []
    environment = report["environment"]
    gpu = gpu_for(environment.get("gpu_name"))
    if gpu is None:
        return [
            f"no row in the grader's GPU table for {environment.get('gpu_name')!r}; compare "
            "its GB/s and TFLOP/s with the GPU's data sheet by hand"
        ]
    flags = []
    for key, known in (("l2_bytes", gpu.l2_bytes), ("sm_count", gpu.sm_count)):
        recorded = environment.get(key)
        if known is not None and recorded is not None and recorded != known:
            flags.append(
                f"environment.{key} is {recorded}, but a {gpu.match} has {known}; the grader "
                "uses its own figure"
            )
    return flags


def review_flags(report: dict) -> list[str]:
    """One line per figure that a person should look at; [] when nothing looks impossible."""
    if report["settings"]["device"] != "cuda":
        return []  # the interpreter's timings say nothing about a GPU
    flags = environment_flags(report)
    gpu = gpu_for(report["environment"].get("gpu_name"))
    for case in report["cases"]:
        derived = _derived(case)
        if derived is None:
            continue  # not a case of the registry: a failing finding elsewhere
        logical_bytes, flops = derived
        timed = [v for v in case["variants"] if v["status"] == "timed"]
        by_name = {v["name"]: v for v in timed}
        eager, reference = by_name.get(case["eager_variant"]), by_name.get("triton")
        limit = op_data.value(case["op"], "EAGER_SPEEDUP_LIMIT", DEFAULT_SPEEDUP_LIMIT)
        for variant in timed:
            median = variant["median_ms"]
            if not isinstance(median, int | float) or median <= 0:
                continue
            flags += _ceiling_flags(case, variant, gpu, logical_bytes, flops, median)
            if eager is not None and eager["median_ms"] / median > limit:
                flags.append(
                    f"{_label(case, variant)}: {eager['median_ms'] / median:.1f}x faster than "
                    f"PyTorch eager (above {limit:g}x for {case['op']})"
                )
            if variant["kind"] == "learner" and reference is not None:
                over = reference["median_ms"] / median
                if over > OVER_REFERENCE_LIMIT:
                    flags.append(
                        f"{_label(case, variant)}: {over:.1f}x faster than the course's "
                        f"reference kernel in the same rounds (above {OVER_REFERENCE_LIMIT:g}x)"
                    )
    return flags


def _ceiling_flags(
    case: dict, variant: dict, gpu: Gpu | None, logical_bytes: int, flops: int, median: float
) -> list[str]:
    if gpu is None:
        return []
    flags = []
    gbps = logical_bytes / (median * 1e6)
    dram = dram_limit_gbps(gpu, logical_bytes)
    if dram is not None and gbps > dram * MARGIN:
        flags.append(
            f"{_label(case, variant)}: {gbps:.0f} GB/s is above what a {gpu.match} can reach on "
            f"a case of {logical_bytes / MiB:.0f} MiB ({dram:.0f} GB/s: at least the bytes "
            f"beyond its {gpu.l2_bytes // MiB} MiB L2 must cross its {gpu.dram_tbps:g} TB/s DRAM)"
        )
    tflops = flops / (median * 1e9)
    peak = gpu.tflops(case["dtype"])
    if flops and tflops > peak * MARGIN:
        flags.append(
            f"{_label(case, variant)}: {tflops:.0f} TFLOP/s is above a {gpu.match}'s "
            f"{peak:g} TFLOP/s {case['dtype']} peak"
        )
    return flags
