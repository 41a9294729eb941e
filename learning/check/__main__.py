"""``python -m learning.check [exercise] [--reference] [--json]``: see :mod:`learning.check.cli`."""

from learning.check.cli import main

raise SystemExit(main())
