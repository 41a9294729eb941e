# Your copy of reference/kernels/launch.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Launching a compiled Triton kernel for less host time: the fast path behind the row wrappers.

``kernel[grid](*args, **constexprs)`` does a lot of Python work on every call before the GPU
sees anything: it binds the arguments to the signature, works out what Triton specializes
on, looks the compiled binary up in a cache, asks the driver for the current device and
stream, and only then calls the launcher. On the H200's host that path costs ~15-25 us a
call, where ``torch.softmax`` costs ~9 us in all: for a kernel that runs 2-5 us on the GPU,
the host is the bottleneck of every eager (non-graph) call.

:class:`FastLauncher` keeps what the first launch found: it files the compiled kernel under a
key made of exactly what Triton 3.6 specializes a binary on, and later calls with the same
key go straight to the compiled kernel's launcher. The key, per argument:

* a tensor: its dtype and whether its address is a multiple of 16 bytes (Triton compiles
  16-byte-aligned pointers with vectorized loads);
* an integer Triton specializes: whether it is 1 (compiled as a constant), whether it is a
  multiple of 16, and whether it fits in 32 bits (i32 or i64 code);
* an integer in ``do_not_specialize``: only whether it fits in 32 bits;

plus the ``tl.constexpr`` values, ``num_warps`` and ``num_stages``, and the device. Two calls
with equal keys get the same binary from Triton, so reusing it is exact; a call whose key is
new takes Triton's own path once and its result is filed. ``tests/reference`` checks on a GPU
that the filed binary is the one Triton picks for every combination of alignments.

The fast path steps aside (Triton's path runs every call) whenever something watches
launches: when ``JITFunction.run`` has been replaced (the course's checker counts launches
that way; profilers do too), or when Triton's launch hooks are set. Under the interpreter
(``TRITON_INTERPRET=1``) there is no compiled kernel, and Triton's path always runs.
"""

from __future__ import annotations

import torch
import triton
from triton.runtime.jit import JITFunction

_TRITONS_RUN = JITFunction.run  # Triton's own launch path, to tell when someone wraps it


def _integer_type(value: int) -> str:
    """The integer type Triton compiles an argument as: i32, i64 or u64."""
    if -(2**31) <= value < 2**31:
        return "i32"
    return "i64" if -(2**63) <= value < 2**63 else "u64"


def argument_key(value, specialized: bool) -> tuple:
    """What Triton 3.6 compiles one runtime argument as (see the module's docstring)."""
    if isinstance(value, torch.Tensor):
        return (value.dtype, value.data_ptr() % 16 == 0)
    if isinstance(value, bool):
        return ("bool",)
    if isinstance(value, int):
        kind = _integer_type(value)
        return (kind, value == 1, value % 16 == 0) if specialized else (kind,)
    if isinstance(value, float):
        return ("float",)
    if value is None:
        return ("none",)
    raise TypeError(f"FastLauncher: no key for an argument of type {type(value).__name__}")


def _watched() -> bool:
    """True when launches must go through Triton's path: a wrapper or a hook is listening."""
    if JITFunction.run is not _TRITONS_RUN:
        return True
    runtime = triton.knobs.runtime
    return runtime.launch_enter_hook is not None or runtime.launch_exit_hook is not None


class FastLauncher:
    """``FastLauncher(kernel)(grid, args, constexprs, num_warps, num_stages)`` launches like
    ``kernel[grid](*args, **constexprs, num_warps=..., num_stages=...)``.

    ``args`` are the kernel's runtime arguments in signature order; ``constexprs`` its
    ``tl.constexpr`` arguments by name, which follow them in the signature.
    """

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.compiled: dict[tuple, object] = {}
        self.interpreted = not isinstance(kernel, JITFunction)  # TRITON_INTERPRET=1
        if not self.interpreted:
            params = kernel.params
            runtime = [p for p in params if not p.is_constexpr]
            self.specialized = tuple(not p.do_not_specialize for p in runtime)
            self.constexpr_names = tuple(p.name for p in params if p.is_constexpr)
            order = [p.is_constexpr for p in params]
            if order != sorted(order):
                raise ValueError(
                    f"FastLauncher: {kernel.__name__}'s constexpr arguments must come last"
                )

    def __call__(self, grid, args: tuple, constexprs: dict, num_warps: int, num_stages=None):
        """``num_stages=None`` leaves Triton's default, as a launch that does not name it."""
        options = {"num_warps": num_warps}
        if num_stages is not None:
            options["num_stages"] = num_stages
        if self.interpreted or _watched():
            return self.kernel[grid](*args, **constexprs, **options)
        device = torch.cuda.current_device()
        key = (
            device,
            num_warps,
            num_stages,
            tuple(map(argument_key, args, self.specialized)),
            tuple(constexprs[name] for name in self.constexpr_names),
        )
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = self.kernel[grid](*args, **constexprs, **options)
            self.compiled[key] = compiled
            return compiled
        stream = torch.cuda.current_stream(device).cuda_stream
        compiled.run(
            grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
            stream, compiled.function, compiled.packed_metadata, None, None, None,
            *args, *(constexprs[name] for name in self.constexpr_names),
        )  # fmt: skip
        return compiled
