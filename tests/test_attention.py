"""fs.attention and fs.rope against torch's scaled_dot_product_attention and numpy.

Differential: hypothesis draws B, H, H_kv (GQA/MQA), S_q, S_kv (incl. 1), head sizes (incl. 40
and 80), mask kinds (bool / additive, broadcast), causal, dtypes; every executor (the numpy
reference and the LLVM CPU backend) must agree with torch within the stated tolerances.
"""
from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fusedsl as fs
from conftest import check_user_error, fuzz_settings

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (rtol, atol) against torch: torch's CPU kernel orders its float32 sums differently (block
# sums, exp of a shifted maximum) and rounds 16-bit P before P @ V; both sides keep float32
# softmax statistics, so the difference is a few ulps of the result dtype.
TOL = {np.dtype(np.float32): (2e-5, 5e-6), np.dtype(np.float16): (5e-3, 2e-3),
       np.dtype(ml_dtypes.bfloat16): (4e-2, 2e-2)}


def torch_sdpa(q, k, v, mask=None, scale=None, causal=False):
    def t(a):
        if a is None:
            return None
        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(a.view(np.uint16).astype(np.int32)).to(torch.int16).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(a))
    gqa = q.ndim >= 3 and q.shape[-3] != k.shape[-3]
    out = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(mask), scale=scale, is_causal=causal,
                                         enable_gqa=gqa)
    if out.dtype == torch.bfloat16:
        return out.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return out.numpy()


def check(got, want, context=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    rtol, atol = TOL[want.dtype]
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(g).any(), f"NaN in the result {context}"
    bad = np.abs(g - w) > atol + rtol * np.abs(w)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.size} differ ({context}); first at {idx}: "
                             f"got {got[idx]!r}, want {want[idx]!r}")


def run_all(fn, args):
    """The kernel on every CPU executor: [(name, result)]."""
    k = fs.fused_kernel(fn)
    out = []
    for executor in ("reference", "llvm"):
        old = fs.config.executor
        fs.config.executor = executor
        try:
            out.append((executor, k(*args)))
        finally:
            fs.config.executor = old
    return out


@st.composite
def attention_case(draw):
    dtype = draw(st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16]))
    batch = draw(st.integers(1, 2))
    hkv = draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 1, 2, 3]))
    lq = draw(st.sampled_from([1, 2, 5, 17, 33, 70]))
    lk = draw(st.sampled_from([1, 3, 16, 33, 65, 130]))
    d = draw(st.sampled_from([1, 8, 40, 64, 80, 128]))
    dv = draw(st.sampled_from([d, d, 24]))
    mask_kind = draw(st.sampled_from(["none", "none", "bool", "bool_lk", "bool_keys", "additive", "causal"]))
    scale = draw(st.sampled_from([None, None, 0.3]))
    seed = draw(st.integers(0, 2 ** 16))
    return dtype, batch, hkv, group, lq, lk, d, dv, mask_kind, scale, seed


@fuzz_settings(0.04)
@given(attention_case())
def test_attention_matches_torch_sdpa(case):
    dtype, batch, hkv, group, lq, lk, d, dv, mask_kind, scale, seed = case
    rng = np.random.default_rng(seed)
    h = hkv * group
    q = rng.standard_normal((batch, h, lq, d)).astype(dtype)
    k = rng.standard_normal((batch, hkv, lk, d)).astype(dtype)
    v = rng.standard_normal((batch, hkv, lk, dv)).astype(dtype)
    mask = None
    if mask_kind == "bool":
        mask = rng.random((batch, h, lq, lk)) > 0.3
    elif mask_kind == "bool_lk":
        mask = rng.random((lq, lk)) > 0.5
        mask[rng.integers(lq)] = False   # a fully masked row: 0, like torch
    elif mask_kind == "bool_keys":   # key padding, broadcast over heads and queries
        mask = rng.random((batch, 1, 1, lk)) > 0.2
    elif mask_kind == "additive":
        mask = (rng.standard_normal((1, h, lq, lk)) * 2).astype(dtype)
        mask[..., 0] = -np.inf
    causal = mask_kind == "causal"
    want = torch_sdpa(q, k, v, mask, scale, causal)
    args = (q, k, v) if mask is None else (q, k, v, mask)

    def fn(q, k, v):
        return fs.attention(q, k, v, scale=scale, causal=causal)

    def fn_mask(q, k, v, m):
        return fs.attention(q, k, v, mask=m, scale=scale)

    for executor, got in run_all(fn if mask is None else fn_mask, args):
        check(got, want, f"{executor} {case}")


def test_attention_rank3_and_rank2():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((3, 7, 16), (3, 9, 16), (3, 9, 8)))
    for executor, got in run_all(lambda q, k, v: fs.attention(q, k, v, causal=True), (q, k, v)):
        check(got, torch_sdpa(q, k, v, causal=True), executor)
    for executor, got in run_all(lambda q, k, v: fs.attention(q, k, v), (q[0], k[0], v[0])):
        check(got, torch_sdpa(q[0], k[0], v[0]), executor)


def test_causal_is_top_left_like_torch_when_lengths_differ():
    rng = np.random.default_rng(2)
    for lq, lk in ((3, 8), (8, 3)):
        q = rng.standard_normal((1, 2, lq, 16)).astype(np.float32)
        k = rng.standard_normal((1, 2, lk, 16)).astype(np.float32)
        v = rng.standard_normal((1, 2, lk, 16)).astype(np.float32)
        got = fs.attention(q, k, v, causal=True)   # eager, on the reference
        check(got, torch_sdpa(q, k, v, causal=True), f"{lq}x{lk}")
        # bottom-right alignment is a mask (torch's causal_lower_right)
        lower_right = np.tri(lq, lk, lk - lq, dtype=bool)
        lower_right[~lower_right.any(axis=1)] = False
        check(fs.attention(q, k, v, mask=lower_right), torch_sdpa(q, k, v, mask=lower_right), "lower right")


def test_mask_and_causal_combine():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 6, 8)).astype(np.float32) for _ in range(3))
    mask = rng.random((6, 6)) > 0.4
    got = fs.attention(q, k, v, mask=mask, causal=True)
    check(got, torch_sdpa(q, k, v, mask=mask & np.tri(6, 6, dtype=bool)))


def test_fully_masked_rows_are_zero_in_every_dtype():
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
        q, k, v = (rng.standard_normal((1, 1, 4, 8)).astype(dtype) for _ in range(3))
        mask = np.zeros((4, 4), dtype)
        mask[1] = -np.inf
        for executor, got in run_all(lambda q, k, v, m: fs.attention(q, k, v, mask=m), (q, k, v, mask)):
            assert (np.asarray(got, np.float32)[0, 0, 1] == 0).all(), executor
            check(got, torch_sdpa(q, k, v, mask), executor)


def test_attention_is_one_kernel_with_its_ir_round_trip():
    spec = fs.spec((2, 4, 33, 40), "float16")
    kv = fs.spec((2, 2, 65, 40), "float16")
    k = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=True)).compile(spec, kv, kv)
    assert [p.ops for p in k.kernels] == [["attention"]]
    assert "attention(%q, %k, %v) {causal = true, scale = 0.15811388300841897} : f16[2,4,33,40]" in k.ir
    assert str(fs.parse_ir(k.ir)) == k.ir


def _line_of(marker):
    src, start = inspect.getsourcelines(_mistakes)
    return start + next(i for i, text in enumerate(src) if f"# {marker}" in text)


def _mistakes(which, q, k, v):
    if which == "dropout":
        return fs.attention(q, k, v, dropout_p=0.1)   # dropout
    if which == "heads":
        return fs.attention(q, k[:, :2], v[:, :2])   # heads
    if which == "mask":
        return fs.attention(q, k, v, mask=q[:, :, :, :3] > 0)   # mask
    if which == "dtype":
        return fs.attention(q, k.astype(fs.float16), v)   # dtype
    return fs.rope(q[..., :5], q, q)   # rope


@pytest.mark.parametrize("which, message", [
    ("dropout", r"attention does not do dropout \(dropout_p=0.1\)"),
    ("heads", r"attention has 3 query heads and 2 key/value heads"),
    ("mask", r"attention mask \(1, 3, 4, 3\) does not broadcast to the scores \(1, 3, 4, 4\)"),
    ("dtype", r"attention q, k, v have different dtypes float32, float16, float32"),
    ("rope", r"rope needs an even, static last axis"),
])
def test_mistakes_name_the_users_line(which, message):
    q = np.zeros((1, 3, 4, 8), np.float32)
    kernel = fs.fused_kernel(lambda q, k, v: _mistakes(which, q, k, v))
    with pytest.raises(fs.FusedslError) as excinfo:
        kernel(q, q, q)
    check_user_error(excinfo, file=__file__, line=_line_of(which), message=message)


def rope_numpy(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


@fuzz_settings(0.02)
@given(st.sampled_from([np.float32, np.float16]), st.integers(1, 3), st.integers(1, 9),
       st.sampled_from([2, 8, 40, 64]), st.booleans())
def test_rope_matches_rotate_half(dtype, heads, seq, d, per_head):
    rng = np.random.default_rng(seq * 7 + d)
    x = rng.standard_normal((2, heads, seq, d)).astype(dtype)
    table = (1, heads, seq, d) if per_head else (seq, d)
    cos, sin = (rng.standard_normal(table).astype(dtype) for _ in range(2))
    want = rope_numpy(*(a.astype(np.float32) for a in (x, cos, sin)))
    for executor, got in run_all(fs.rope, (x, cos, sin)):
        assert got.dtype == dtype
        tol = 1e-5 if dtype == np.float32 else 1e-2
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol, err_msg=executor)


def test_rope_matches_torch_rotate_half():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 6, 16)).astype(np.float32)
    pos = np.arange(6, dtype=np.float32)[:, None] / (10000 ** (np.arange(0, 16, 2) / 16))[None, :]
    emb = np.concatenate([pos, pos], axis=-1).astype(np.float32)
    cos, sin = np.cos(emb), np.sin(emb)
    tx = torch.from_numpy(x)
    half = torch.cat((-tx[..., 8:], tx[..., :8]), dim=-1)
    want = (tx * torch.from_numpy(cos) + half * torch.from_numpy(sin)).numpy()
    np.testing.assert_allclose(fs.fused_kernel(fs.rope)(x, cos, sin), want, rtol=1e-6, atol=1e-6)


def test_llvm_runs_the_flash_kernel_over_several_blocks():
    """Sizes past one Q block and one KV block of the CPU's schedule (cpu_tiling.attention_schedule;
    tails on both), causal and a broadcast mask: the LLVM executor runs the attention kind's
    kernel on llvm_kernel (not the reference), and agrees with torch; so do the operand forms the
    kind does not take, adapted on the host (backend_cpu/attention_cpu.py): bfloat16 operands
    (widened to float32, the result rounded once) and a mask broadcast over the keys."""
    from fusedsl.backend_cpu.cpu_tiling import ATTENTION_CAUSAL_Q_ROWS, ATTENTION_KV_COLS, ATTENTION_Q_ROWS
    from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu
    rng = np.random.default_rng(6)
    lq, lk = max(ATTENTION_Q_ROWS, ATTENTION_CAUSAL_Q_ROWS) + 37, 2 * ATTENTION_KV_COLS + 19
    q = rng.standard_normal((1, 4, lq, 40)).astype(np.float32)
    k, v = (rng.standard_normal((1, 2, lk, 40)).astype(np.float32) for _ in range(2))
    mask = rng.random((1, 1, lq, lk)) > 0.1
    for causal in (False, True):
        kern = fs.fused_kernel(lambda q, k, v, m: fs.attention(q, k, v, mask=m, causal=causal))
        got = kern(q, k, v, mask)
        compiled = kern.compile(q, k, v, mask)
        (plan,) = compiled.kernels
        assert compiled.executor(plan) == "attention"
        assert isinstance(compiled._attention_kernel(plan), ScheduleCpu)
        check(got, torch_sdpa(q, k, v, mask & np.tri(lq, lk, dtype=bool) if causal else mask), f"causal={causal}")
    half = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=True))
    args = [x.astype(np.float16) for x in (q, k, v)]
    check(half(*args), torch_sdpa(*args, causal=True), "float16")
    # adapted on the host: bfloat16, and a mask of one column for every key
    brain = [x[:, :, :70].astype(ml_dtypes.bfloat16) for x in (q, k, v)]
    q70, keys = q[:, :, :70].copy(), rng.random((1, 1, 70, 1)) > 0.3
    for f, args, want in ((lambda q, k, v: fs.attention(q, k, v, causal=True), brain,
                           torch_sdpa(*brain, causal=True)),
                          (lambda q, k, v, m: fs.attention(q, k, v, mask=m), [q70, k, v, keys],
                           torch_sdpa(q70, k, v, np.broadcast_to(keys, (1, 1, 70, lk))))):
        kern = fs.fused_kernel(f)
        compiled = kern.compile(*args)
        assert compiled.executor(compiled.kernels[0]) == "attention"
        for _ in range(2):   # the second call repeats the bound call: the operands converted again
            check(kern(*args), want, str(args[0].dtype))
        args[0][...] = args[0][:, :, ::-1]
        want = torch_sdpa(*args[:3], causal=True) if len(args) == 3 else \
            torch_sdpa(*args[:3], np.broadcast_to(keys, (1, 1, 70, lk)))
        check(kern(*args), want, "q changed in place")
    # symbolic sizes: a kernel per call's shapes
    sym = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v)).compile(*[fs.spec((1, "H", "S", 40), "float32")] * 3)
    assert sym.executor(sym.kernels[0]) == "attention"
    for rows in (70, 33):
        args = [x[:, :2, :rows] for x in (q, k, v)]
        check(sym(*args), torch_sdpa(*args), f"symbolic, {rows} rows")


def test_report_compares_the_attention_kernel_with_its_unfused_chain():
    """Unfused, attention is q @ k^T, the scale, softmax's five ops and P @ v as kernels of their own:
    S and the softmax's intermediates cross GM; the fused kernel's figure is what its tile IR moves
    (Q, O once, K, V once per Q block, and on 910B each P block through the instance's workspace:
    written by the vector unit, read by the cube -- 71.3 MB here, of which P is 33.6 MB)."""
    q = fs.spec((1, 8, 1024, 128), "float16")
    rep = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v)).compile(q, q, q).report()
    assert rep.model_kernels_unfused == 8
    p_round_trip = 2 * 8 * 1024 * 1024 * 2
    qkvo = 4 * 8 * 1024 * 128 * 2
    assert p_round_trip + qkvo < rep.gm_bytes_fused < p_round_trip + qkvo + 8 * 8 * 1024 * 128 * 2 * 2
    assert rep.gm_bytes_unfused > 3.5 * rep.gm_bytes_fused
    # the time is the walk of the printed kernel (tile/kernel_cost.process_work): its per-row vector
    # calls per KV block (the row max, sum and O's rescale) make it vector-bound, about the unfused
    # chain's time (419.7 against 401.3 us), while it moves 3.8x fewer GM bytes
    assert rep.kernels[0].model.bound == "compute"
    assert rep.model_time_us_fused < 1.2 * rep.model_time_us_unfused
    causal = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=True)).compile(q, q, q).report()
    assert causal.model_kernels_unfused == 9 and causal.model_time_us_fused < rep.model_time_us_fused
