import sys

from learning.grade.cli import main

sys.exit(main())
