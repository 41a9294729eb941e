"""Does scripts/gemm_autotune_pick.py build its second autotuner over the reference's own
kernel, tilings and key, with a benchmarker of its own (the one thing that differs)?"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import gemm_autotune_pick as probe  # noqa: E402

from reference.kernels import matmul as gemm  # noqa: E402


def test_the_warm_autotuner_differs_from_the_reference_only_in_its_benchmarker():
    reference, warm = gemm._matmul_persistent_kernel, probe.warm_autotuner()
    assert warm.fn is reference.fn
    assert warm.keys == reference.keys
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in warm.configs] == [
        (c.kwargs, c.num_warps, c.num_stages) for c in reference.configs
    ]
    assert warm.do_bench is probe.warm_benchmarker
    assert reference._do_bench is None  # Triton's default: the driver's do_bench


def test_config_names_say_tile_warps_stages_and_subtiling():
    names = {probe.config_name(c) for c in gemm._persistent_configs(False)}
    assert names == {"128x256x64 w8 s3 sub", "128x256x64 w8 s3", "128x128x64 w8 s4 sub"}
