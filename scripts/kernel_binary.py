"""What a row kernel compiles to on the H200, read on any machine (no GPU needed)

    python scripts/kernel_binary.py --op softmax --shape 16384x4096 --dtype float16
    python scripts/kernel_binary.py --op sum --shape 4096x32768 --dtype float32 --yours
    python scripts/kernel_binary.py --op add --shape 1024x1024 --dtype float16 --listing
    python scripts/kernel_binary.py --op softmax --shape 1024x1024 --dtype float16 --packed

Triton ships the compiler that turns a kernel into the H200's machine code (``ptxas``, for
sm_90) and the tool that prints it (``cuobjdump``), and neither needs a GPU. This script runs
the op's public wrapper (the reference's, or yours from ``exercises/`` with ``--yours``) on
CPU tensors of the given shape up to its first launch, and at that launch compiles the kernel
for sm_90 exactly as Triton would on the H200 (Triton's own argument binding and
specialization: dtypes, 16-byte alignment, the compile-time values and launch options the
wrapper chose). It prints the launch (kernel, grid, the compile-time values), the registers a
thread and the shared memory a program, how many programs the registers leave room for on an
SM (the figure Nsight Compute calls ``launch__occupancy_limit_registers``) and what share of
the SM's warps that keeps, and the instructions of the binary by kind. ``--listing`` prints
the machine code itself. ``--packed`` prints what a replay of that launch hands the driver
(``reference/kernels/launch.py``: ``pack_launch``, lesson 14; the softmax wrappers replay
theirs, the others launch through Triton each time): the grid, the block, the shared memory,
and each kernel parameter's 8-byte slot, in the order ``cuLaunchKernel`` reads them, with the
tensors' addresses left to the call; or why Triton's launcher would keep that launch.

For the row ops and the add: a GEMM chooses its configuration by timing candidates on the GPU
(``triton.autotune``), so there is no launch to read here before that, and the backward
steps size their grids from the GPU's SM count.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _arguments import forward_ops as row_ops  # noqa: E402  (no GEMM: none autotuned)
from _arguments import parse_shape  # noqa: E402
from _records import OneLineParser  # noqa: E402

from learning import ops  # noqa: E402  (imported before triton: it selects the backend)
from learning.runtime import interpreting  # noqa: E402

TARGET = ("cuda", 90, 32)  # the H200: sm_90, 32-thread warps
REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32
REGISTER_GRANULE = 8  # registers a thread are allocated in steps of 8 (256 a warp)
# instruction kinds: an opcode's first part -> the kind it is counted under
KINDS = {"LDG": "global loads", "STG": "global stores", "LDS": "shared loads",
         "STS": "shared stores", "SHFL": "warp shuffles", "BAR": "barriers",
         "FADD": "fp32 add", "FMUL": "fp32 mul", "FFMA": "fp32 fma", "FMNMX": "fp32 min/max",
         "MUFU": "special functions (exp, rsqrt...)", "HADD2": "16-bit pairs",
         "HMUL2": "16-bit pairs", "HFMA2": "16-bit pairs", "HMNMX2": "16-bit pairs",
         "F2F": "conversions", "F2FP": "conversions", "I2F": "conversions"}  # fmt: skip


class Launched(Exception):
    """Raised at the wrapper's first launch, carrying what it would have launched."""

    def __init__(self, kernel, grid, compiled, constexprs, options, arguments=()):
        super().__init__(kernel.__name__)
        self.kernel, self.grid, self.compiled = kernel, grid, compiled
        self.constexprs, self.options = constexprs, options
        self.arguments = arguments  # every parameter's value, in the kernel's order


def capture_launch(function, args: tuple) -> Launched:
    """Run ``function(*args)`` up to its first Triton launch; compile that launch for sm_90
    as Triton would (its binder and ``_pack_args``), and return it. Needs kernels compiled,
    not interpreted (``TRITON_INTERPRET=0``)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    target = GPUTarget(*TARGET)
    backend = make_backend(target)

    def run(kernel, *call_args, grid, warmup, **kwargs):
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        bound, specialization, options = binder(*call_args, **kwargs)
        options, signature, constexprs, attrs = kernel._pack_args(
            backend, kwargs, bound, specialization, options)  # fmt: skip
        source = ASTSource(kernel, signature, constexprs, attrs)
        compiled = triton.compile(source, target=target, options=options.__dict__)
        names = {(p.num,): p.name for p in kernel.params}
        values = {names.get(path, str(path)): value for path, value in constexprs.items()}
        raise Launched(kernel, grid, compiled, values, options, tuple(bound.values()))

    from learning import runtime

    original, device = JITFunction.run, runtime.default_device
    JITFunction.run = run
    runtime.default_device = lambda: "cpu"  # the inputs are CPU tensors; nothing runs
    try:
        function(*args)
    except Launched as launched:
        return launched
    finally:
        JITFunction.run, runtime.default_device = original, device
    raise SystemExit("kernel_binary.py: the wrapper returned without launching a kernel")


def cuobjdump(cubin: bytes, *flags: str) -> str:
    """What Triton's ``cuobjdump FLAGS`` prints for ``cubin`` (``-res-usage -sass``: both).

    The listing depends on the binary and the tool alone, and each run of the tool costs about
    0.3 s of CPU, so it is kept in Triton's cache folder (``TRITON_CACHE_DIR``, by default
    ``~/.triton/cache``) under ``cuobjdump/``, named by a hash of the tool (its path, size and
    modification time), the flags and the binary's bytes: a binary read before is not read
    again, and any other binary or tool is."""
    import hashlib

    import triton

    tool = Path(triton.knobs.nvidia.cuobjdump.path)
    about = tool.stat()
    key = hashlib.sha256()
    for part in (str(tool), str(about.st_size), str(about.st_mtime_ns), *flags):
        key.update(part.encode() + b"\0")
    key.update(cubin)
    kept = Path(triton.knobs.cache.dir) / "cuobjdump" / f"{key.hexdigest()}.txt"
    try:
        return kept.read_text()
    except OSError:  # not kept yet, or the cache folder cannot be read: run the tool
        pass
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        command = [str(tool), *flags, str(path)]
        listing = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(listing)
        os.replace(partial, kept)  # whole or absent, even with two processes writing it
    except OSError:  # a cache folder that cannot be written: the listing is still printed
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    return listing


def instructions(listing: str) -> list[str]:
    """The opcodes of a ``cuobjdump -sass`` listing, in order, without NOPs or predicates."""
    opcodes = []
    for line in listing.splitlines():
        match = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if match and match.group(1) != "NOP":
            opcodes.append(match.group(1))
    return opcodes


def register_limit(registers: int, threads: int) -> int:
    """Programs of ``threads`` threads an SM's registers hold (Nsight Compute's
    ``launch__occupancy_limit_registers``)."""
    granted = -(-max(registers, 1) // REGISTER_GRANULE) * REGISTER_GRANULE
    return REGISTERS_PER_SM // (granted * threads)


def programs_per_sm(registers: int, threads: int) -> int:
    """Programs an SM holds as far as its registers and thread slots allow."""
    return min(register_limit(registers, threads), THREADS_PER_SM // threads, PROGRAMS_PER_SM)


def describe(launched: Launched) -> dict:
    compiled = launched.compiled
    listing = cuobjdump(compiled.asm["cubin"], "-res-usage", "-sass")
    registers = int(re.search(r"\bREG:(\d+)", listing).group(1))
    shared = int(re.search(r"\bSHARED:(\d+)", listing).group(1))
    opcodes = instructions(listing)
    kinds = collections.Counter(KINDS.get(op.split(".")[0], "other") for op in opcodes)
    threads = 32 * launched.options.num_warps
    programs = programs_per_sm(registers, threads)
    return {"kernel": launched.kernel.__name__, "grid": tuple(launched.grid),
            "constexprs": launched.constexprs, "num_warps": launched.options.num_warps,
            "num_stages": launched.options.num_stages, "registers": registers,
            "shared_bytes": shared, "threads": threads, "programs_per_sm": programs,
            "register_limit": register_limit(registers, threads),
            "thread_limit": THREADS_PER_SM // threads,
            "warps_share": programs * threads / THREADS_PER_SM,
            "instructions": len(opcodes), "kinds": dict(kinds.most_common())}  # fmt: skip


def packed_slots(launched: Launched) -> list[str] | str:
    """What a replay of this launch passes the driver, slot by slot (the packed launch of
    ``reference.kernels.launch.pack_launch``), or why Triton's launcher keeps it. The function
    handle is the one thing a CPU cannot know: it exists once the binary is loaded on a GPU."""
    import struct
    from types import SimpleNamespace

    import torch

    from reference.kernels import launch

    compiled, arguments = launched.compiled, launched.arguments
    tensors = 0
    while tensors < len(arguments) and isinstance(arguments[tensors], torch.Tensor):
        tensors += 1
    stand_in = SimpleNamespace(src=compiled.src, metadata=compiled.metadata, function=0)
    packed = launch.pack_launch(stand_in, tuple(launched.grid), arguments, tensors)
    if packed is None:
        return "not packable: Triton's own launcher keeps this launch"
    _, grid_x, grid_y, grid_z, block, shared, n_slots, n_addresses, _ = (
        launch._HEADER.unpack_from(packed))  # fmt: skip
    slots = struct.unpack_from(f"<{n_slots}Q", packed, launch._HEADER.size)
    filled = struct.unpack_from(f"<{n_addresses}I", packed, launch._HEADER.size + 8 * n_slots)
    passed = [(name, kind) for name, kind in zip(launched.kernel.arg_names,
                                                 compiled.src.signature.values(), strict=True)
              if kind != "constexpr"]  # fmt: skip
    passed += [("(global scratch)", "*i8"), ("(profile scratch)", "*i8")]
    lines = [f"grid ({grid_x}, {grid_y}, {grid_z}), block {block} threads, {shared} bytes of "
             f"shared memory, {n_slots} parameters, {len(packed)} bytes packed"]  # fmt: skip
    for index, ((name, kind), value) in enumerate(zip(passed, slots, strict=True)):
        if index in filled:
            shown = f"the address of tensor {filled.index(index)}, given at each call"
        elif kind.startswith("*"):
            shown = "0 (none)"
        else:
            shown = f"{value:#018x}  ({kind})"
        lines.append(f"slot {index:2d}: {name:20s} {shown}")
    return lines


def print_description(info: dict, label: str) -> None:
    values = ", ".join(f"{name}={value}" for name, value in info["constexprs"].items())
    print(f"{label}: {info['kernel']}, grid {info['grid']}, {info['num_warps']} warps "
          f"({info['threads']} threads); {values}")
    print(f"  registers a thread {info['registers']}, shared memory a program "
          f"{info['shared_bytes']} bytes")
    print(f"  programs an SM: {info['programs_per_sm']} ({info['warps_share']:.0%} of the SM's "
          f"warps); its registers hold {info['register_limit']}, its thread slots "
          f"{info['thread_limit']}")
    unwritten = "" if "global loads" in info["kinds"] else "  (no loads: not written yet?)"
    print(f"  instructions: {info['instructions']}{unwritten}")
    for kind, count in info["kinds"].items():
        print(f"    {count:5d}  {kind}")


def main(argv=None) -> int:
    parser = OneLineParser(prog="kernel_binary", description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=row_ops(), required=True)
    parser.add_argument("--shape", required=True, help="ROWSxCOLS, e.g. 16384x4096")
    parser.add_argument("--dtype", choices=("float16", "bfloat16", "float32"), required=True)
    parser.add_argument("--yours", action="store_true",
                        help="your kernel (exercises/), not the reference")
    parser.add_argument("--listing", action="store_true", help="print the machine code too")
    parser.add_argument("--packed", action="store_true",
                        help="print what a replay of the launch hands the driver (lesson 14)")
    args = parser.parse_args(argv)
    spec = ops.get(args.op)
    try:
        shape = parse_shape(spec, args.shape)
    except ValueError as error:
        parser.error(f"--shape: {error}")
    if interpreting():  # the interpreter has no binaries: compile in a child
        environment = {**os.environ, "TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": ""}
        command = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])]
        return subprocess.run(command, env=environment, check=False).returncode
    dtype = ops.dtype_from_name(args.dtype)
    implementation = "exercises" if args.yours else "reference"
    function = spec.kernel_function(implementation)
    inputs = tuple(spec.make_inputs(shape, dtype, 0, "cpu").values())
    try:
        launched = capture_launch(function, inputs)
    except NotImplementedError as error:
        raise SystemExit(f"kernel_binary.py: {implementation}'s {args.op} is not written yet "
                         f"({error})") from None  # fmt: skip
    except Exception as error:  # a kernel that does not compile: the compiler's reason
        reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        raise SystemExit(f"kernel_binary.py: {implementation}'s {args.op} does not compile "
                         f"for sm_90: {reason}") from None  # fmt: skip
    info = describe(launched)
    print_description(info, f"{implementation} {args.op} {spec.shape_label(shape)} {args.dtype}")
    if args.packed:
        slots = packed_slots(launched)
        print("  packed launch: " + (slots if isinstance(slots, str) else "\n    ".join(slots)))
    if args.listing:
        print(cuobjdump(launched.compiled.asm["cubin"], "-sass"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
