"""Cube kernel layouts (issue 21 item 6): the split, base block and layout lower/cube.py chooses
-- one or two Matmul objects per 910B AI core, each core's A panel held in L1 (TSCM) or read
from GM per tile -- print kernels that simulate exactly against numpy, and simulate's measured
GM bytes equal the model's count for the layout."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
import fusedsl.lower.cube as lower_cube
from fusedsl.reference import run_module

from conftest import fuzz_settings

# None: the layout the model chooses; a tuple: LAYOUTS restricted to it (A's panel in L1 on 910B,
# one or two objects per AI core), so small shapes print that layout too
LAYOUT_CASES = [("ascend910b", None), ("ascend310p", None), ("ascend910b", ((1, True),)),
                ("ascend910b", ((2, True),))]


def _exact(seed, *shapes):
    """Multiples of 0.5 in [-2, 2]: with K < 100 every product and sum is exact in float32."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-4, 5, s) * 0.5).astype(np.float16) for s in shapes]


@fuzz_settings(0.006)   # 3 examples at the default scale: one g++ build of the printed kernel each
@given(m=st.integers(1, 70), n=st.integers(1, 400), k=st.integers(1, 90), case=st.sampled_from(LAYOUT_CASES),
       seed=st.integers(0, 2**16))
def test_layouts_simulate_exactly_and_measure_the_modelled_gm(m, n, k, case, seed):
    target, layouts = case
    x, w, b = _exact(seed, (m, k), (k, n), (n,))
    saved = lower_cube.LAYOUTS
    if layouts is not None:
        lower_cube.LAYOUTS = layouts
    try:
        c = fs.fused_kernel(lambda x, w, b: fs.leaky_relu(x @ w + b, 0.25)).compile(x, w, b, target=target)
    finally:
        lower_cube.LAYOUTS = saved
    assert [p.kind for p in c.kernels] == ["cube"]
    t = c.kernels[0].row.tiling_fields
    if layouts is not None:   # the restricted layout was printed (or, where nothing fits it, CANN's rule)
        assert (t.objects_per_core, bool(t.a_l1_bytes)) == layouts[0]
        assert "AscendC::Nd2NzParams nd;" in c.source and "TPosition::TSCM" in c.source
    want = run_module(c.graph, [x, w, b])[0]   # numpy, rounding where the graph's float16 values do
    got = c.simulate(x, w, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0.0)
    assert diff <= 4e-3 * (1 + np.abs(want.astype(np.float64)).max(initial=0.0))
    rep = c.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused
