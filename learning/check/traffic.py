"""The bytes a kernel exercise's kernels moved, beside the bytes the op logically moves.

The replay process counts, for every load and store the replayed kernels issue, the bytes
moved by tensor and by kernel (:mod:`learning.check.replay.watch`). The count arrives here as
untrusted data (:func:`checked` keeps only well-formed numbers) and is compared with the
registry's logical bytes for the case (``OpSpec.logical_bytes``: read each input once, write
each output once). A softmax that reads its row three times moves about 2x: on a GPU that
streams from DRAM, that is about twice the time. The check of no points this module makes
says so for one case an op, beside what the course's reference kernels move on the same
input, and turns both into the least time they take at the H200's measured streaming rate.
"""

from __future__ import annotations

import math

import torch

from learning import ops
from learning.check.model import CheckResult

# The course's GPU, its streaming rate as measured (learning.grade.plausibility's H200 row; a
# test holds the two equal): what bounds a memory-bound kernel's time. Not imported from
# there, which would load the whole grader into every check.
H200_STREAMING_TBPS = 4.35
_MAX_NAMES = 64
LOAD_HINT = (
    "mask every load, or clamp its index into the tensor: tl.load(ptr + offsets, "
    "mask=offsets < n, other=...). A load past the end reads memory that is not the "
    "tensor's, even when the value is never stored: another tensor's values, or a fault"
)


def checked(traffic: object) -> dict | None:
    """The replay's count with only well-formed fields kept; None when it holds none."""
    if type(traffic) is not dict:
        return None
    totals = {k: traffic.get(k) for k in ("loaded_bytes", "stored_bytes")}
    if not all(_count(v) for v in totals.values()):
        return None
    result = dict(totals)
    for key in ("by_tensor", "by_kernel"):
        table = traffic.get(key)
        if type(table) is not dict or len(table) > _MAX_NAMES:
            continue
        result[key] = {
            name[:200]: {k: entry[k] for k in ("loaded_bytes", "stored_bytes")}
            for name, entry in table.items()
            if type(name) is str and type(entry) is dict
            and all(_count(entry.get(k)) for k in ("loaded_bytes", "stored_bytes"))
        }  # fmt: skip
    return result


def _count(value: object) -> bool:
    return type(value) is int and 0 <= value < 2**62


def case_entry(check: str, spec: ops.OpSpec, shape, dtype: torch.dtype, traffic: dict) -> dict:
    """One case's traffic as the JSON report carries it."""
    return {
        "check": check,
        "shape": list(shape),
        "dtype": ops.dtype_name(dtype),
        "traffic": {
            "loaded_bytes": traffic["loaded_bytes"],
            "stored_bytes": traffic["stored_bytes"],
            "logical_bytes": spec.logical_bytes(tuple(shape), dtype),
            "by_tensor": traffic.get("by_tensor", {}),
            "by_kernel": traffic.get("by_kernel", {}),
        },
    }


def moved(traffic: dict) -> int:
    return traffic["loaded_bytes"] + traffic["stored_bytes"]


def representative(cases) -> object | None:
    """The case an op's sentence is about: of its registry shapes in their plain layout, the
    one that logically moves the most bytes (the least dominated by a partly filled block)."""
    plain = [c for c in cases if not c.pads and c.special is None
             and tuple(c.shape) in c.spec.cpu_shapes]  # fmt: skip
    if not plain:
        return None
    return max(plain, key=lambda c: (c.spec.logical_bytes(c.shape, c.dtype), -c.index))


def _times(tensor_sizes: dict[str, int], traffic: dict) -> str:
    """"x read 2.00x, output 0 written 1.00x": each tensor's bytes over its size."""
    parts = []
    for name, entry in traffic.get("by_tensor", {}).items():
        size = tensor_sizes.get(name)
        if not size:
            continue
        if entry["loaded_bytes"]:
            parts.append(f"{name} read {entry['loaded_bytes'] / size:.2f}x")
        if entry["stored_bytes"]:
            parts.append(f"{name} written {entry['stored_bytes'] / size:.2f}x")
    return ", ".join(parts)


def _microseconds(nbytes: int) -> str:
    return f"{nbytes / (H200_STREAMING_TBPS * 1e12) * 1e6:.3g} us"


def summary(spec: ops.OpSpec, case, traffic: dict, reference: dict | None,
            tensor_sizes: dict[str, int]) -> str:  # fmt: skip
    """The sentence: what the op's kernels moved on ``case`` against its logical bytes and
    against the reference's, and what that costs at least at the H200's streaming rate."""
    logical = spec.logical_bytes(case.shape, case.dtype)
    ratio = moved(traffic) / logical
    per_tensor = _times(tensor_sizes, traffic)
    line = (f"on {spec.name} {spec.shape_label(case.shape)} {ops.dtype_name(case.dtype)} your "
            f"kernels moved {ratio:.2f}x the logical bytes ({moved(traffic)} of "
            f"{logical}{'; ' + per_tensor if per_tensor else ''})")  # fmt: skip
    if reference is not None:
        line += f"; the reference moves {moved(reference) / logical:.2f}x"
    line += f": at the H200's measured {H200_STREAMING_TBPS:g} TB/s that is >= "
    line += _microseconds(moved(traffic))
    if reference is not None:
        line += f" vs >= {_microseconds(moved(reference))}"
    return line


def tensor_sizes(spec: ops.OpSpec, case) -> dict[str, int]:
    """Each input's and output's logical size in bytes, by the name the replay gives it (an
    output is ``output <i>``; a training op's outputs are its inputs' gradients)."""
    itemsize = torch.empty((), dtype=case.dtype).element_size()
    inputs = spec.inputs(tuple(case.shape), torch.float32, 0, "cpu")
    shapes = {k: tuple(v.shape) for k, v in inputs.items() if torch.is_tensor(v)}
    outputs = [shapes[name] for name in spec.wrt] if spec.training else [
        tuple(spec.output_shape(tuple(case.shape)))]  # fmt: skip
    shapes.update({f"output {i}": shape for i, shape in enumerate(outputs)})
    return {name: math.prod(shape) * itemsize for name, shape in shapes.items()}


def named(traffic: dict, labels) -> dict:
    """The count with ``output <i>`` called by its label (``output``, ``grad_x`` ...)."""
    names = {f"output {i}": label for i, label in enumerate(labels)}
    by_tensor = {names.get(k, k): v for k, v in traffic.get("by_tensor", {}).items()}
    return {**traffic, "by_tensor": by_tensor}


def check(spec: ops.OpSpec, cases, reference: dict | None, labels,
          blocked: str | None = None) -> CheckResult:  # fmt: skip
    """The op's traffic as a check of no points: its message the sentence for the
    representative case, its ``cases`` every case's count (for ``--json``); ``blocked``: why
    the op's checks did not run, said instead, and the check then fails like every other."""
    entries = [case_entry(c.check, spec, c.shape, c.dtype, named(c.traffic, labels))
               for c in cases if c.traffic is not None]  # fmt: skip
    shown = representative(cases)
    name = f"{spec.name} memory traffic"
    if blocked or shown is None or shown.traffic is None:
        message = blocked or (f"no traffic counted: no call of {spec.name} on a registry shape "
                              "passed and was replayed under the interpreter")  # fmt: skip
        return CheckResult(name, not blocked, 0.0, message, cases=tuple(entries))
    sizes = tensor_sizes(spec, shown)
    sizes = {label: sizes[f"output {i}"] for i, label in enumerate(labels)} | sizes
    message = summary(spec, shown, named(shown.traffic, labels), reference, sizes)
    return CheckResult(name, True, 0.0, message, cases=tuple(entries))
