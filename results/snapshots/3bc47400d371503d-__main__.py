"""``python -m learning.bench`` is ``kernel-bench``."""

import sys

from learning.bench.cli import main

sys.exit(main())
