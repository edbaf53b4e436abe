"""One set of figures (issue 21 item 1): a kernel's blockDim, tile, loops, GM bytes and modelled
time in the text table, the plan line, the model line, the HTML display and the report's data
(fusion_report.json) come from the kernel's own tiling, and the modelled GM bytes equal what
simulate measures on the printed Ascend C, for every kernel kind (read from the kernel's tile IR
and for kernels with Matmul objects too: the Matmul API's reads counted per base tile, tile/kernel_cost.py)."""
import re

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.cost import launch_of
from fusedsl.report import launch_tiling

from test_display import Page

rng = np.random.default_rng(21)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f16(*shape):
    return rng.standard_normal(shape).astype(np.float16)


# kind -> (function, arguments, the plan kind of its kernel(s))
CASES = {
    "vector": (lambda a, b: fs.relu(fs.abs(a) + b), (f32(128), f32(192, 128))),
    "view": (lambda a, b: fs.relu(fs.concatenate([a, b], 1))[:, 8:40], (f32(256, 24), f32(256, 40))),
    "row": (lambda x, g, b: fs.layer_norm(x, g, b), (f32(1024, 256), f32(256), f32(256))),
    "row-small": (lambda x, g, b: fs.layer_norm(x, g, b), (f32(64, 256), f32(256), f32(256))),
    "column": (lambda x: fs.sum(x, axis=0), (f32(512, 96),)),
    # FS116: producers and consumers in the column kernel; var's two walks read x once (resident)
    "column-fused": (lambda x, w, s: fs.sum(x * x * s, axis=1) * w + 1.0, (f32(6, 50, 40), f32(40), f32(1))),
    "column-var": (lambda x: fs.var(x, axis=0), (f16(200, 96),)),
    "cube": (lambda x, w, b: fs.gelu(x @ w + b), (f32(128, 64), f32(64, 96), f32(96))),
    "cube-f16-rowvec": (lambda x, w, r: fs.relu(x @ w * r), (f16(100, 72), f16(72, 130), f16(100, 1))),
    # several C tiles per core (an [M, N] input and 310P's UB keep the base block small): A is
    # re-read per tile column, B per tile row, and the model counts it
    "cube-tiles": (lambda x, w, r: fs.relu(x @ w + r), (f16(512, 16), f16(16, 512), f16(512, 512))),
    "conv": (lambda x, w, b: fs.relu(fs.conv2d(x, w, padding=1) + b.reshape(1, -1, 1, 1)),
             (f32(2, 16, 17, 19), f32(32, 16, 3, 3), f32(32))),
    # what the graph-level model counted once and the kernels read more often: the figures are
    # the tile IR's (tile/kernel_cost.py) -- a broadcast input read per row of the tile, a
    # row longer than UB read once per pass, a one-element input read by every core
    "vector-midbcast": (lambda a, b: a + b, (f32(4, 1, 40), f32(4, 5, 40))),
    "row-long": (lambda x, m: fs.softmax(x + m), (f32(2, 70000), f32(1, 70000))),
    "row-scalar": (lambda x, s: fs.rms_norm(x) * s, (f32(40, 300), f32(1))),
    "strided-slice": (lambda x: x[::2, ::2], (f16(7, 9),)),
    # attention's GM bytes from its tile IR (tile/kernel_cost.kernel_gm_bytes: the Matmul API's reads
    # per base tile, P through the workspace on 910B, a causal item's keys up to its diagonal);
    # the flash model said 1679360 / 1679360 / 32000 bytes where simulate measured 2844160 /
    # 2654464 / 45464
    "attention-gqa": (lambda q, k, v: fs.attention(q, k, v), (f32(2, 4, 130, 64), f32(2, 2, 140, 64), f32(2, 2, 140, 64))),
    "attention-causal": (lambda q, k, v: fs.attention(q, k, v, causal=True),
                         (f32(2, 4, 130, 64), f32(2, 2, 140, 64), f32(2, 2, 140, 64))),
    "attention-mask": (lambda q, k, v, m: fs.attention(q, k, v, mask=m),
                       (f32(1, 2, 17, 40), f32(1, 2, 33, 40), f32(1, 2, 33, 40), f32(17, 33))),
    # an idle vector instance of a matmul launch still reads its scalar member in Init
    "cube-scalar": (lambda x, w, s: fs.relu(x @ w) * s, (f32(300, 200), f32(200, 260), f32(1))),
}


def _check(kind, target):
    fn, args = CASES[kind]
    k = fs.fused_kernel(fn).compile(*args, target=target)
    got = k.simulate(*args)
    want = fs.fused_kernel(fn)(*args)   # the CPU executor: the same results
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-2, atol=2e-2)
    rep = k.report()
    text = str(rep)
    assert len(rep.kernels) == len(k.kernels)
    for row, plan in zip(rep.kernels, k.kernels):
        launch = launch_of(launch_tiling(plan))
        assert launch is not None and row.model is not None, (kind, row.name)
        # table, model and the kernel's own launch agree
        assert row.block_dim == row.model.block_dim == launch.block_dim > 0
        assert (row.tile_rows, row.tile_cols, row.loops_per_core) == (launch.tile_rows, launch.tile_cols,
                                                                      launch.tiles_per_core)
        assert row.model_time_us == row.model.time_us and row.gm_bytes == row.model.gm_bytes
        if plan.row is not None and hasattr(plan.row, "tiling_fields"):   # cube / conv: the plan line
            assert f"on blockDim {row.block_dim}" in row.plan, row.plan
            assert not re.search(r"on \d+ cores", row.plan), row.plan
        assert f"model: {row.model_time_us:.2f} us, {row.gm_bytes} GM bytes" in text
    # one modelled time, the sum of the kernels'; the bandwidth-only estimate is gone
    assert "est. time" not in text and not hasattr(rep, "est_time_us")
    assert rep.model_time_us_fused == pytest.approx(sum(r.model_time_us for r in rep.kernels))
    assert f"fused {rep.model_time_us_fused:.2f} us in {len(rep.kernels)} kernel(s)" in text
    # the modelled GM bytes are what the printed kernels move under simulate
    assert rep.gm_bytes_fused == sum(r.gm_bytes for r in rep.kernels)
    assert rep.gm_bytes_measured == rep.gm_bytes_fused, (kind, rep.gm_bytes_measured, rep.gm_bytes_fused)
    # the HTML table and the JSON data say the same
    page = Page(rep._repr_html_())
    table = page.tables[0]
    assert page.column(table, "blockDim") == [f"{r.block_dim:,}" for r in rep.kernels]
    assert page.column(table, "tile") == [f"{r.tile_rows}x{r.tile_cols}" for r in rep.kernels]
    assert page.column(table, "GM bytes (model)") == [f"{r.gm_bytes:,}" for r in rep.kernels]
    assert page.column(table, "model time") == [f"{r.model_time_us:,.2f} us" for r in rep.kernels]
    data = rep.as_dict()
    for d, r in zip(data["kernels"], rep.kernels):
        assert (d["block_dim"], d["tile"], d["loops_per_core"], d["gm_bytes_model"]) == \
            (r.block_dim, [r.tile_rows, r.tile_cols], r.loops_per_core, r.gm_bytes)
    assert data["gm_bytes_fused"] == rep.gm_bytes_fused and data["gm_bytes_measured"] == rep.gm_bytes_measured
    return rep


@pytest.mark.parametrize("kind", [c for c in CASES if c != "row-small"])
def test_report_figures_agree_910b(kind):
    _check(kind, "ascend910b")


@pytest.mark.parametrize("kind", ["vector", "row", "cube-f16-rowvec", "cube-tiles"])
def test_report_figures_agree_310p(kind):
    rep = _check(kind, "ascend310p")
    if kind == "cube-tiles":
        assert rep.kernels[0].loops_per_core > 1


def test_issue_example_layer_norm_64_rows():
    """The issue's layer_norm [64, 256]: one core in the table, the model used four."""
    rep = _check("row-small", "ascend910b")
    assert rep.kernels[0].block_dim == rep.kernels[0].model.block_dim == 1


@pytest.mark.parametrize("kind", ["vector", "cube"])
def test_unfused_figure_is_what_every_op_as_a_kernel_moves(kind):
    """The report's unfused GM bytes (every op its own kernel, each modelled as it would print:
    a lone matmul re-reads A and B per core block too) equal simulate's measurement of the
    opt_level=0 program, whose kernels are exactly those."""
    fn, args = CASES[kind]
    rep = fs.fused_kernel(fn).compile(*args, target="ascend910b").report()
    k0 = fs.fused_kernel(fn, opt_level=0).compile(*args, target="ascend910b")
    k0.simulate(*args)
    assert len(k0.kernels) == rep.model_kernels_unfused
    assert rep.gm_bytes_unfused == k0.report().gm_bytes_measured
    assert rep.gm_bytes_fused < rep.gm_bytes_unfused
