"""What the lab's tests share with the course's (``make lab-test`` runs them: ``pytest lab``).

The lab is not part of the course's packages, and ``pytest`` alone collects only ``tests/``
(``pyproject.toml``: ``testpaths``). Its tests import the course's shared test helpers
(``tests/warm_python.py``) and the scripts' shared helpers (``scripts/_gpu_timing.py``, ...),
and get the course's marker handling: ``gpu`` tests are skipped without a GPU, saying why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT / "scripts", ROOT / "tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

# The course's conftest, loaded under a name of its own (this file is ``conftest`` too): its
# set-up of Triton's interpreter and its collection hooks apply to the lab's tests as well.
_spec = importlib.util.spec_from_file_location("course_conftest", ROOT / "tests" / "conftest.py")
_course = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_course)

pytest_collection_modifyitems = _course.pytest_collection_modifyitems
pytest_collection_finish = _course.pytest_collection_finish
reference_report = _course.reference_report
