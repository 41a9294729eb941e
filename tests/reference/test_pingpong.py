"""The Hopper ping-pong GEMM (``reference/kernels/pingpong.py``).

Gluon has no interpreter, so on a CPU the kernel cannot run: these tests compile it for
compute capability 9.0 with the ``ptxas`` Triton ships (every operand orientation, both
16-bit dtypes) and check what the compiled kernel is, and which products suit it. The
``gpu`` tests run it against the float64 oracle on a Hopper GPU. Since the cooperative kernel
(``cooperative.py``, ``test_cooperative.py``) took its place in ``matmul.py``, the ping-pong
kernel's ``ready`` is still the one rule both follow, and the scripts compare the two.
"""

from __future__ import annotations

# isort: off
import os
import re
import zlib

import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import correctness, ops
from learning.runtime import default_device
from reference.kernels import pingpong

import hopper_binary
from _ring_model import Barrier, interleave

# isort: on

DEVICE = default_device()
SHARED_MEMORY_LIMIT = 227 * 1024  # bytes a block may use on the H100 and H200
ORIENTATIONS = [(False, False), (False, True), (True, False), (True, True)]
ORIENTATION_IDS = ["A-B", "A-Bt", "At-B", "At-Bt"]




# every orientation in fp16; bf16 changes the element type only, so row-major is enough
COMPILED = [(torch.float16, *o) for o in ORIENTATIONS] + [(torch.bfloat16, False, False)]


@pytest.mark.parametrize(("dtype", "a_column_major", "b_column_major"), COMPILED,
                         ids=[f"float16-{o}" for o in ORIENTATION_IDS] + ["bfloat16-A-B"])
def test_the_kernel_compiles_for_hopper_without_spills(tmp_path, dtype, a_column_major,
                                                       b_column_major):  # fmt: skip
    """Three warp groups (a consumer group, another, and the producer's warp rounded up), the
    register plan the partitions ask for, wgmma instructions, no register spills, and shared
    memory within what one block may have."""
    compiled = pingpong.compile_for_hopper(dtype, a_column_major, b_column_major)
    assert compiled.metadata.num_warps == 12
    assert compiled.metadata.shared <= SHARED_MEMORY_LIMIT
    ptx = compiled.asm["ptx"]
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+232", ptx)
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40", ptx)
    assert "wgmma.mma_async" in ptx
    hopper_binary.check_pipelined_without_spills(compiled, tmp_path)


def _matrix(rows: int, cols: int, dtype=torch.float16, transposed: bool = False):
    """A rows x cols matrix, row-major or a transposed view of a cols x rows one."""
    if transposed:
        return torch.zeros((cols, rows), dtype=dtype).T
    return torch.zeros((rows, cols), dtype=dtype)


@pytest.mark.parametrize(("a_t", "b_t"), ORIENTATIONS, ids=ORIENTATION_IDS)
def test_every_orientation_with_aligned_rows_suits(a_t, b_t):
    a, b = _matrix(304, 64, transposed=a_t), _matrix(64, 40, transposed=b_t)
    assert pingpong.suits(a, b)
    assert pingpong.suits(a.to(torch.bfloat16), b.to(torch.bfloat16))


@pytest.mark.parametrize(("a", "b", "why"), [
    (_matrix(64, 64, torch.float32), _matrix(64, 64, torch.float32), "fp32"),
    (_matrix(64, 61), _matrix(61, 64), "K = 61: rows not 16-byte aligned"),
    (_matrix(64, 64), _matrix(64, 60), "N = 60: C's rows not aligned"),
    (_matrix(64, 64)[:, 1:], _matrix(63, 64), "A starts 2 bytes into a row"),
    (_matrix(300, 64, transposed=True), _matrix(64, 64), "A^T's memory rows: 300 elements"),
    (_matrix(0, 64), _matrix(64, 64), "M = 0"),
    (_matrix(64, 0), _matrix(0, 64), "K = 0"),
], ids=lambda value: value if isinstance(value, str) else "")  # fmt: skip
def test_what_does_not_suit(a, b, why):
    assert not pingpong.suits(a, b), why


def test_the_interpreter_never_takes_it():
    a, b = _matrix(128, 64).to(DEVICE), _matrix(64, 128).to(DEVICE)
    if DEVICE != "cpu":
        pytest.skip("a GPU is present")
    assert pingpong.suits(a, b) and not pingpong.ready(a, b)


# --------------------------------------------------------------------------- on a Hopper GPU


def _seed(*parts: object) -> int:
    return 70_000 + zlib.crc32("/".join(map(str, parts)).encode()) % 10_000


@pytest.mark.gpu(capability=(9, 0))
@pytest.mark.parametrize("shape", [(128, 128, 64), (3000, 2000, 1000), (16384, 1024, 1024),
                                   (1, 8, 8), (4096, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))  # fmt: skip
@pytest.mark.parametrize(("a_t", "b_t"), ORIENTATIONS, ids=ORIENTATION_IDS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=ops.dtype_name)
def test_matches_the_oracle(shape, a_t, b_t, dtype):
    """Edges in every dimension (3000 x 2000 x 1000: no size a multiple of 128), a single
    row, several tiles a consumer group, both orientations of each operand."""
    spec = ops.get("matmul")
    inputs = spec.inputs(shape, dtype, _seed(shape, a_t, b_t, dtype), device="cuda")
    a, b = inputs.values()
    a = a.T.contiguous().T if a_t else a
    b = b.T.contiguous().T if b_t else b
    assert pingpong.ready(a, b)
    verdicts = correctness.compare_all(
        (pingpong.matmul(a, b),), spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
        labels=correctness.output_labels(spec),
    )  # fmt: skip
    assert all(v.passed for v in verdicts), [v.reason for v in verdicts]


@pytest.mark.gpu(capability=(9, 0))
def test_no_size_compiles_again():
    """The sizes are read from the descriptors at run time: after the first product, other
    M, N and K compile nothing."""
    kernel = pingpong._matmul_pingpong_kernel
    variants = lambda: sum(len(c[0]) for c in kernel.device_caches.values())  # noqa: E731
    run = lambda m, n, k: pingpong.matmul(torch.randn(m, k, device="cuda").half(),  # noqa: E731
                                          torch.randn(k, n, device="cuda").half())
    run(256, 256, 256)
    torch.cuda.synchronize()
    first = variants()
    for shape in ((1000, 512, 64), (17, 4096, 1024), (4096, 8, 3000)):
        run(*shape)
    torch.cuda.synchronize()
    assert variants() == first
    assert os.environ.get("TRITON_INTERPRET") != "1"


# --------------------------------------------------------------------------- the ring, modelled
# The kernel's synchronization, replayed in Python under random interleavings of its three
# partitions (``_ring_model.py``): the producer and the two consumer groups. The model checks
# that every consumer reads a buffer holding the fill it expects, and that the producer
# refills a buffer only after its last reader freed it.


def _run_ring(tiles: int, k_steps: int, stages: int, turns: bool, seed: int) -> str:
    """One random interleaving of a program's partitions; "" if it kept the ring's rules,
    else the first violation."""
    ready = [Barrier() for _ in range(stages)]
    empty = [Barrier() for _ in range(stages)]
    turn = [Barrier(), Barrier()]
    filled = [-1] * stages  # which fill (the ring's position) each buffer holds
    freed = [-1] * stages  # the last fill of each buffer a consumer freed

    def producer():
        for fill in range(tiles * k_steps):
            slot = fill % stages
            yield empty[slot], ((fill // stages) & 1) ^ 1
            if fill >= stages and freed[slot] != fill - stages:
                yield f"fill {fill} overwrote buffer {slot}, whose fill {fill - stages} was unread"
            filled[slot] = fill
            ready[slot].arrive()  # the TMA unit's bytes arrived

    def consumer(group):
        for nth in range(group, tiles, 2):
            mine = nth // 2
            if turns and group == 0 and mine > 0:
                yield turn[0], (mine + 1) & 1
            if turns and group == 1:
                yield turn[1], mine & 1
            for k_step in range(k_steps):
                fill = nth * k_steps + k_step
                slot = fill % stages
                yield ready[slot], (fill // stages) & 1
                if filled[slot] != fill:
                    yield f"group {group} read buffer {slot} for fill {fill}: {filled[slot]}"
                if k_step > 0:  # the MMA before this one is done: free its buffer
                    previous = (fill - 1) % stages
                    freed[previous] = fill - 1
                    empty[previous].arrive()
            if turns:
                turn[1 - group].arrive()
            last = (nth * k_steps + k_steps - 1) % stages
            freed[last] = nth * k_steps + k_steps - 1
            empty[last].arrive()

    return interleave({"producer": producer(), "group 0": consumer(0), "group 1": consumer(1)},
                      seed)  # fmt: skip


@pytest.mark.parametrize("tiles", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("k_steps", [1, 2, 5, 16])
def test_the_ring_keeps_its_rules_with_the_turn_barrier(tiles, k_steps):
    """Under 300 random interleavings, with the kernel's ring of STAGES buffers: every read
    finds its fill, no buffer is refilled unread, nothing deadlocks."""
    for seed in range(300):
        violation = _run_ring(tiles, k_steps, pingpong.STAGES, turns=True, seed=seed)
        assert not violation, f"{tiles} tiles of {k_steps} steps, seed {seed}: {violation}"


def test_without_the_turn_barrier_a_group_reads_a_buffer_before_its_bytes_land():
    """The kernel's first version: right on the products it was first tried on (one tile a
    program, or fewer K steps a tile than the ring has buffers), wrong once a program has two
    tiles of STAGES steps or more (16384 x 1024 x 1024: about four of 16). The second group
    waits from the start for its first tile's first buffer, a fill one or more rounds of
    the ring ahead, and a barrier one phase behind already has the parity it waits for."""
    stages = pingpong.STAGES
    for tiles, k_steps in ((1, 16), (4, 1), (4, stages - 1)):
        violations = [_run_ring(tiles, k_steps, stages, turns=False, seed=seed)
                      for seed in range(200)]  # fmt: skip
        assert not any(violations), (tiles, k_steps, [v for v in violations if v][:2])
    for tiles, k_steps in ((2, stages), (4, 16)):
        found = [v for v in (_run_ring(tiles, k_steps, stages, turns=False, seed=seed)
                             for seed in range(200)) if v]  # fmt: skip
        assert found, f"no interleaving of {tiles} tiles of {k_steps} steps broke the ring"
        assert all("read buffer" in v for v in found), found[:3]
