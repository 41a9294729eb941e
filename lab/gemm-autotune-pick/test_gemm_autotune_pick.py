"""Does gemm_autotune_pick.py build its second autotuner over the reference's own
kernel, tilings and key, with Triton's default benchmarker (the one thing that differs)?"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import gemm_autotune_pick as probe  # noqa: E402

from reference.kernels import matmul as gemm  # noqa: E402


def test_the_default_autotuner_differs_from_the_reference_only_in_its_benchmarker():
    reference, default = gemm._matmul_persistent_kernel, probe.default_autotuner()
    assert default.fn is reference.fn
    assert default.keys == reference.keys
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in default.configs] == [
        (c.kwargs, c.num_warps, c.num_stages) for c in reference.configs
    ]
    assert default._do_bench is None  # Triton's default: the driver's do_bench
    assert reference._do_bench is gemm._warm_benchmark


def test_config_names_say_tile_warps_stages_and_subtiling():
    names = {probe.config_name(c) for c in gemm._persistent_configs(False)}
    assert names == {"128x256x64 w8 s3 sub", "128x256x64 w8 s3", "128x128x64 w8 s4 sub"}
