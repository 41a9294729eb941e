"""The Hopper cooperative GEMM (``reference/kernels/cooperative.py``), the 16-bit GEMM's path
on a compiled Hopper GPU.

Gluon has no interpreter, so on a CPU the kernel cannot run: these tests compile it for
compute capability 9.0 with the ``ptxas`` Triton ships and check what the compiled kernel
is, check which products the matmul wrappers send to it, and replay its ring's
synchronization in Python. The ``gpu`` tests run it against the float64 oracle on a Hopper
GPU.
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
from reference.kernels import cooperative, pingpong
from reference.kernels import matmul as matmul_module

import hopper_binary
from _ring_model import Barrier, interleave

# isort: on

DEVICE = default_device()
SHARED_MEMORY_LIMIT = 227 * 1024  # bytes a block may use on the H100 and H200
ORIENTATIONS = [(False, False), (False, True), (True, False), (True, True)]
ORIENTATION_IDS = ["A-B", "A-Bt", "At-B", "At-Bt"]
COMPILED = [(torch.float16, *o) for o in ORIENTATIONS] + [(torch.bfloat16, False, False)]




@pytest.mark.parametrize(("dtype", "a_column_major", "b_column_major"), COMPILED,
                         ids=[f"float16-{o}" for o in ORIENTATION_IDS] + ["bfloat16-A-B"])
def test_the_kernel_compiles_for_hopper_without_spills(tmp_path, dtype, a_column_major,
                                                       b_column_major):  # fmt: skip
    """Three warp groups (two consumer groups and the producer's warp, rounded up), the
    partitions' register plan, wgmma, no spills, and four ring buffers with the two groups'
    C pieces inside what one block may have (the reason the C halves go out in pieces)."""
    compiled = cooperative.compile_for_hopper(dtype, a_column_major, b_column_major)
    assert compiled.metadata.num_warps == 12
    ring = cooperative.STAGES * (2 * 128 * 64 + 64 * 128) * 2
    assert ring == 192 * 1024 and cooperative.STAGES == 4
    assert ring + 2 * 128 * 64 * 2 <= compiled.metadata.shared <= SHARED_MEMORY_LIMIT
    ptx = compiled.asm["ptx"]
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+232", ptx)
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40", ptx)
    assert "wgmma.mma_async" in ptx
    hopper_binary.check_pipelined_without_spills(compiled, tmp_path)


def test_it_follows_the_ping_pong_kernels_rule(monkeypatch):
    a, b = torch.zeros(64, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16)
    monkeypatch.setattr(pingpong, "ready", lambda a, b: True)
    assert cooperative.ready(a, b)
    monkeypatch.setattr(pingpong, "ready", lambda a, b: False)
    assert not cooperative.ready(a, b)


def test_the_persistent_launcher_hands_ready_products_to_it(monkeypatch):
    """Forward, dA (B transposed) and an unsplit dB (A transposed) all go through
    ``_launch_persistent``; when ``ready`` says yes, the cooperative kernel gets the aligned
    operands as they lie, and its result is returned as it is."""
    taken = []

    def fake_matmul(a, b):
        taken.append((tuple(a.shape), a.stride(1) != 1, tuple(b.shape), b.stride(1) != 1))
        return a.float() @ b.float()

    monkeypatch.setattr(pingpong, "ready", lambda a, b: True)
    monkeypatch.setattr(cooperative, "matmul", fake_matmul)
    monkeypatch.setattr(pingpong, "matmul", lambda a, b: pytest.fail("ping-pong was called"))
    a = torch.randn(40, 64, device=DEVICE).half()
    b = torch.randn(64, 24, device=DEVICE).half()
    assert torch.equal(matmul_module._launch_persistent(a, b), a.float() @ b.float())
    matmul_module._launch_persistent(a, b.T.contiguous().T)
    matmul_module._launch_persistent(a.T.contiguous().T, b)
    assert taken == [((40, 64), False, (64, 24), False), ((40, 64), False, (64, 24), True),
                     ((40, 64), True, (64, 24), False)]  # fmt: skip


def test_the_persistent_launcher_keeps_its_own_kernel_otherwise(monkeypatch):
    monkeypatch.setattr(cooperative, "matmul", lambda a, b: pytest.fail("it was called"))
    a = torch.randn(40, 64, device=DEVICE).half()
    b = torch.randn(64, 24, device=DEVICE).half()
    if cooperative.ready(a, b):
        pytest.skip("this GPU takes the cooperative kernel")
    c = matmul_module._launch_persistent(a, b)
    assert torch.allclose(c.float(), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


def test_the_launch_key_stands_for_everything_the_descriptors_specialize_on():
    """``matmul`` keys its launches by dtype and the operands' orientation, not by Triton's
    specialization of each descriptor (which costs microseconds a call). Triton's own
    specialization agrees with the key: the same for every size under one key, different
    under different keys."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    def operand(rows: int, cols: int, dtype, transposed: bool) -> torch.Tensor:
        return torch.empty((cols, rows), dtype=dtype).T if transposed else \
            torch.empty((rows, cols), dtype=dtype)  # fmt: skip

    seen: dict[tuple, set] = {}
    for dtype in (torch.float16, torch.bfloat16):
        for a_t, b_t in ORIENTATIONS:
            for m, n, k in ((256, 128, 64), (3000, 2000, 1000), (8, 8, 8), (16384, 1024, 1024)):
                a, b = operand(m, k, dtype, a_t), operand(k, n, dtype, b_t)
                descriptors = cooperative._descriptors(a, b, torch.empty((m, n), dtype=dtype))
                specialization = tuple(
                    native_specialize_impl(BaseBackend, d, False, True, True)
                    for d in descriptors.values())  # fmt: skip
                seen.setdefault((dtype, a_t, b_t), set()).add(specialization)
    assert all(len(found) == 1 for found in seen.values()), seen
    assert len({found.pop() for found in seen.values()}) == len(seen) == 8


# --------------------------------------------------------------------------- the ring, modelled
# Both consumer groups read every buffer, in the same order; the producer refills a buffer
# once its empty barrier completes a phase, which takes both groups' arrivals (count 2).


def _run_ring(tiles: int, k_steps: int, stages: int, empty_count: int, seed: int,
              skew: int = 0) -> str:  # fmt: skip
    """One random interleaving of a program's partitions; "" if it kept the ring's rules,
    else the first violation. ``skew`` extra idle steps for group 1 at the start (a slow
    group, as an epilogue or a late warp makes one)."""
    ready = [Barrier() for _ in range(stages)]
    empty = [Barrier(empty_count) for _ in range(stages)]
    filled = [-1] * stages  # which fill each buffer holds
    reads = [dict() for _ in range(stages)]  # fill -> the groups that have read it

    def producer():
        for fill in range(tiles * k_steps):
            slot = fill % stages
            yield empty[slot], ((fill // stages) & 1) ^ 1
            unread = {0, 1} - reads[slot].get(fill - stages, set())
            if fill >= stages and unread:
                yield (f"fill {fill} overwrote buffer {slot} before group "
                       f"{min(unread)} read fill {fill - stages}")
            filled[slot] = fill
            ready[slot].arrive()

    def consumer(group):
        for _ in range(skew if group == 1 else 0):
            yield Barrier(), 1  # a wait that passes at once: one idle step
        fill = 0
        for _ in range(tiles):
            for k_step in range(k_steps):
                slot = fill % stages
                yield ready[slot], (fill // stages) & 1
                if filled[slot] != fill:
                    yield f"group {group} read buffer {slot} for fill {fill}: {filled[slot]}"
                reads[slot].setdefault(fill, set()).add(group)
                if k_step > 0:  # the MMA before this one is done: free its buffer
                    empty[(fill - 1) % stages].arrive()
                fill += 1
            empty[(fill - 1) % stages].arrive()  # the tile's last MMA is done

    return interleave({"producer": producer(), "group 0": consumer(0), "group 1": consumer(1)},
                      seed)  # fmt: skip


@pytest.mark.parametrize("tiles", [1, 2, 3, 8])
@pytest.mark.parametrize("k_steps", [1, 3, 4, 16])
def test_the_ring_keeps_its_rules(tiles, k_steps):
    """Under random interleavings, with the kernel's ring: every read finds its fill, no
    buffer is refilled before both groups read it, nothing deadlocks; with one group late
    too."""
    for seed in range(150):
        for skew in (0, 7):
            violation = _run_ring(tiles, k_steps, cooperative.STAGES, 2, seed, skew)
            assert not violation, f"{tiles} x {k_steps} steps, seed {seed}: {violation}"


def test_an_empty_barrier_of_one_arrival_lets_the_producer_overwrite_a_buffer():
    """Initialized for one arrival (the ping-pong kernel's count, where one group reads each
    buffer), the barrier frees a buffer as soon as the faster group is done with it, and the
    producer overwrites what the slower group has not read."""
    found = [v for v in (_run_ring(2, 16, cooperative.STAGES, 1, seed, skew=7)
                         for seed in range(100)) if v]  # fmt: skip
    assert found, "no interleaving broke the ring with a one-arrival empty barrier"
    assert any("overwrote" in v or "read buffer" in v for v in found), found[:3]


# --------------------------------------------------------------------------- on a Hopper GPU


def _seed(*parts: object) -> int:
    return 80_000 + zlib.crc32("/".join(map(str, parts)).encode()) % 10_000


@pytest.mark.gpu(capability=(9, 0))
@pytest.mark.parametrize("shape", [(256, 128, 64), (3000, 2000, 1000), (16384, 1024, 1024),
                                   (1, 8, 8), (136, 264, 8), (4096, 4096, 4096), (2000, 2056, 64)],
                         ids=lambda s: "x".join(map(str, s)))  # fmt: skip
@pytest.mark.parametrize(("a_t", "b_t"), ORIENTATIONS, ids=ORIENTATION_IDS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=ops.dtype_name)
def test_matches_the_oracle(shape, a_t, b_t, dtype):
    """Edges in every dimension (3000 x 2000 x 1000: no size a multiple of 128; 136 x 264:
    a second half of 8 rows, a last piece of 8 columns), a single row, one step of K, several
    tiles a program (2000 x 2056 x 64: 136 tiles of one step, so a program's kept piece goes
    out under a first step that is also its tile's last), both orientations of each operand."""
    spec = ops.get("matmul")
    inputs = spec.inputs(shape, dtype, _seed(shape, a_t, b_t, dtype), device="cuda")
    a, b = inputs.values()
    a = a.T.contiguous().T if a_t else a
    b = b.T.contiguous().T if b_t else b
    assert cooperative.ready(a, b)
    verdicts = correctness.compare_all(
        (cooperative.matmul(a, b),), spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
        labels=correctness.output_labels(spec),
    )  # fmt: skip
    assert all(v.passed for v in verdicts), [v.reason for v in verdicts]


@pytest.mark.gpu(capability=(9, 0))
def test_no_size_compiles_again():
    """The sizes are read from the descriptors at run time: after the first product, other
    M, N and K compile nothing."""
    kernel = cooperative._matmul_cooperative_kernel
    variants = lambda: sum(len(c[0]) for c in kernel.device_caches.values())  # noqa: E731
    run = lambda m, n, k: cooperative.matmul(  # noqa: E731
        torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half())
    run(256, 256, 256)
    torch.cuda.synchronize()
    first = variants()
    for shape in ((1000, 512, 64), (17, 4096, 1024), (4096, 8, 3000)):
        run(*shape)
    torch.cuda.synchronize()
    assert variants() == first
    assert os.environ.get("TRITON_INTERPRET") != "1"
