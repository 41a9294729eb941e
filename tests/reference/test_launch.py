"""Does ``reference.kernels.launch.Launcher`` launch exactly what ``kernel[grid]`` would?

The key tests run everywhere; the direct launches themselves need a compiled kernel (GPU).
"""

import learning  # noqa: F401  (chooses the backend before triton is imported)

# isort: split
import pytest
import torch
from triton import knobs
from triton.backends.compiler import BaseBackend

from learning.check.kernel_guards import LaunchCounter
from learning.runtime import interpreting
from reference.kernels import launch
from reference.kernels import softmax as softmax_module

GPU = pytest.mark.skipif(
    interpreting() or not torch.cuda.is_available(), reason="needs a CUDA device"
)


def test_the_key_tells_apart_what_triton_compiles_apart():
    """Alignment, dtype and each integer class Triton specializes on change the key."""
    buffer = torch.zeros(64, dtype=torch.float16)
    aligned, shifted = buffer[:32], buffer[1:33]

    def key(args):
        return launch._specialization(BaseBackend, args)  # the CUDA backend inherits these

    assert key((aligned,)) == key((buffer[8:40],))  # 16 bytes further: still aligned
    assert key((aligned,)) != key((shifted,))
    assert key((aligned,)) != key((aligned.float(),))
    # 1 | i32 | i32 multiple of 16 (twice) | i64 (twice) | i64 multiple of 16 | u64
    values = (1, 2, 16, 32, 2**31 + 1, -(2**40) - 1, 2**40, 2**63)
    assert len({key((value,)) for value in values}) == 6
    assert key((2**63,)) != key((2**63 - 16,))  # u64 and i64: different binaries
    assert key((2, 3.5, True)) == key((34, 0.25, True))  # same classes: same binary
    assert key((object(),)) is None  # not a kind it can key: Triton's path every time


def test_a_launch_hook_or_a_launch_counter_turns_the_fast_path_off():
    """An empty hook chain is no hook; a registered hook, or a wrapped run, is a watcher."""
    assert not launch._watched()

    def hook(metadata):
        pass

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert launch._watched()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    with LaunchCounter():
        assert launch._watched()
    assert not launch._watched()


class _FakeReplay:
    device = -1  # a CPU tensor's get_device()


@pytest.fixture
def replays(monkeypatch):
    """A ``Replays`` whose device check sees the CPU tensors' device (-1) as current."""
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: -1, raising=False)
    return launch.Replays(limit=3)


def test_a_replay_is_found_only_for_the_signature_it_was_filed_under(replays):
    x = torch.zeros((8, 16), dtype=torch.float16)
    replay = _FakeReplay()
    replays.file(replay, x)
    assert replays.find(torch.ones((8, 16), dtype=torch.float16)) is replay  # values differ
    assert replays.find(x.float()) is None  # dtype
    assert replays.find(torch.zeros((4, 16), dtype=torch.float16)) is None  # shape
    assert replays.find(torch.zeros((16, 8), dtype=torch.float16).T) is None  # strides
    assert replays.find(torch.nn.Parameter(x)) is None  # a subclass: the checks run again
    assert replays.find("x") is None
    with LaunchCounter():
        assert replays.find(x) is None  # a watched launch always takes Triton's path


def test_replays_of_several_tensors_key_every_one(replays):
    y, dy = torch.zeros((8, 16)), torch.zeros((8, 16))
    replay = _FakeReplay()
    replays.file(replay, y, dy)
    assert replays.find(y, torch.ones((8, 16))) is replay
    assert replays.find(y, dy.half()) is None
    assert replays.find(y, torch.zeros((16, 8)).T) is None
    assert replays.find(y, [0.0]) is None


def test_replays_are_bounded_and_never_filed_for_another_device(replays):
    for rows in (1, 2, 3, 4):
        replays.file(_FakeReplay(), torch.zeros((rows, 4)))
    assert len(replays.entries) == 1  # the fourth signature started over
    other = _FakeReplay()
    other.device = 0  # launched on device 0 for a tensor that lives elsewhere
    replays.file(other, torch.zeros((5, 4)))
    assert replays.find(torch.zeros((5, 4))) is None


@pytest.mark.skipif(not interpreting(), reason="the interpreter's path")
def test_the_interpreter_always_takes_tritons_path():
    x = torch.randn((4, 64))
    before = softmax_module._launch_fwd.direct_launches
    for _ in range(3):
        torch.testing.assert_close(softmax_module.softmax(x), torch.softmax(x, -1))
    assert softmax_module._launch_fwd.direct_launches == before
    assert not softmax_module._fwd_replays.entries  # nothing to replay without a binary


@pytest.mark.gpu
@GPU
def test_direct_launches_match_tritons_path_bit_for_bit():
    """Aligned and unaligned inputs, fp16 and fp32: the same bits as ``kernel[grid]``."""
    torch.manual_seed(0)
    launcher = softmax_module._launch_fwd
    for dtype in (torch.float16, torch.float32):
        base = torch.randn(1024 * 1024 + 8, device="cuda", dtype=dtype)
        for offset in (0, 1):  # offset 1: the rows do not start on a 16-byte boundary
            x = base[offset : offset + 1024 * 1024].view(1024, 1024)
            first = softmax_module.softmax(x)  # a new key: Triton's path, then filed
            before = launcher.direct_launches
            again = [softmax_module.softmax(x) for _ in range(3)]
            assert launcher.direct_launches == before + 3, "the fast path was not taken"
            for y in again:
                assert torch.equal(y, first)
            torch.testing.assert_close(first.float(), torch.softmax(x.float(), -1),
                                       atol=2e-3, rtol=0)  # fmt: skip


@pytest.mark.gpu
@GPU
def test_the_checker_still_counts_every_launch():
    x = torch.randn((64, 256), device="cuda", dtype=torch.float16)
    softmax_module.softmax(x)
    softmax_module.softmax(x)
    with LaunchCounter() as counter:
        for _ in range(3):
            softmax_module.softmax(x)
    assert counter.kernels == ["_softmax_fwd_kernel"] * 3


@pytest.mark.gpu
@GPU
def test_replays_match_tritons_path_and_step_aside_for_unaligned_inputs():
    """A repeat call replays its launch (same bits); an input of the same signature at an
    address that is not 16-byte aligned goes back through the launcher, and is right too."""
    torch.manual_seed(0)
    replays, launcher = softmax_module._fwd_replays, softmax_module._launch_fwd
    base = torch.randn(256 * 512 + 1, device="cuda", dtype=torch.float16)
    aligned, unaligned = base[: 256 * 512].view(256, 512), base[1:].view(256, 512)
    first = softmax_module.softmax(aligned)
    assert replays.find(aligned) is not None, "the first call filed no replay"
    before = launcher.direct_launches
    assert torch.equal(softmax_module.softmax(aligned), first)
    assert launcher.direct_launches == before + 1
    expected = torch.softmax(unaligned.float(), -1)
    for _ in range(2):  # the second time the launcher has the unaligned binary filed
        torch.testing.assert_close(softmax_module.softmax(unaligned).float(), expected,
                                   atol=2e-3, rtol=0)  # fmt: skip


@pytest.mark.gpu
@GPU
def test_the_backward_replays_only_what_it_did_not_convert():
    torch.manual_seed(0)
    y = torch.softmax(torch.randn((64, 256), device="cuda"), -1)
    dy = torch.randn_like(y)
    expected = y * (dy - (y * dy).sum(-1, keepdim=True))
    replays = softmax_module._bwd_replays
    for _ in range(2):
        torch.testing.assert_close(softmax_module.softmax_bwd(y, dy), expected)
    assert replays.find(y, dy) is not None
    wide = torch.randn((256, 64), device="cuda").T  # transposed: converted, never filed
    for _ in range(2):
        torch.testing.assert_close(softmax_module.softmax_bwd(y, wide),
                                   y * (wide - (y * wide).sum(-1, keepdim=True)))  # fmt: skip
    assert replays.find(y, wide) is None
