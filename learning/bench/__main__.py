"""``python -m learning.bench`` is ``kernel-bench``: the console script's entry, so that
``compare`` works here too and a Ctrl-C while the command starts ends in one line."""

import sys

from learning.bench.entry import main

sys.exit(main())
