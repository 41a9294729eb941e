"""Does scripts/row_sum_code.py time what it names: the row reductions as they were before
its change, each rewrite from there computing the op, the current kernels equal to the
candidate it chose, Inductor's kernel read from the recorded log; and do its sm_90 counts
show the adds that change removed? (CPU: the interpreter, and Triton's compiler for sm_90)"""

import ast
import os
import sys
from pathlib import Path

import pytest
import torch
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import row_sum_code as probe  # noqa: E402

from learning.runtime import interpreting  # noqa: E402
from reference.kernels import reductions  # noqa: E402


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    return probe.variants(tmp_path_factory.mktemp("variants"))


def _kernel_code(path: str, name: str) -> str:
    """A kernel's body without comments or layout, to compare two sources by what they do."""
    tree = ast.parse(Path(path).read_text())
    kernel = next(node for node in tree.body if getattr(node, "name", None) == name)
    return ast.dump(ast.Module(body=kernel.body, type_ignores=[]))


def test_before_is_the_old_kernel_and_the_current_one_is_the_chosen_candidate(modules):
    before = Path(modules["before"].__file__).read_text()
    kernels = before.split("def row_reduce")[0].split('"""', 2)[2]  # after the docstring
    assert "eviction_policy" not in kernels and "acc = tl.zeros((ROWS, BLOCK)" in kernels
    chosen = modules["evict_first+first chunk"]
    for name in ("_row_sum_kernel", "_row_max_kernel"):
        assert _kernel_code(chosen.__file__, name) == _kernel_code(reductions.__file__, name)
        assert _kernel_code(modules["before"].__file__, name) != _kernel_code(
            reductions.__file__, name)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
@pytest.mark.parametrize("shape", [(37, 128), (5, 300), (3, 5000)])  # stacked, one step, a walk
def test_every_variant_sums_and_maxes_as_torch(modules, shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    assert set(modules) == {"before", *probe.REWRITES}
    for label, module in modules.items():
        torch.testing.assert_close(module.row_sum(x), x.sum(dim=-1), msg=label)
        torch.testing.assert_close(module.row_max(x), x.amax(dim=-1), msg=label)


@pytest.mark.skipif(not interpreting(), reason="runs the kernel in the interpreter")
def test_inductors_kernel_is_read_from_the_recorded_log_and_sums_rows(tmp_path):
    kernel = probe.inductor_kernel(probe.INDUCTOR_LOG, tmp_path)
    x = torch.randn(4, 4096, generator=torch.Generator().manual_seed(1))  # its width is fixed
    out = torch.empty(4)
    kernel[(4,)](x, out, 4, 4096, XBLOCK=1, R0_BLOCK=2048)
    torch.testing.assert_close(out, x.sum(dim=-1))


@pytest.mark.slow  # ~20 s: 36 kernels compiled for sm_90 and read back with cuobjdump
def test_the_sm90_binaries_lose_the_adds_to_zero():
    """Compiled for the H200 here (no GPU): the current kernels add nothing to the zero register
    or -inf, the version before did, and the current binary is the chosen candidate's."""
    done = warm_python.run(
        [sys.executable, str(ROOT / "scripts/row_sum_code.py"), "--sass", "--yours",
         "--rewrites", "evict_first+first chunk"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    yours = [line for line in done.stdout.splitlines() if " yours " in line]
    assert len(yours) == len(probe.CASES)  # the exercise is still a stub here: no loads
    assert all(line.endswith("(no loads: not written yet?)") for line in yours)
    counts = {}
    for line in done.stdout.splitlines():
        if " yours " in line:
            continue
        parts = line.rsplit(maxsplit=4)
        if len(parts) == 5 and parts[1].isdigit():
            case_and_kernel = parts[0]
            counts[case_and_kernel.strip()] = tuple(map(int, parts[1:]))
    cases = [f"{op} {m}x{n} {str(dtype).removeprefix('torch.')}" for op, (m, n), dtype
             in probe.CASES]  # fmt: skip
    for case in cases:
        reference = next(v for k, v in counts.items() if k.startswith(case) and "reference" in k)
        before = next(v for k, v in counts.items() if k.startswith(case) and "before" in k)
        chosen = next(v for k, v in counts.items() if k.startswith(case) and "evict_first" in k)
        registers, _, floats, with_constant = reference
        assert reference == chosen and with_constant == 0 < before[3], case
        assert floats < before[2], case  # fewer float instructions
        assert 16 <= registers <= 255, case  # a thread's registers, read from the binary


def test_a_kernel_that_does_not_compile_gets_a_line_not_a_traceback(tmp_path):
    """A learner's half-written kernel (--yours) must not stop the listing."""
    assert [op for op, _, _ in probe.CASES[:2]] == ["sum", "max"]
    code = (
        "import sys, pathlib\n"
        f"sys.path.insert(0, {str(ROOT / 'scripts')!r})\n"
        "import row_sum_code as probe\n"
        "probe.CASES = probe.CASES[:2]  # a sum and a max: each compile costs a second\n"
        "from _variants import rewritten\n"
        "broken = rewritten(probe.reductions, [('acc += x.to(tl.float32)', "
        "'acc += not_defined', 1)], pathlib.Path(sys.argv[1]), 'broken')\n"
        "probe.print_sass({'yours': broken})\n"
    )
    done = warm_python.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                           text=True, cwd=ROOT, timeout=600,
                           env={**os.environ, "TRITON_INTERPRET": "0"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    yours = [line for line in done.stdout.splitlines() if " yours " in line]
    sums = [line for line in yours if line.startswith("sum")]
    maxes = [line for line in yours if line.startswith("max")]
    assert sums and all("does not compile" in line for line in sums), done.stdout
    assert maxes and not any("does not compile" in line for line in maxes)  # max was not broken
