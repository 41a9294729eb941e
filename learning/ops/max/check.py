"""What the kernel checker reads about ``max``: what it reads about ``sum``
(``learning.ops.sum.check``), with the wrapper ``row_max`` and the reduction ``amax``."""

from __future__ import annotations

import torch

from learning.ops.sum.check import STRIDED, reduction_mistakes, reduction_paths

__all__ = ["PATHS", "STRIDED", "mistakes"]

PATHS = reduction_paths("row_max")
mistakes = reduction_mistakes(torch.amax)
