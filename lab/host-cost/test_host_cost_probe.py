"""Is host_cost_probe.py's "GIL kept" launch function the packed one minus the GIL?

The probe's verdict on the GIL (a path that releases it twice against one that keeps it
once) holds only if its variant differs from ``reference.kernels.launch``'s function in that
alone. The timings need a GPU; the variant's source and its refusals do not.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import host_cost_probe  # noqa: E402

from reference.kernels import launch  # noqa: E402


def test_the_gil_kept_variant_differs_from_the_launch_function_in_the_gil_alone(monkeypatch):
    sources = []

    def build(source, name):
        sources.append((source, name))
        return type("Module", (), {"launch": staticmethod(lambda *args: True)})

    monkeypatch.setattr("triton.runtime.build.compile_module_from_src", build)
    host_cost_probe.gil_kept_launch()
    ((source, name),) = sources
    assert "ALLOW_THREADS" in launch._C_SOURCE and "ALLOW_THREADS" not in source
    assert name == "workshop_launch_gil" and "PyInit_workshop_launch_gil" in source
    restored = source.replace("workshop_launch_gil", "workshop_launch")
    kept = launch._C_SOURCE.replace("Py_BEGIN_ALLOW_THREADS", "").replace(
        "Py_END_ALLOW_THREADS", "")  # fmt: skip
    assert restored == kept  # nothing else differs


def test_the_gil_kept_variant_compiles_and_refuses_as_the_original():
    if launch.direct_launch() is None:
        pytest.skip(f"no C compiler here: {getattr(launch.direct_launch, 'reason', '')}")
    kept = host_cost_probe.gil_kept_launch()
    with pytest.raises(TypeError, match="packed: bytes"):
        kept("not bytes", 0)
    with pytest.raises(ValueError, match="does not match its addresses"):
        kept(bytes(launch._HEADER.size), 0, 16)  # no parameters, one address
