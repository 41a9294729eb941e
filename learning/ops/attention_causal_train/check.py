"""What the kernel checker reads about the causal attention training step: the same as for
``attention_train`` (``learning.ops.attention_train.check``), whose mistakes read ``causal``
from the inputs."""

from learning.ops.attention_train.check import STRIDED, mistakes

__all__ = ["STRIDED", "mistakes"]
