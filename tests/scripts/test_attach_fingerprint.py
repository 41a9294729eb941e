"""Does attach_fingerprint refuse what it cannot vouch for, writing nothing?"""

import json
import sys
from pathlib import Path

import warm_python

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "attach_fingerprint.py"


def _run(*args):
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                           text=True)  # fmt: skip


def test_bad_inputs_exit_2_with_one_line_and_leave_the_file_alone(tmp_path):
    output = tmp_path / "out.json"
    output.write_text(json.dumps({"rows": [1, 2]}))
    before = output.read_bytes()
    common = ["--script", "scripts/attach_fingerprint.py", "--recorded-at", "2026-11-29"]
    cases = [
        # a file that is not in the commit
        [output, "--commit", "HEAD", *common, "--files", "no/such/file.py"],
        # --measured without saying where the file came from
        [output, "--commit", "HEAD", *common, "--files", "learning/ops/spec.py",
         "--measured", f"learning/ops/spec.py={output}"],
        # --measured without =FILE
        [output, "--commit", "HEAD", *common, "--files", "learning/ops/spec.py",
         "--measured", "learning/ops/spec.py", "--note", "x"],
    ]  # fmt: skip
    for args in cases:
        result = _run(*args)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("attach_fingerprint: ")
        assert output.read_bytes() == before
