"""The add kernel a learner wrote into exercises/kernels/add.py: every block masked.

Only this function is the learner's; the rest of the file is the exercise as given.
"""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_elements"])
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds, other=0.0)
    y = tl.load(y_ptr + offsets, mask=in_bounds, other=0.0)
    total = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=in_bounds)
