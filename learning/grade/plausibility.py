"""Could a GPU have produced these figures? Flags for a person to review, never a failure.

A report can be internally consistent and still impossible: samples edited together with their
median, or a kernel that skipped its work. Two figures give that away cheaply:

* logical GB/s above the GPU's streaming ceiling (times :data:`CEILING_MARGIN`) on a case whose
  inputs and outputs are more than twice the L2 cache: such a case streams from DRAM, and
  nothing streams faster than the memory can deliver;
* a speedup over PyTorch eager above :data:`MAX_PLAUSIBLE_SPEEDUP`: the course's ops are ones
  PyTorch already does well; a 10x win means a trick, a bug or a baseline that was slowed.

Both are flags for review: a genuine report can trip them (a new GPU, a pathological eager
path), and the instructor decides by re-running the report's command.
"""

from __future__ import annotations

from dataclasses import dataclass

CEILING_MARGIN = 1.05
MAX_PLAUSIBLE_SPEEDUP = 10.0
DRAM_SIZED_L2_MULTIPLE = 2


@dataclass(frozen=True)
class Ceiling:
    """The most bytes per second a GPU streams from its memory, and where the number is from."""

    match: str  # a substring of torch.cuda.get_device_name(), compared case-insensitively
    tbps: float
    source: str


# Most specific names first: "GH200" before "H200", "H100 PCIe" before "H100", "L40" before "L4".
# The H200's figure is what a copy kernel reaches on the course's GPU; the others are the
# vendors' peak bandwidths, which no kernel reaches, so the flag errs on the quiet side there.
CEILINGS: tuple[Ceiling, ...] = (
    Ceiling("GH200", 4.9, "vendor peak (HBM3e; 4.0 for the HBM3 model)"),
    Ceiling("H200", 4.35, "the course's streaming ceiling (vendor peak 4.8 TB/s)"),
    Ceiling("H100 PCIe", 2.0, "vendor peak"),
    Ceiling("H100 NVL", 3.9, "vendor peak"),
    Ceiling("H100", 3.35, "vendor peak (SXM)"),
    Ceiling("A100-SXM4-80GB", 2.039, "vendor peak"),
    Ceiling("A100 80GB PCIe", 1.935, "vendor peak"),
    Ceiling("A100", 1.555, "vendor peak (40 GB)"),
    Ceiling("L40", 0.864, "vendor peak (L40 and L40S)"),
    Ceiling("L4", 0.3, "vendor peak"),
    Ceiling("RTX 4090", 1.008, "vendor peak"),
    Ceiling("V100", 0.9, "vendor peak"),
    Ceiling("T4", 0.32, "vendor peak"),
)


def ceiling_for(gpu_name: str | None) -> Ceiling | None:
    """The table's entry for this GPU name, or None for a GPU the table does not know."""
    if not gpu_name:
        return None
    name = gpu_name.lower()
    for ceiling in CEILINGS:
        if ceiling.match.lower() in name:
            return ceiling
    return None


def _label(case: dict, variant: dict) -> str:
    shape = "x".join(map(str, case["shape"]))
    return f"{case['op']} {shape} {case['dtype']} {variant['name']}"


def review_flags(report: dict) -> list[str]:
    """One line per figure that a person should look at; [] when nothing looks impossible."""
    flags: list[str] = []
    on_gpu = report["settings"]["device"] == "cuda"
    environment = report["environment"]
    ceiling = ceiling_for(environment.get("gpu_name")) if on_gpu else None
    if on_gpu and ceiling is None:
        flags.append(
            f"no streaming ceiling is known for GPU {environment.get('gpu_name')!r}; "
            "compare its GB/s with the GPU's memory bandwidth by hand"
        )
    l2_bytes = environment.get("l2_bytes")
    for case in report["cases"]:
        dram_sized = bool(l2_bytes) and case["logical_bytes"] > DRAM_SIZED_L2_MULTIPLE * l2_bytes
        for variant in case["variants"]:
            if variant["status"] != "timed":
                continue
            gbps = variant.get("logical_gbps")
            if ceiling is not None and dram_sized and isinstance(gbps, int | float):
                limit = ceiling.tbps * 1000 * CEILING_MARGIN
                if gbps > limit:
                    flags.append(
                        f"{_label(case, variant)}: {gbps:.0f} GB/s on a DRAM-sized case is above "
                        f"{CEILING_MARGIN:g}x the {ceiling.match}'s {ceiling.tbps:g} TB/s "
                        f"({ceiling.source})"
                    )
            ratio = variant.get("ratio_vs_eager")
            if isinstance(ratio, int | float) and ratio > MAX_PLAUSIBLE_SPEEDUP:
                flags.append(
                    f"{_label(case, variant)}: {ratio:.1f}x faster than PyTorch eager "
                    f"(above {MAX_PLAUSIBLE_SPEEDUP:g}x)"
                )
    return flags
