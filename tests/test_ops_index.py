"""Index, scatter and sort ops (fusedsl/ops/index.py) against numpy / torch: the reference
interpreter (eager fs.<op>), the LLVM backend, and located errors for bad arguments."""
from __future__ import annotations

import numpy as np

import fusedsl as fs


def test_a_take_of_computed_indices_runs_on_the_llvm_backend():
    """The view kernel looks a gather's indices up at its first call: bound earlier, it read an
    earlier kernel's output buffer before that kernel had run (an out-of-range index error)."""
    x = np.arange(35, dtype=np.float32).reshape(35, 1)
    i = np.array([0, 3, 6, 2], np.int32)
    c = fs.fused_kernel(lambda t, k: fs.take(t, k * 2 + 1, axis=0)).compile(x, i)
    np.testing.assert_array_equal(c(x, i), x[i * 2 + 1])
    np.testing.assert_array_equal(c(x, i + 5), x[(i + 5) * 2 + 1])
