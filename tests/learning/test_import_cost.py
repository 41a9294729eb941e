"""Does a process of the checker or of kernel-bench stay clear of the imports it never uses?

Every check starts a worker and a replay process, and every CPU kernel-bench run is a process
of its own; each pays its imports. ``torch._dynamo`` (about 1.5 s of CPU) is needed only to
compile, and copydetect (which imports matplotlib and pygments, about 0.7 s) only to compare a
learner's code with the known answers. A decorator run at import, or a dispatch mode's first
call, that pulls either in costs every such process that time again.
"""

from __future__ import annotations

import subprocess
import sys

_PROGRAM = """
import sys
import torch
import learning.bench.engine, learning.check.kernels, learning.check.runner
from learning import ops
from learning.check.replay.plumbing import PlumbingWatch
from learning.check.tracing import Dispatches

ops.exercises()  # every op's module, attention's included
with Dispatches():
    torch.ones(3) + 1
class Recorder:  # records nothing: the watch's own call is what is asked about
    def _records_steps(self):
        return False


with PlumbingWatch(Recorder()):
    torch.ones(3).copy_(torch.zeros(3))
print(" ".join(name for name in ("torch._dynamo", "copydetect") if name in sys.modules))
"""


def test_the_ops_and_the_dispatch_modes_import_neither_dynamo_nor_copydetect():
    completed = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                               timeout=300)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.split() == [], f"imported: {completed.stdout.strip()}"
