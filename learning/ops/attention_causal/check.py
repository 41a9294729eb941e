"""What the kernel checker reads about causal attention: the same as for ``attention``
(``learning.ops.attention.check``), whose paths and mistakes read ``causal`` from the inputs."""

from learning.ops.attention.check import PATHS, STRIDED, mistakes

__all__ = ["PATHS", "STRIDED", "mistakes"]
