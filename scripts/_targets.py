"""The performance targets the reference kernels are held to, in one place.

The scripts that judge them read these numbers (``external_baselines.py`` for its head-to-head
comparisons, ``score_targets.py`` for the scoreboard of the recorded reports); nothing else
should spell them. Every target is a ratio measured side by side in one run, or a share of the
streaming ceiling measured in the same run on the same card, so the same targets hold on any
GPU: none is an absolute figure of one card. Standard library and ``learning.report.sweeps``
(which names the ceiling's case) only.

* Bandwidth: at 16384 x 4096 fp16, the share of the streaming ceiling (the fastest variant of
  the ceiling's case in the same report) each streaming op's logical GB/s must reach, warm and
  cold. On the H200 these were 4100 and 3900 GB/s of a 4350 GB/s ceiling.
* Every memory-bound case of the default sweep: the reference no slower than the faster of
  PyTorch eager and torch.compile (a speed-up of at least 1.0).
* GEMM: at least 1.0x the better of ``torch.mm`` and Inductor's max-autotune at 8192^3 bf16,
  4096^3 fp16 and 16384 x 1024 x 1024 fp16.
* Training steps at 16384 x 4096 fp16: softmax and residual RMSNorm 1.5x torch.compile and
  1.15x Liger-Kernel; the GEMM step at least 0.95x PyTorch.
* Host cost: the reference softmax's wrapper no slower per call than ``torch.softmax`` at
  1024 x 1024 (a ratio of at most 1.0).
"""

from __future__ import annotations

from learning.report.sweeps import CEILING_CASE

BANDWIDTH_SHAPE = CEILING_CASE[1]
BANDWIDTH_SHARE = {"add": 0.94, "softmax": 0.94, "rmsnorm": 0.94, "sum": 0.90, "max": 0.90}
EVERY_CASE_SPEEDUP = 1.0
GEMM_SHAPES = (((8192, 8192, 8192), "bfloat16"), ((4096, 4096, 4096), "float16"),
               ((16384, 1024, 1024), "float16"))  # fmt: skip
GEMM_SPEEDUP = 1.0
TRAINING_SHAPE = (16384, 4096)
TRAINING_SPEEDUP_VS_COMPILE = {"softmax_train": 1.5, "rmsnorm_train": 1.5}
TRAINING_SPEEDUP_VS_LIGER = {"softmax_train": 1.15, "rmsnorm_train": 1.15}
MATMUL_TRAIN_SPEEDUP_VS_TORCH = 0.95
HOST_COST_SHAPE = (1024, 1024)
HOST_COST_RATIO = 1.0  # the reference wrapper's host time over torch.softmax's, at most
