"""An interpreted kernel leaves Triton able to compile the next one (interpreter_scope.py).

Triton 3.6's interpreter leaves ``triton.language.core`` patched after a kernel calls a device
function such as ``tl.cdiv``, and a Gluon kernel compiled later in the same process then fails.
The suite runs with :func:`interpreter_scope.install` (``tests/conftest.py``); these tests run
one kernel under it and under Triton's own launch, and compile a Gluon kernel for sm_90 into an
empty cache, so that Triton cannot load it from disk instead of compiling it. They need the
interpreter chosen (a CPU machine): on a GPU Triton's own device functions are compiled ones.
"""

from __future__ import annotations

# isort: off
import pytest
import torch

import interpreter_scope
from learning.runtime import interpreting

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler.errors import CompilationError
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.interpreter import GridExecutor, InterpretedFunction

# isort: on

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter is not chosen")


def _blocks(out, n, BLOCK: tl.constexpr):
    tl.store(out, tl.cdiv(n, BLOCK))  # tl.cdiv: a device function of triton.language.standard


interpreted_blocks = InterpretedFunction(_blocks)


def _ceil_division(n, block):
    return tl.cdiv(n, block)


def _blocks_then_look(out, n, BLOCK: tl.constexpr):
    tl.store(out, tl.cdiv(n, BLOCK))
    tl.core._interpreter_scope_probe(tl.core.add)  # what tl.core holds after the device call


@gluon.jit
def _blocks_gluon(out, n, BLOCK: gl.constexpr):
    gl.store(out, gl.cdiv(n, BLOCK))


def _interpret() -> int:
    out = torch.zeros(1, dtype=torch.int32)
    interpreted_blocks[(1,)](out, 1000, BLOCK=64)
    return int(out.item())


def _compile_for_hopper(cache, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))  # empty: the front end must run
    source = GluonASTSource(_blocks_gluon, {"out": "*i32", "n": "i32", "BLOCK": "constexpr"},
                            constexprs={(2,): 64})  # fmt: skip
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1})


def test_the_suite_runs_with_the_fix():
    assert interpreter_scope.installed()


def test_a_launch_leaves_triton_language_as_it_was():
    before = interpreter_scope.snapshot()
    assert _interpret() == 16
    assert interpreter_scope.changed(before) == []


def test_a_device_function_called_outside_a_launch_leaves_it_as_it_was():
    before = interpreter_scope.snapshot()
    assert InterpretedFunction(_ceil_division)(1000, 64) == 16
    assert interpreter_scope.changed(before) == []


def test_inside_a_launch_the_patches_stay_until_it_ends(monkeypatch):
    """A device call inside a launch runs as Triton runs it: what it patched stays for the
    rest of the launch (so the next call patches less), and goes when the launch ends."""
    seen = []
    monkeypatch.setattr(tl.core, "_interpreter_scope_probe", seen.append, raising=False)
    before = interpreter_scope.snapshot()
    out = torch.zeros(1, dtype=torch.int32)
    InterpretedFunction(_blocks_then_look)[(1,)](out, 1000, BLOCK=64)
    assert int(out.item()) == 16
    assert seen and seen[0] is not tl.core.add  # the interpreter's add, during the launch
    assert interpreter_scope.changed(before) == []


def test_a_gluon_kernel_compiles_after_an_interpreted_one(tmp_path, monkeypatch):
    assert _interpret() == 16
    compiled = _compile_for_hopper(tmp_path, monkeypatch)
    assert "st.global" in compiled.asm["ptx"]


def test_tritons_own_launch_leaks_and_the_next_compile_fails(tmp_path, monkeypatch):
    """What the suite saw on a fresh clone: ``gl.cdiv`` reaching the interpreter's ``add``."""
    before = interpreter_scope.snapshot()
    monkeypatch.setattr(GridExecutor, "__call__", interpreter_scope.TRITONS_LAUNCH)
    monkeypatch.setattr(InterpretedFunction, "__call__", interpreter_scope.TRITONS_DEVICE_CALL)
    try:
        assert _interpret() == 16
        leaked = interpreter_scope.changed(before)
        assert "triton.language.core.add" in leaked, (
            f"Triton {triton.__version__}'s interpreter no longer leaks ({leaked}): "
            "tests/interpreter_scope.py may go")  # fmt: skip
        with pytest.raises(CompilationError) as raised:
            _compile_for_hopper(tmp_path, monkeypatch)
        error = raised.value
        while error.__cause__ is not None:  # the kernel, then gl.cdiv, then what cdiv raised
            error = error.__cause__
        assert "block_argument' object has no attribute 'dtype'" in str(error), error
    finally:
        interpreter_scope.restore(before)
    assert interpreter_scope.changed(before) == []
