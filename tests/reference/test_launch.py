"""Does ``reference.kernels.launch.Launcher`` launch exactly what ``kernel[grid]`` would?

The key tests run everywhere; the direct launches themselves need a compiled kernel (GPU).
"""

import learning  # noqa: F401  (chooses the backend before triton is imported)

# isort: split
import ctypes.util
import struct
from types import SimpleNamespace

import pytest
import torch
from triton import knobs
from triton.backends.compiler import BaseBackend

from learning.check.kernel_guards import LaunchCounter
from learning.runtime import interpreting
from reference.kernels import launch
from reference.kernels import softmax as softmax_module


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


def _compiled(signature: dict, num_warps=4, shared=1024, **metadata):
    """A stand-in for Triton's CompiledKernel: what ``pack_launch`` reads of one."""
    fields = {"num_warps": num_warps, "shared": shared, "num_ctas": 1,
              "launch_cooperative_grid": False, "launch_pdl": False, **metadata}  # fmt: skip
    return SimpleNamespace(src=SimpleNamespace(signature=signature), function=0xF00D,
                           metadata=SimpleNamespace(**fields))  # fmt: skip


SOFTMAX_SIGNATURE = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32", "x_row_stride": "i32",
                     "y_row_stride": "i32", "N": "constexpr", "BLOCK": "constexpr"}  # fmt: skip


def test_a_packed_launch_lays_every_parameter_out_as_the_driver_reads_it():
    compiled = _compiled({**SOFTMAX_SIGNATURE, "big": "i64", "scale": "fp32", "flag": "i1"})
    values = (None, None, 1000, 1024, 1024, 1024, 1024, -(2**40), 0.5, True)
    packed = launch.pack_launch(compiled, (250,), values, n_tensors=2)
    header = launch._HEADER.unpack_from(packed)
    # function, grid x/y/z, 32 threads a warp, shared bytes, 8 parameters + 2 scratch, 2 addresses
    assert header == (0xF00D, 250, 1, 1, 128, 1024, 10, 2, 0)
    slots = struct.unpack_from("<10Q", packed, launch._HEADER.size)
    assert slots[:2] == (0, 0)  # the addresses, filled at each call
    assert slots[2:5] == (1000, 1024, 1024)  # the constexprs N and BLOCK are compiled in
    assert struct.pack("<Q", slots[5]) == struct.pack("<q", -(2**40))
    assert struct.pack("<Q", slots[6])[:4] == struct.pack("<f", 0.5)
    assert slots[7:] == (1, 0, 0)  # the flag; no global or profile scratch
    assert len(packed) == launch._HEADER.size + 8 * 10 + 4 * 2
    assert struct.unpack_from("<2I", packed, launch._HEADER.size + 80) == (0, 1)  # their slots


@pytest.mark.parametrize(
    "signature, values, metadata",
    [
        ({**SOFTMAX_SIGNATURE, "scale": "fp16"}, (0,) * 8, {}),  # a 16-bit float: Triton's
        (SOFTMAX_SIGNATURE, (0,) * 6, {}),  # a parameter missing
        (SOFTMAX_SIGNATURE, (0,) * 7, {"num_ctas": 2}),  # a cluster
        (SOFTMAX_SIGNATURE, (0,) * 7, {"launch_pdl": True}),
        ({"n": "i32", "x_ptr": "*fp16", "y_ptr": "*fp16"}, (0,) * 3, {}),  # pointers not first
        ({**SOFTMAX_SIGNATURE, "scale": "fp32"}, (0,) * 7 + (1e39,), {}),  # no fp32 holds it
        ({**SOFTMAX_SIGNATURE, **{f"i{k}": "i32" for k in range(60)}}, (0,) * 67, {}),  # > 64
    ],
)
def test_a_launch_it_cannot_pack_exactly_stays_with_tritons_launcher(signature, values, metadata):
    assert launch.pack_launch(_compiled(signature, **metadata), (1,), values, 2) is None


def test_the_packed_launchs_limits_are_the_c_functions():
    assert f"MAX_PARAMS = {launch._MAX_PARAMS}" in launch._C_SOURCE
    assert launch._HEADER.size == 40  # uint64 + 8 x uint32, no padding: the C Header


@pytest.fixture(scope="module")
def launch_function():
    function = launch.direct_launch()
    if function is None:
        pytest.skip(f"no C compiler here: {getattr(launch.direct_launch, 'reason', '')}")
    return function


def test_the_launch_function_refuses_a_malformed_call_before_it_reaches_the_driver(
    launch_function,
):
    packed = launch.pack_launch(_compiled(SOFTMAX_SIGNATURE), (4,), (0,) * 7, n_tensors=2)
    with pytest.raises(TypeError, match="packed: bytes"):
        launch_function("not bytes", 0, 16, 32)
    with pytest.raises(ValueError, match="does not match its addresses"):
        launch_function(packed, 0, 16)  # one address short
    with pytest.raises(ValueError, match="does not match its addresses"):
        launch_function(packed[:-1], 0, 16, 32)  # truncated
    with pytest.raises(OverflowError):
        launch_function(packed, 0, -16, 32)  # not an address
    if ctypes.util.find_library("cuda") is None:  # a machine without the driver: one line
        with pytest.raises(RuntimeError, match="cannot load the CUDA driver"):
            launch_function(packed, 0, 16, 32)


class _PackedReplay:
    """What ``run_like`` reads of a replay: its device, its packed launch and launch function,
    the launcher it counts on, and the general path it falls back to."""

    device = -1

    def __init__(self, launched=True):
        self.packed, self.launcher = b"packed", SimpleNamespace(direct_launches=0)
        self.calls, self.fallbacks, self.launched = [], [], launched

    def direct(self, *args):
        self.calls.append(args)
        return self.launched

    def __call__(self, *tensors):
        self.fallbacks.append(tensors)


def test_run_like_allocates_and_launches_the_filed_replay_in_one_step(replays, monkeypatch):
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 7, raising=False)
    x = torch.zeros((8, 16), dtype=torch.float16)
    replay = _PackedReplay()
    replays.file(replay, x)
    y = replays.run_like(torch.ones((8, 16), dtype=torch.float16))
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    ((packed, stream, x_address, y_address),) = replay.calls
    assert (packed, stream, y_address) == (b"packed", 7, y.data_ptr())
    assert replay.launcher.direct_launches == 1 and not replay.fallbacks
    assert replays.run_like(x.float()) is None and replays.run_like("x") is None
    assert replays.run_like(torch.nn.Parameter(x)) is None
    with LaunchCounter():
        assert replays.run_like(x) is None  # watched: the wrapper's own path
    assert len(replay.calls) == 1


def test_run_like_steps_aside_for_an_unaligned_address_or_a_thread_with_no_context(
    replays, monkeypatch
):
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    base = torch.zeros(8 * 16 + 1, dtype=torch.float16)
    replay = _PackedReplay()
    replays.file(replay, base[:128].view(8, 16))
    y = replays.run_like(base[1:].view(8, 16))  # same signature, 2 bytes off
    assert not replay.calls and len(replay.fallbacks) == 1 and replay.fallbacks[0][1] is y
    no_context = _PackedReplay(launched=False)  # the launch function made no launch
    replays.file(no_context, base[:128].view(8, 16))
    replays.run_like(base[:128].view(8, 16))
    assert len(no_context.calls) == 1 and len(no_context.fallbacks) == 1


@pytest.fixture(scope="module")
def stand_in_module():
    """The launch module built with the tests' stand-in driver (one context, 0x600d, and each
    launch recorded rather than made: ``last_launch()``), so the C repeat runs on a CPU."""
    from triton.runtime.build import compile_module_from_src

    if launch.direct_launch() is None:
        pytest.skip(f"no C compiler here: {getattr(launch.direct_launch, 'reason', '')}")
    source = launch._C_SOURCE.replace("workshop_launch", "workshop_launch_stand_in")
    return compile_module_from_src("#define WORKSHOP_STAND_IN_DRIVER 1\n" + source,
                                   "workshop_launch_stand_in")  # fmt: skip


@pytest.fixture
def like_replays(stand_in_module, monkeypatch):
    """A ``Replays(like=True)`` bound to the stand-in module, with a softmax-like launch of
    (8, 16) fp16 tensors filed, and the stream the C repeat asks for (device -1: 7)."""
    monkeypatch.setattr(launch, "launch_module", lambda: stand_in_module)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 7 - device,
                        raising=False)  # fmt: skip
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: -1, raising=False)
    replays = launch.Replays(like=True)
    replay = _PackedReplay()
    replay.packed = launch.pack_launch(_compiled(SOFTMAX_SIGNATURE, num_warps=2, shared=96),
                                       (3,), (None, None, 8, 16, 16, 16, 16), 2)  # fmt: skip
    replays.file(replay, torch.zeros((8, 16), dtype=torch.float16))
    return replays, stand_in_module


def test_the_c_repeat_allocates_and_hands_the_driver_the_filed_launch(like_replays):
    replays, module = like_replays
    x = torch.ones((8, 16), dtype=torch.float16)
    y = replays.repeat(x)
    assert type(y) is torch.Tensor and y.shape == x.shape and y.dtype == x.dtype
    assert y.data_ptr() != x.data_ptr() and y.is_contiguous()
    function, grid, block, shared, stream, params = module.last_launch()
    assert (function, grid, block, shared, stream) == (0xF00D, (3, 1, 1), 64, 96, 8)
    assert params == (x.data_ptr(), y.data_ptr(), 8, 16, 16, 0, 0)  # + the two scratch slots
    assert replays.repeats == 1
    assert replays.run_like(x) is not None and replays.repeats == 2  # run_like: repeat first


def test_the_c_repeat_steps_aside_wherever_the_wrappers_own_path_must_run(like_replays):
    replays, module = like_replays
    x = torch.ones((8, 16), dtype=torch.float16)
    other = torch.zeros(8 * 16 + 1, dtype=torch.float16)[1:].view(8, 16)  # 2 bytes off
    stepped_aside = [
        x.float(), x[:4], torch.ones((16, 8), dtype=torch.float16).T,  # dtype, shape, strides
        torch.nn.Parameter(x), "x", None, other,  # a subclass; not a tensor; unaligned
        x.clone().requires_grad_(),  # autograd records: the wrapper's autograd path
    ]  # fmt: skip
    for value in stepped_aside:
        assert replays.repeat(value) is None
    with torch.no_grad():  # nothing records: a tensor that requires grad is just a tensor
        assert replays.repeat(x.clone().requires_grad_()) is not None
    with LaunchCounter():
        assert replays.repeat(x) is None  # the checker counts launches through Triton's path

    def hook(metadata):
        pass

    knobs.runtime.launch_exit_hook.add(hook)
    try:
        assert replays.repeat(x) is None
    finally:
        knobs.runtime.launch_exit_hook.remove(hook)
    key = launch._signature(x)
    packed, context, device, check = replays.packed[key]
    replays.packed[key] = (packed, context + 16, device, check)  # filed in another context
    replays._state[2] = None  # the last entry found, tried first: none
    assert replays.repeat(x) is None
    replays.packed[key] = (packed, context, device, check)
    replays._state[2] = None
    assert replays.repeat(x) is not None and replays.repeats == 2


@pytest.mark.parametrize("guarded", [True, False], ids=["guard", "lookup alone"])
def test_the_c_repeat_tries_the_last_signatures_guard_first(like_replays, monkeypatch, guarded):
    replays, module = like_replays
    narrow = torch.ones((8, 16), dtype=torch.float16)
    if not guarded:  # a torch with no TensorGuards: every call looks its signature up
        monkeypatch.setattr(launch, "_guard", lambda x: None)
        replays.file(replays.entries[launch._signature(narrow)], narrow)  # filed again
    wide = torch.zeros((4, 64), dtype=torch.float16)
    replay = _PackedReplay()
    replay.packed = launch.pack_launch(_compiled(SOFTMAX_SIGNATURE), (4,),
                                       (None, None, 4, 64, 64, 64, 64), 2)  # fmt: skip
    replays.file(replay, wide)
    assert replays._state[2] is None  # filing forgets the last entry found
    for x, rows in ((narrow, 8), (narrow, 8), (wide, 4), (narrow, 8)):
        assert replays.repeat(x) is not None
        assert replays._state[2] is replays.packed[launch._signature(x)]
        assert module.last_launch()[5][2] == rows  # the launch filed for x's signature
    assert replays.repeats == 4
    check = replays.packed[launch._signature(narrow)][3]
    assert (check is not None) == guarded
    if guarded:
        assert check(narrow) and check(torch.empty((8, 16), dtype=torch.float16))
        for other in (narrow.float(), narrow[:4], narrow.T.contiguous().T, wide,
                      narrow.clone().requires_grad_()):  # fmt: skip
            assert check(other) is False


def test_the_c_repeat_raises_what_the_allocation_raises_and_refuses_a_foreign_state(
    like_replays, stand_in_module
):
    replays, _ = like_replays

    def out_of_memory(x):
        raise torch.OutOfMemoryError("CUDA out of memory (a stand-in)")

    replays._state[4] = out_of_memory  # the state's torch.empty_like
    with pytest.raises(torch.OutOfMemoryError, match="stand-in"):
        replays.repeat(torch.ones((8, 16), dtype=torch.float16))
    assert replays.repeats == 0
    with pytest.raises(TypeError, match="a list of 11"):
        stand_in_module.bind([0, {}])
    key = launch._signature(torch.ones((8, 16), dtype=torch.float16))
    replays.packed[key] = ("not packed", 0, -1, None)
    replays._state[2] = None  # looked up, not guarded: what was filed is read
    with pytest.raises(TypeError, match="not .packed, context, device, check."):
        replays.repeat(torch.ones((8, 16), dtype=torch.float16))


def test_the_c_repeat_keeps_no_reference_it_does_not_own(like_replays):
    """A thousand calls down each path (the guard, the lookup, a step aside, a raise) leave
    every object's reference count where the first call left it: the C code neither leaks
    nor frees what it does not own."""
    import sys

    replays, _ = like_replays
    x = torch.ones((8, 16), dtype=torch.float16)
    other = x.float()
    entry = replays.packed[launch._signature(x)]

    def raising(tensor):
        raise torch.OutOfMemoryError("a stand-in")

    def counts():
        return [sys.getrefcount(obj) for obj in (x, other, entry, torch.float16,
                                                 torch.float32, replays._state)]  # fmt: skip

    def down_each_path():
        assert replays.repeat(x) is not None  # the guard of the last entry found
        replays._state[2] = None
        assert replays.repeat(x) is not None  # the lookup, which files the entry as last
        assert replays.repeat(other) is None  # another signature: a step aside
        empty_like, replays._state[4] = replays._state[4], raising
        with pytest.raises(torch.OutOfMemoryError):
            replays.repeat(x)  # the allocation raises
        replays._state[4] = empty_like

    down_each_path()
    before = counts()
    for _ in range(1000):
        down_each_path()
    assert counts() == before


def test_the_c_source_compiles_clean_with_warnings_as_errors():
    """Both builds of the C source (the driver's and the tests' stand-in) under -Wall -Werror,
    with the C compiler Triton builds its own launchers with."""
    import shutil
    import subprocess
    import sysconfig

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler here")
    include = sysconfig.get_paths()["include"]
    for prefix in ("", "#define WORKSHOP_STAND_IN_DRIVER 1\n"):
        done = subprocess.run([compiler, "-fsyntax-only", "-Wall", "-Werror", f"-I{include}",
                               "-x", "c", "-"], input=prefix + launch._C_SOURCE,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]


def test_only_a_like_replays_binds_a_c_repeat(stand_in_module, monkeypatch):
    monkeypatch.setattr(launch, "launch_module", lambda: stand_in_module)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    plain, like = launch.Replays(), launch.Replays(like=True)
    replay = _PackedReplay()
    for replays in (plain, like):
        replays.file(replay, torch.zeros((8, 16), dtype=torch.float16))
        replays.file(replay, torch.zeros((8, 16)), torch.zeros((8, 16)))  # two inputs: never
    assert plain.repeat is launch._no_repeat and not plain.packed
    assert like.repeat is not launch._no_repeat and len(like.packed) == 1
    unpacked = _PackedReplay()
    unpacked.packed = None  # only Triton's C function is exact: run_like's Python path
    like.file(unpacked, torch.zeros((2, 16), dtype=torch.float16))
    assert len(like.packed) == 1


@pytest.mark.skipif(not interpreting(), reason="the interpreter's path")
def test_the_interpreter_always_takes_tritons_path():
    x = torch.randn((4, 64))
    before = softmax_module._launch_fwd.direct_launches
    for _ in range(3):
        torch.testing.assert_close(softmax_module.softmax(x), torch.softmax(x, -1))
    assert softmax_module._launch_fwd.direct_launches == before
    assert not softmax_module._fwd_replays.entries  # nothing to replay without a binary


@pytest.mark.gpu
def test_direct_launches_match_tritons_path_bit_for_bit():
    """Aligned and unaligned inputs, fp16 and fp32: the same bits as ``kernel[grid]``."""
    torch.manual_seed(0)
    launcher, replays = softmax_module._launch_fwd, softmax_module._fwd_replays
    for dtype in (torch.float16, torch.float32):
        base = torch.randn(1024 * 1024 + 8, device="cuda", dtype=dtype)
        for offset in (0, 1):  # offset 1: the rows do not start on a 16-byte boundary
            x = base[offset : offset + 1024 * 1024].view(1024, 1024)
            first = softmax_module.softmax(x)  # a new key: Triton's path, then filed
            if offset == 0:
                assert softmax_module._fwd_replays.find(x).packed is not None, (
                    f"not packed: {getattr(launch.direct_launch, 'reason', 'pack_launch')}"
                )
            before, repeats = launcher.direct_launches, replays.repeats
            again = [softmax_module.softmax(x) for _ in range(3)]
            fast = launcher.direct_launches - before + replays.repeats - repeats
            assert fast == 3, "the fast path was not taken"
            if offset == 0:  # aligned: the C repeat, whole; unaligned: the launcher's binary
                assert replays.repeats == repeats + 3, "the C repeat was not taken"
            for y in again:
                assert torch.equal(y, first)
            torch.testing.assert_close(first.float(), torch.softmax(x.float(), -1),
                                       atol=2e-3, rtol=0)  # fmt: skip


@pytest.mark.gpu
def test_the_checker_still_counts_every_launch():
    x = torch.randn((64, 256), device="cuda", dtype=torch.float16)
    softmax_module.softmax(x)
    softmax_module.softmax(x)
    with LaunchCounter() as counter:
        for _ in range(3):
            softmax_module.softmax(x)
    assert counter.kernels == ["_softmax_fwd_kernel"] * 3


@pytest.mark.gpu
def test_replays_match_tritons_path_and_step_aside_for_unaligned_inputs():
    """A repeat call replays its launch (same bits); an input of the same signature at an
    address that is not 16-byte aligned goes back through the launcher, and is right too."""
    torch.manual_seed(0)
    replays, launcher = softmax_module._fwd_replays, softmax_module._launch_fwd
    base = torch.randn(256 * 512 + 1, device="cuda", dtype=torch.float16)
    aligned, unaligned = base[: 256 * 512].view(256, 512), base[1:].view(256, 512)
    first = softmax_module.softmax(aligned)
    assert replays.find(aligned) is not None, "the first call filed no replay"
    before = replays.repeats
    assert torch.equal(softmax_module.softmax(aligned), first)
    assert torch.equal(softmax_module.softmax_fwd(aligned), first)  # it repeats in C too
    assert replays.repeats == before + 2
    before = launcher.direct_launches
    expected = torch.softmax(unaligned.float(), -1)
    for _ in range(2):  # the second time the launcher has the unaligned binary filed
        torch.testing.assert_close(softmax_module.softmax(unaligned).float(), expected,
                                   atol=2e-3, rtol=0)  # fmt: skip
    assert launcher.direct_launches > before  # the second, at least, took the launcher's


@pytest.mark.gpu
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


@pytest.mark.gpu
def test_a_thread_with_no_cuda_context_gets_the_same_result_through_tritons_launcher():
    """The packed launch function launches nothing without a current context (it answers
    False); the replay then takes Triton's C function, which makes the context current."""
    import threading

    torch.manual_seed(0)
    x = torch.randn((128, 512), device="cuda", dtype=torch.float16)
    first = softmax_module.softmax(x)
    torch.cuda.synchronize()
    results = []
    thread = threading.Thread(target=lambda: results.append(softmax_module.softmax(x)))
    thread.start()
    thread.join()
    torch.cuda.synchronize()
    assert torch.equal(results[0], first)
