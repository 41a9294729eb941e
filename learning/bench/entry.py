"""The ``kernel-bench`` console script: ``compare`` reads reports, anything else is a run.

``kernel-bench compare ...`` goes to :mod:`learning.bench.compare`; every other argument list
goes unchanged to :func:`learning.bench.cli.main`, which parses a run. The comparison lives
in a module of its own, imported only here and only for ``compare``, because a report
fingerprints every ``learning/`` module its run loaded: a run must not load code it does not
use, and the run's own command line stays exactly what it was.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["compare"]:
        from learning.bench import compare

        return compare.main(list(arguments[1:]))
    from learning.bench import cli

    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
