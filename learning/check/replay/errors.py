"""The two ways a replay is refused: kernel source the checker will not run, a trace it cannot
replay. Both carry one line that names where and why."""


class KernelSourceError(ValueError):
    """A ``@triton.jit`` function uses a construct outside the allow-list.

    The message is one line: ``file:line: <construct> ...: <why it is refused>``.
    """


class ReplayError(RuntimeError):
    """A trace that cannot be replayed; the message names the launch or argument and why."""
