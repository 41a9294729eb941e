"""The words an op's ``check`` module writes its ``PATHS`` with (``learning.check.op_data``):
a call of one of the op module's wrappers, and the chunked row plan that makes a wrapper walk
a row in chunks of :data:`CHUNK` columns however narrow the row is.

A chunked path runs by itself only on rows of tens of thousands of values; forced on rows of
100 to 400 columns it takes 4 to 13 steps, so a fault of the chunk loop shows on an input the
interpreter checks in a moment. No torch here: a path is plain data until the checker runs it.
"""

from __future__ import annotations

CHUNK = 32  # columns a forced chunked plan walks per step: rows of 100-400 take 4-13 steps


def primes(low: int, high: int) -> list[int]:
    """The primes from ``low`` to ``high``: row widths no power-of-two block divides."""
    candidates = range(max(low, 2), high + 1)
    return [n for n in candidates if all(n % d for d in range(2, int(n**0.5) + 1))]


def chunked_plan(rows_per_program: int = 1) -> dict:
    """A chunked row plan, asked of the op module's own ``RowPlan``."""
    return {
        "class": "RowPlan",
        "fields": {
            "block_cols": CHUNK,
            "chunked": True,
            "rows_per_program": rows_per_program,
            "num_warps": 4,
        },
    }


CHUNKED_PLANS = {"chunked": chunked_plan()}  # a path's ``plans``: one row a program, chunked


def step(function: str, args: tuple[str, ...], results: tuple[str, ...],
         plan: str | None = None, **kwargs) -> dict:  # fmt: skip
    """One call of a path: ``function(*args, plan=plans[plan], **kwargs)``, its results named
    ``results`` for the next calls (and the path's ``outputs``) to read."""
    return {"function": function, "args": list(args), "results": list(results), "plan": plan,
            "kwargs": kwargs}  # fmt: skip


def chunked(call: dict) -> dict:
    """``call`` (a :func:`step`) with the chunked plan of :data:`CHUNKED_PLANS`."""
    return {**call, "plan": "chunked"}
