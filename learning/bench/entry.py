"""The ``kernel-bench`` console script (and ``python -m learning.bench``): ``compare`` reads
reports, anything else is a run.

``kernel-bench compare ...`` goes to :mod:`learning.bench.compare`; every other argument list
goes unchanged to :func:`learning.bench.cli.main`, which parses a run. The comparison lives
in a module of its own, imported only here and only for ``compare``, because a report
fingerprints every ``learning/`` module its run loaded: a run must not load code it does not
use, and the run's own command line stays exactly what it was.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def _interrupted_while_starting(signum, frame) -> None:
    # Imports (torch's take seconds) can swallow a KeyboardInterrupt in a broad ``except``;
    # nothing has been written yet, so the process ends here, in one line.
    sys.stderr.write("kernel-bench: interrupted while starting; nothing written\n")
    sys.stderr.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupted_while_starting)  # until a command starts
    try:
        if arguments[:1] == ["compare"]:
            from learning.bench import compare

            return compare.main(list(arguments[1:]))
        from learning.bench import cli

        return cli.main(argv)
    except KeyboardInterrupt:  # while importing, before a command could say what it had done
        print("kernel-bench: interrupted; nothing written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
