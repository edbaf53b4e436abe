"""CPU fast paths (issue 21 item 7): pure reshapes return numpy views, transposes run on a native
cache-blocked kernel, 16-bit matmuls on float32 BLAS; all against numpy."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings


@pytest.mark.parametrize("shape,new", [((1024, 64), (64, 1024)), ((1, 16, 1, 8), (16, 8)), ((16, 8), (1, 16, 1, 8)),
                                       ((6,), (2, 3)), ((0, 4), (4, 0))])
def test_reshape_returns_a_view_like_numpy(shape, new):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    k = fs.fused_kernel(lambda a: fs.reshape(a, new))
    y = k(x)
    want = x.reshape(new)
    assert y.shape == want.shape and np.array_equal(y, want)
    if x.size:
        assert np.shares_memory(y, x) and y.base is not None   # a view, as numpy's reshape is
    if x.size:
        assert np.shares_memory(k(x), x)


def test_reshape_view_aliasing_rules():
    """A value returned twice is copied the second time; a reshape of a kernel result is that result."""
    x = np.ones((4, 8), np.float32)
    both = fs.fused_kernel(lambda a: (fs.reshape(a, (8, 4)), fs.reshape(a, (8, 4))))
    y1, y2 = both(x)
    assert np.shares_memory(y1, x) and not np.shares_memory(y2, x) and np.array_equal(y1, y2)
    k = fs.fused_kernel(lambda a: fs.reshape(fs.relu(a), (32,)))
    y = k(x)
    assert not np.shares_memory(y, x) and np.array_equal(y, np.ones(32, np.float32))
    out = np.empty((8, 4), np.float32)
    r = fs.fused_kernel(lambda a: fs.reshape(a, (8, 4)))(x, out=out)   # out= still gets the values
    assert r is out and np.array_equal(out, x.reshape(8, 4))
