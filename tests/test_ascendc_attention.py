"""The attention op as one printed MIX kernel (lower/attention.py, lower/attention_tile.py):
simulate on the CPU Ascend C API agrees with torch's scaled_dot_product_attention and with the
LLVM executor, on 910B (float16, float32) and 310P (float16); several Q and KV blocks with tails,
GQA, causal, odd head sizes; ascend910 and masks refuse with located errors; the saved
kernel-launch project runs with run.sh -r cpu.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fusedsl as fs
from fusedsl import cost
from conftest import fuzz_settings
from fusedsl.backend_ascendc.printer_kernel import KernelPrinter

torch = pytest.importorskip("torch")
F = torch.nn.functional
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sdpa(q, k, v, causal):
    t = [torch.from_numpy(x.astype(np.float32)) for x in (q, k, v)]
    gqa = q.ndim >= 3 and q.shape[-3] != k.shape[-3]
    return F.scaled_dot_product_attention(*t, is_causal=causal, enable_gqa=gqa).numpy()


CASES = [
    # target, dtype, q shape, k/v shape, causal
    ("ascend910b", np.float16, (1, 4, 150, 64), (1, 2, 200, 64), False),   # 2 Q blocks, 2 KV blocks, GQA
    ("ascend910b", np.float32, (1, 2, 33, 80), (1, 2, 70, 80), True),      # causal with S_q != S_kv
    ("ascend310p", np.float16, (1, 2, 17, 40), (1, 1, 17, 40), True),      # 310P (C through UB), GQA, causal,
                                                                            # 80-byte rows: one instance
    # 310P with Q and P in UB: test_310p_head_128_takes_a_smaller_q_block_that_fits_ub_with_q
]


@pytest.mark.parametrize("target, dtype, qs, ks, causal", CASES)
def test_simulate_agrees_with_torch_and_llvm(target, dtype, qs, ks, causal):
    rng = np.random.default_rng(sum(qs) + sum(ks))
    q = rng.standard_normal(qs).astype(dtype)
    k, v = (rng.standard_normal(ks).astype(dtype) for _ in range(2))
    kernel = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=causal), target=target)
    compiled = kernel.compile(q, k, v)
    assert compiled.kernels[0].printable is not None and compiled.kernels[0].error is None
    assert "REGIST_MATMUL_OBJ(&pipe, AscendC::GetSysWorkSpacePtr(), op.qk, &op.tiling.qk, op.pv, &op.tiling.pv)" \
        in compiled.source
    got = compiled.simulate(q, k, v)
    want = sdpa(q, k, v, causal)
    tol = 2e-6 if dtype == np.float32 else 3e-3   # 16-bit: P and the output are rounded to float16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.astype(np.float32), compiled(q, k, v).astype(np.float32), rtol=tol, atol=tol)
    measured = compiled.report().gm_bytes_measured
    assert measured > 0
    # 910B holds the Q block in L1 (TSCM): no Q re-reads, P through the workspace (written and
    # read back once).  310P passes P (and Q, when UB has room and its rows are 32-byte multiples)
    # to the cube from UB.  The flash model counts both (cost.attention_gm_model), and the report
    # reads the same figure from the kernel's tile IR (tile/kernel_cost.kernel_gm_bytes)
    in_l1 = "AscendC::TSCM<AscendC::TPosition::GM, 1> q_l1" in compiled.source
    assert in_l1 == (target == "ascend910b")
    assert ("pv.SetTensorA(p);" in compiled.source) == (target == "ascend310p")
    q_in_ub = compiled.kernels[0].row.q_ub_bytes > 0
    assert q_in_ub == (target == "ascend310p" and qs[-1] * q.itemsize % 32 == 0)
    model = cost.attention_gm_model(compiled.kernels[0].function.ops[0], compiled.target)
    assert measured == model == compiled.report().gm_bytes_fused


def test_plan_fits_the_chip_budgets():
    for target, e in (("ascend910b", 128), ("ascend910b", 64), ("ascend310p", 128), ("ascend310p", 64)):
        spec = fs.spec((1, 8, 1024, e), "float16")
        compiled = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v), target=target).compile(spec, spec, spec)
        sched = compiled.kernels[0].row
        assert sched.bq >= 128 and sched.bk >= 32, (target, e, sched.bq, sched.bk)   # BQ first: K, V reads
        assert sum(n for _, _, n in sched.buffers()) <= compiled.target.ub_bytes
        cols = sched.c_cols or max(sched.bk, e)   # one base block per product, or (310P, D = 128) two of 64
        assert sched.c_cols == (64 if (target, e) == ("ascend310p", 128) else 0)
        assert sched.qk.base_m >= sched.bq and sched.qk.base_n >= min(sched.bk, cols) and sched.pv.base_n >= min(e, cols)
        assert sched.qk.l0c_bytes <= compiled.target.l0c_bytes and sched.qk.l1_bytes <= compiled.target.l1_bytes
        if target == "ascend910b":   # both instances' TSCM Q block and both objects' own L1 buffers fit L1
            qk_own = sched.qk.l1_bytes - sched.qk.depth_a1 * sched.qk.base_m * sched.qk.base_k * 2
            assert sched.q_l1_bytes == sched.bq * e * 2
            assert 2 * (sched.q_l1_bytes + qk_own + sched.pv.l1_bytes) <= compiled.target.l1_bytes
        else:   # 310P: P and the Q block from UB
            assert sched.p_in_ub and sched.q_l1_bytes == 0 and sched.q_ub_bytes == sched.bq * e * 2
            assert sched.ub_bytes == sum(n for _, _, n in sched.buffers()) <= compiled.target.ub_bytes
        assert isinstance(KernelPrinter(sched, compiled.target, "k").body(), str)
    # 310P shapes where C's workspace is not the way to make room for the Q block: D = 144 (its P V
    # block does not halve into 16-column multiples) takes BQ 112 instead; D = 256 splits P V only
    for e, bq, c_cols in ((144, 112, 0), (256, 64, 128)):
        spec = fs.spec((1, 2, 1024, e), "float16")
        sched = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v), target="ascend310p").compile(
            spec, spec, spec).kernels[0].row
        assert (sched.bq, sched.c_cols, sched.q_ub_bytes) == (bq, c_cols, bq * e * 2), e
        assert sched.ub_bytes == sum(n for _, _, n in sched.buffers()) <= 262144


def _line():
    return sys._getframe(1).f_lineno


def test_ascend910_refuses_at_the_users_line():
    q = np.zeros((1, 2, 8, 16), np.float16)
    line = _line() + 1
    k910 = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v), target="ascend910").compile(q, q, q)
    with pytest.raises(fs.TargetError) as exc:
        k910.source
    assert f"{__file__}:{line}" in str(exc.value) and "ascend910 has no Matmul high-level API" in str(exc.value)
    assert k910(q, q, q).shape == (1, 2, 8, 16)   # still runs on the CPU executors


def _mask_sdpa(q, k, v, m, scale=None):
    t = [torch.from_numpy(x.astype(np.float32)) for x in (q, k, v)]
    mt = torch.from_numpy(m if m.dtype == np.bool_ else m.astype(np.float32))
    return F.scaled_dot_product_attention(*t, attn_mask=mt, scale=scale,
                                          enable_gqa=q.shape[-3] != k.shape[-3]).numpy()


MASKS = [
    # target, dtype, q shape, k/v shape, mask shape, kind
    ("ascend910b", np.float16, (1, 2, 40, 32), (1, 1, 150, 32), (40, 150), "bool"),   # a fully masked row
    ("ascend910b", np.float32, (2, 2, 33, 16), (2, 2, 33, 16), (2, 1, 1, 33), "bool"),   # key padding
    ("ascend910b", np.float16, (1, 2, 40, 32), (1, 2, 150, 32), (1, 2, 40, 150), "additive"),
]


@pytest.mark.parametrize("target, dtype, qs, ks, ms, kind", MASKS)
def test_masks_print_and_agree_with_torch(target, dtype, qs, ks, ms, kind):
    rng = np.random.default_rng(sum(qs) + sum(ms))
    q = rng.standard_normal(qs).astype(dtype)
    k, v = (rng.standard_normal(ks).astype(dtype) for _ in range(2))
    if kind == "bool":
        m = rng.random(ms) > 0.3
        if len(ms) == 2:
            m[3] = False
    else:
        m = rng.standard_normal(ms).astype(dtype)
        m[..., 5] = -np.inf
    compiled = fs.fused_kernel(lambda q, k, v, m: fs.attention(q, k, v, mask=m), target=target).compile(q, k, v, m)
    want = _mask_sdpa(q, k, v, m)
    tol = 2e-6 if dtype == np.float32 else 3e-3
    got = compiled.simulate(q, k, v, m)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)
    if kind == "bool" and len(ms) == 2:
        assert not got[:, :, 3].any()   # nothing to attend to: 0, like torch


def test_a_fused_where_pattern_prints_and_a_key_broadcast_mask_refuses():
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((1, 2, 24, 32)).astype(np.float16) for _ in range(3))
    m = np.tri(24, 24, dtype=bool)
    pattern = fs.fused_kernel(lambda q, k, v, m: fs.softmax(
        fs.where(m, q @ fs.transpose(k, (0, 1, 3, 2)) * 0.25, float("-inf"))) @ v).compile(q, k, v, m)
    assert [p.ops for p in pattern.kernels] == [["attention"]]
    want = _mask_sdpa(q, k, v, m, scale=0.25)
    np.testing.assert_allclose(pattern.simulate(q, k, v, m).astype(np.float32), want, rtol=3e-3, atol=3e-3)
    keys = np.ones((24, 1), bool)
    line = _line() + 1
    bad = fs.fused_kernel(lambda q, k, v, m: fs.attention(q, k, v, mask=m)).compile(q, k, v, keys)
    with pytest.raises(fs.ScheduleError) as exc:
        bad.source
    assert f"{__file__}:{line}" in str(exc.value) and "broadcasts over the keys" in str(exc.value)


def test_saved_project_runs_with_run_sh(tmp_path):
    rng = np.random.default_rng(3)
    compiled = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=True)).compile(
        fs.spec((1, 2, 40, 32), "float16"), fs.spec((1, 1, 50, 32), "float16"), fs.spec((1, 1, 50, 32), "float16"))
    path = compiled.save(str(tmp_path / "p"))
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env.update(PYTHON=sys.executable, PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    run = subprocess.run(["bash", "run.sh", "-r", "cpu", "-v", "Ascend910B2"], cwd=path, env=env,
                         capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0 and "test pass" in log, log[-3000:]
    q = np.fromfile(os.path.join(path, "input", "input_q.bin"), np.float16).reshape(1, 2, 40, 32)
    k = np.fromfile(os.path.join(path, "input", "input_k.bin"), np.float16).reshape(1, 1, 50, 32)
    v = np.fromfile(os.path.join(path, "input", "input_v.bin"), np.float16).reshape(1, 1, 50, 32)
    got = np.fromfile(os.path.join(path, "output", "output_0.bin"), np.float16).reshape(1, 2, 40, 32)
    np.testing.assert_allclose(got.astype(np.float32), sdpa(q, k, v, True), rtol=3e-3, atol=3e-3)


@fuzz_settings(0.004)   # each example builds its kernel with g++ (~10 s)
@given(st.sampled_from([("ascend910b", np.float16), ("ascend910b", np.float32), ("ascend310p", np.float16)]),
       st.integers(1, 2), st.integers(1, 2), st.sampled_from([1, 2]), st.sampled_from([1, 17, 130]),
       st.sampled_from([1, 33, 140]), st.sampled_from([8, 40, 64, 80]), st.booleans(),
       st.sampled_from(["none", "none", "bool", "keys", "additive"]))
def test_simulate_fuzz(target_dtype, batch, kv_heads, group, lq, lk, d, causal, mask_kind):
    """simulate, kernel(*arrays), the reference and torch agree over drawn sizes: sizes 1, tails of
    both blocks, GQA, head sizes whose rows are not 32-byte multiples, causal (S_q != S_kv), bool
    masks with a fully masked row, key padding, additive masks with -inf."""
    target, dtype = target_dtype
    rng = np.random.default_rng(lq * 7 + lk + d)
    h = kv_heads * group
    q = rng.standard_normal((batch, h, lq, d)).astype(dtype)
    k, v = (rng.standard_normal((batch, kv_heads, lk, d)).astype(dtype) for _ in range(2))
    if mask_kind == "none":
        m, want = None, sdpa(q, k, v, causal)
    else:
        if mask_kind == "bool":
            m = rng.random((lq, lk)) > 0.3
            m[lq // 2] = False   # nothing to attend to: 0, like torch
        elif mask_kind == "keys":   # key padding, broadcast over heads and queries
            m = rng.random((batch, 1, 1, lk)) > 0.2
        else:
            m = (rng.standard_normal((1, h, lq, lk)) * 2).astype(dtype)
            m[..., 0] = -np.inf
        both = m if not causal else (m & np.tri(lq, lk, dtype=bool) if m.dtype == np.bool_ else
                                     np.where(np.tri(lq, lk, dtype=bool), m, -np.inf).astype(dtype))
        want = _mask_sdpa(q, k, v, both)
    args = (q, k, v) if m is None else (q, k, v, m)
    fn = (lambda q, k, v: fs.attention(q, k, v, causal=causal)) if m is None else \
        (lambda q, k, v, m: fs.attention(q, k, v, mask=m, causal=causal))
    compiled = fs.fused_kernel(fn, target=target).compile(*args)
    tol = 2e-6 if dtype == np.float32 else 3e-3
    np.testing.assert_allclose(compiled.simulate(*args).astype(np.float32), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(compiled(*args).astype(np.float32), want, rtol=tol, atol=tol)
    old = fs.config.executor
    fs.config.executor = "reference"
    try:
        np.testing.assert_allclose(compiled(*args).astype(np.float32), want, rtol=tol, atol=tol)
    finally:
        fs.config.executor = old


@pytest.mark.parametrize("target, dtype", [("ascend910b", np.float16), ("ascend310p", np.float16)])
def test_bshd_layout_prints_and_agrees(target, dtype):
    """The heads transposes folded into the kernel ([B, S, H, D] rows H * D apart: the Matmul API's
    org Ka / N); 310P with 80-byte rows interleaved between heads writes from one instance."""
    rng = np.random.default_rng(13)
    q, k, v = (rng.standard_normal((1, 20, 2, 40)).astype(dtype) for _ in range(3))

    def t(x):
        return fs.transpose(x, (0, 2, 1, 3))
    compiled = fs.fused_kernel(lambda q, k, v: t(fs.attention(t(q), t(k), t(v), causal=True)),
                               target=target).compile(q, k, v)
    assert [p.ops for p in compiled.kernels] == [["attention"]]
    tq = [torch.from_numpy(x.astype(np.float32)).transpose(1, 2) for x in (q, k, v)]
    want = F.scaled_dot_product_attention(*tq, is_causal=True).transpose(1, 2).numpy()
    np.testing.assert_allclose(compiled.simulate(q, k, v).astype(np.float32), want, rtol=3e-3, atol=3e-3)
    gqa = fs.fused_kernel(lambda q, k, v: t(fs.attention(t(q), t(k), t(v)))).compile(q, k[:, :, :1], v[:, :, :1])
    with pytest.raises(fs.ScheduleError, match="fewer KV heads does not print"):
        gqa.source


def test_310p_head_128_splits_c_so_that_the_q_block_fits_ub():
    """310P, D = 128, float16: with whole-block products the C workspace (one 128 x 128 float32 base
    block) leaves no room for the Q block in UB; base blocks of 64 columns (each GetTensorC writes its
    block at its place in the tile) halve it, so Q sits in UB: Q and O cross GM once, K and V once
    per Q block, nothing else."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 1, 144, 128)).astype(np.float16)
    k, v = (rng.standard_normal((1, 1, 136, 128)).astype(np.float16) for _ in range(2))
    compiled = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v), target="ascend310p").compile(q, k, v)
    sched = compiled.kernels[0].row
    assert (sched.bq, sched.c_cols, sched.q_ub_bytes) == (128, 64, 128 * 128 * 2)
    assert sched.qk.base_n == sched.pv.base_n == 64 and "GetTensorC<true>(sc, false, false)" in compiled.source
    got = compiled.simulate(q, k, v)
    np.testing.assert_allclose(got.astype(np.float32), sdpa(q, k, v, False), rtol=3e-3, atol=3e-3)
    np.testing.assert_allclose(got.astype(np.float32), compiled(q, k, v).astype(np.float32), rtol=3e-3, atol=3e-3)
    assert "pv.SetTensorA(p);" in compiled.source and "qk.SetTensorA(qU);" in compiled.source
    q_blocks = 2   # 144 rows in blocks of 128
    assert compiled.report().gm_bytes_measured == (2 * q.size + q_blocks * (k.size + v.size)) * 2
    assert compiled.report().gm_bytes_measured == cost.attention_gm_model(compiled.kernels[0].function.ops[0],
                                                                          compiled.target)
