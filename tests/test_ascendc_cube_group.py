"""Matmuls that read the same A (the q, k and v projections of one normalised x) are ONE cube
kernel: the parts run in turn in one launch (lower/cube_group.py, a TileKernel of parts printed by printer_kernel.py),
each printed as the cube kernel it would be alone; simulate, kernel(*arrays) and numpy agree."""
import numpy as np
import pytest

import fusedsl as fs


def np_gelu(y):
    return 0.5 * y * (1 + np.tanh(0.7978845608028654 * (y + 0.044715 * y ** 3)))


def _close(got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= tol * (1 + np.abs(want).max())


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_three_projections_of_one_x_are_one_printed_kernel(target):
    @fs.fused_kernel(target=target)
    def qkv(x, wq, bq, wk, bk, wv, bv):
        return fs.relu(x @ wq.T + bq), x @ wk.T + bk, fs.gelu(x @ wv.T + bv) * 2

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 24)).astype(np.float16)   # 18 rows: a tail tile
    ws = []
    for n in (40, 40, 40):
        ws += [(rng.standard_normal((n, 24)) * 0.2).astype(np.float16), rng.standard_normal(n).astype(np.float16)]
    c = qkv.compile(x, *ws)
    assert [p.kernel_kind for p in c.kernels] == ["cube_group"]
    assert "3 matmuls of the same A in one launch" in c.kernels[0].row.plan_note
    assert c.source.count("REGIST_MATMUL_OBJ(") == 1 and c.source.count("pipe.Reset()") == 2
    x64 = x.astype(np.float64)
    ys = [(x64 @ ws[2 * i].astype(np.float64).T).astype(np.float16).astype(np.float64) + ws[2 * i + 1]
          for i in range(3)]
    ys = [y.astype(np.float16).astype(np.float64) for y in ys]
    want = [np.maximum(ys[0], 0), ys[1], np_gelu(ys[2]) * 2]
    for got in (c.simulate(x, *ws), c(x, *ws)):
        for g, w in zip(got, want):
            _close(g, w, 8e-3)
    rep = c.report()
    # the model counts every part's reads and writes, as simulate measures them
    assert rep.gm_bytes_measured == rep.gm_bytes_fused


def test_dependent_products_stay_apart_and_row_epilogues_keep_their_kernel():
    """x @ w2 reading relu(x @ w1) as its B is not a part of the same launch (one product would wait
    for the other); a matmul with a softmax epilogue keeps its own kernel (whole rows per tile)."""
    def f(x, w1, w2, w3):
        h = fs.relu(x @ w1)        # [16, 16]
        return x @ h, fs.softmax(x @ w3)

    x = np.eye(16, dtype=np.float32)
    w = [np.full((16, 16), 0.1, np.float32) for _ in range(3)]
    c = fs.fused_kernel(f).compile(x, *w)
    assert sorted(p.kernel_kind for p in c.kernels) == ["cube", "cube", "cube"]
    np.testing.assert_allclose(c(x, *w)[0], np.maximum(x @ w[0], 0) * 1.0, rtol=1e-6)


def test_the_cpu_executor_runs_the_parts():
    def f(x, a, b):
        return x @ a + 1, fs.tanh(x @ b)

    rng = np.random.default_rng(4)
    x, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((33, 20), (20, 17), (20, 17)))
    c = fs.fused_kernel(f).compile(x, a, b)
    assert [p.ops for p in c.kernels] == [["matmul", "add", "matmul", "tanh"]]
    assert c.executor(c.kernels[0]) == "cube"   # sgemm per part, not the numpy reference
    got = c(x, a, b)
    np.testing.assert_allclose(got[0], x @ a + 1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.tanh(x @ b), rtol=1e-5, atol=1e-5)


def test_the_op_layout_says_it_does_not_write_several_tilings(tmp_path):
    def f(x, a, b):
        return x @ a, x @ b

    x = np.ones((16, 16), np.float16)
    c = fs.fused_kernel(f, target="ascend910b").compile(x, x, x)
    with pytest.raises(fs.FusedslError) as info:
        c.save(str(tmp_path / "op"), layout="op")   # the line the error names
    msg = str(info.value)
    assert "layout='op' does not write a kernel of several matmuls" in msg and "test_ascendc_cube_group.py:" in msg
