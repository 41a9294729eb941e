"""A learner's three cheats for exercises/harness.py (lesson 17), written from the TODOs."""
# ruff: noqa: F821  (the exercise's own names)

import threading
import time

import torch


def reused_output(x: torch.Tensor) -> torch.Tensor:
    """The first output of each shape and dtype, handed back on every later call."""
    shape_and_dtype = (tuple(x.shape), x.dtype)
    first = _last_outputs.get(shape_and_dtype)
    if first is None:
        first = honest_softmax(x)
        _last_outputs[shape_and_dtype] = first
    return first


def pointer_cache(x: torch.Tensor) -> torch.Tensor:
    """Results remembered by where the input lives, not by what it holds."""
    where = (x.data_ptr(), tuple(x.shape), x.stride(), x.dtype)
    try:
        return _by_pointer[where]
    except KeyError:
        result = _by_pointer[where] = honest_softmax(x)
        return result


def side_work(x: torch.Tensor) -> torch.Tensor:
    """Returns at once; a thread finishes the softmax 10 ms later."""
    y = torch.empty_like(x)

    def finish() -> None:
        time.sleep(0.01)
        honest_softmax(x, y)

    worker = threading.Thread(target=finish, daemon=True)
    worker.start()
    return y
