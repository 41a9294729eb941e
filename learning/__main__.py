"""``python -m learning COMMAND``: the course's commands that have no module of their own.

``handin`` packs what you hand in (:mod:`learning.handin`). The other tools are run by their
own names: ``python -m learning.check``, ``kernel-bench``, ``python -m learning.report`` and,
for instructors, ``python -m learning.grade``.
"""

import sys

COMMANDS = {"handin": "pack exercises/, journals/ and your own reports into one archive"}
USAGE = "usage: python -m learning {" + ",".join(COMMANDS) + "} [options]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        lines = [USAGE, "", *(f"  {name:8} {what}" for name, what in COMMANDS.items())]
        print("\n".join(lines), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "handin":
        from learning.handin import main as handin

        return handin(argv[1:])
    print(f"python -m learning: error: unknown command {argv[0]!r}; choose from "
          f"{', '.join(COMMANDS)}", file=sys.stderr)  # fmt: skip
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
