"""Does stream_ceiling.py's one-row-ahead softmax compute the softmax, whatever the
grid (fewer programs than rows, one each, rows not a multiple of the programs)? (CPU)"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import stream_ceiling  # noqa: E402

from learning.runtime import default_device  # noqa: E402


@pytest.mark.parametrize(("shape", "programs"), [((37, 781), 4), ((5, 256), 5), ((9, 300), 2)])
def test_the_softmax_one_row_ahead_matches_torch(shape, programs):
    generator = torch.Generator(device=default_device()).manual_seed(0)
    x = torch.randn(shape, generator=generator, device=default_device()).to(torch.float16)
    y = torch.full_like(x, float("nan"))
    got = stream_ceiling.softmax_ahead(x, y, programs, warps=4)()
    torch.testing.assert_close(got.float(), torch.softmax(x.float(), -1), atol=1e-3, rtol=1e-2)
